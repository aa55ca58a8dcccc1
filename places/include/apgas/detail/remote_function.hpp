// What a function given to async_at and at (and the collectives) must be, and what it gives back:
// it captures nothing, since it is named by its type at the other place; its arguments are
// serialized; its value (or its task's value) is what the caller gets.
#pragma once

#include "apgas/detail/serialization_traits.hpp"
#include "apgas/task.hpp"

#include <type_traits>

namespace apgas::detail {

template <class F>
constexpr void require_stateless() {
  static_assert(std::is_empty_v<F> && std::is_default_constructible_v<F>,
                "apgas: the function given to async_at/at must capture nothing (a lambda with [] "
                "or an empty function object): it is named by its type at the other place. Pass "
                "the data it needs as arguments; they are serialized.");
}

template <class... Args>
constexpr void require_serializable_args() {
  // One precise message per argument that cannot cross places (see serialization.hpp).
  (diagnose<std::decay_t<Args>>(), ...);
}

/// @brief What f(args...) gives back once awaited: R for R or task<R>.
template <class F, class... Args>
struct remote_result {
  using raw = std::invoke_result_t<F&, Args&...>;
  template <class X>
  struct unwrap {
    using type = X;
  };
  template <class X>
  struct unwrap<task<X>> {
    using type = X;
  };
  using type = typename unwrap<raw>::type;
};

/// @brief True if f(args...) is a coroutine (returns a task): it then needs a frame where it
/// runs; a plain function runs without one.
template <class F, class... Args>
inline constexpr bool is_remote_coroutine_v = is_task_v<typename remote_result<F, Args...>::raw>;

} // namespace apgas::detail
