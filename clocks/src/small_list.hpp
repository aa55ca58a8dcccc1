// A list that keeps its first N elements inline: the few reports, releases and waiters a clock
// operation produces cost no allocation in the common case.
#pragma once

#include <array>
#include <cstddef>
#include <utility>
#include <vector>

namespace apgas::detail {

/// @brief Append-only list with N elements inline. T must be default-constructible.
template <class T, std::size_t N>
class small_list {
public:
  void push_back(T v) {
    if (m_inline_count < N) m_inline[m_inline_count++] = std::move(v);
    else m_more.push_back(std::move(v));
  }
  bool empty() const noexcept { return m_inline_count == 0; }
  template <class F>
  void for_each(F&& f) {
    for (std::size_t i = 0; i < m_inline_count; ++i) f(m_inline[i]);
    for (T& v : m_more) f(v);
  }

private:
  std::array<T, N> m_inline{};
  std::size_t m_inline_count = 0;
  std::vector<T> m_more;
};

} // namespace apgas::detail
