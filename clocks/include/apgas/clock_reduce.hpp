/// @file Reductions carried by a clock's phases: `co_await c.advance(apgas::sum, x)` returns the
/// sum of every contribution of the phase, at every place, with no message of its own (the
/// contributions ride on the phase's own signalling). apgas::sum, apgas::min and apgas::max
/// are provided; any stateless associative function object works the same way.
#pragma once

#include "apgas/detail/serialization_traits.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

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

/// @brief The largest value a clock reduction carries.
inline constexpr std::size_t k_max_reduce_bytes = 64;

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

/// @brief One activity's contribution to a phase's reduction, type-erased: the combine
/// function names the operation and the type (the same code at every place).
struct reduce_contribution {
  const void* value;
  std::uint32_t size;
  combine_fn combine;
};

template <class T, class Op>
constexpr void require_reducible() {
  static_assert(std::is_empty_v<Op> && std::is_default_constructible_v<Op>,
                "apgas: a clock reduction's operation must be a stateless function object "
                "(apgas::sum, apgas::min, apgas::max, or a lambda with [])");
  static_assert(is_bitwise_v<T>, "apgas: a clock reduction's value must be a bitwise type "
                                 "(numbers, plain structs of numbers): it crosses places");
  static_assert(sizeof(T) <= k_max_reduce_bytes,
                "apgas: a clock reduction's value is at most 64 bytes");
  static_assert(std::is_invocable_r_v<T, const Op&, const T&, const T&>,
                "apgas: a clock reduction's operation must take two T and return a T");
}

} // namespace detail
} // namespace apgas
