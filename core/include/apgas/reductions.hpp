/// @file The operations of reductions: apgas::sum, apgas::min and apgas::max, for a clock's
/// phases (`co_await c.advance(apgas::sum, x)`) and a team's collectives
/// (`co_await team.allreduce(x, apgas::max)`). Any stateless associative function object of two
/// values works the same way.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstring>

namespace apgas {

/// @brief Sum of the contributions (operator+).
inline constexpr struct sum_op {
  template <class T>
  T operator()(const T& a, const T& b) const {
    return a + b;
  }
} sum{};

/// @brief Smallest contribution (operator<).
inline constexpr struct min_op {
  template <class T>
  T operator()(const T& a, const T& b) const {
    return std::min(a, b);
  }
} min{};

/// @brief Largest contribution (operator<).
inline constexpr struct max_op {
  template <class T>
  T operator()(const T& a, const T& b) const {
    return std::max(a, b);
  }
} max{};

namespace detail {

/// @brief Folds `value` into `acc` (both of the reduction's type, unaligned bytes).
using combine_fn = void (*)(std::byte* acc, const std::byte* value);

/// @brief `acc = Op{}(acc, value)` on the bytes of two T.
template <class T, class Op>
void combine_bytes(std::byte* acc, const std::byte* value) {
  T a;
  T v;
  std::memcpy(&a, acc, sizeof(T));
  std::memcpy(&v, value, sizeof(T));
  a = Op{}(a, v);
  std::memcpy(acc, &a, sizeof(T));
}

} // namespace detail
} // namespace apgas
