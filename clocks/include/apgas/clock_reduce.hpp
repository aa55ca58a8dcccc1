/// @file Reductions carried by a clock's phases: `co_await c.advance(apgas::sum, x)` returns the
/// sum of every contribution of the phase, at every place, with no message of its own (the
/// contributions ride on the phase's own signalling). The operations are apgas::sum,
/// apgas::min and apgas::max (<apgas/reductions.hpp>) or any stateless associative function
/// object.
#pragma once

#include "apgas/detail/serialization_traits.hpp"
#include "apgas/reductions.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

namespace apgas {

namespace detail {

/// @brief The largest value a clock reduction carries.
inline constexpr std::size_t k_max_reduce_bytes = 64;

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
