// A list that keeps its first N elements inline: the few reports, releases and waiters a clock
// operation produces cost no allocation in the common case, and an empty one costs nothing to
// make (its inline elements are constructed only when pushed: a clock operation makes one per
// call, mostly left empty).
#pragma once

#include <cstddef>
#include <memory>
#include <new>
#include <utility>
#include <vector>

namespace apgas::detail {

/// @brief Append-only list with N elements inline.
template <class T, std::size_t N>
class small_list {
public:
  small_list() noexcept {}
  small_list(const small_list&) = delete;
  small_list& operator=(const small_list&) = delete;
  ~small_list() {
    for (std::size_t i = 0; i < m_inline_count; ++i) std::destroy_at(slot(i));
  }
  void push_back(T v) {
    if (m_inline_count < N) ::new (static_cast<void*>(slot(m_inline_count++))) T(std::move(v));
    else m_more.push_back(std::move(v));
  }
  bool empty() const noexcept { return m_inline_count == 0; }
  template <class F>
  void for_each(F&& f) {
    for (std::size_t i = 0; i < m_inline_count; ++i) f(*slot(i));
    for (T& v : m_more) f(v);
  }

private:
  T* slot(std::size_t i) noexcept {
    return std::launder(reinterpret_cast<T*>(m_storage + i * sizeof(T)));
  }
  alignas(T) unsigned char m_storage[N * sizeof(T)];
  std::size_t m_inline_count = 0;
  std::vector<T> m_more;
};

} // namespace apgas::detail
