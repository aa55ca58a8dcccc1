// What a function given to async_at and at (and the collectives) must be, and what it gives back:
// it captures nothing, since it is named by its type at the other place (a function pointer is
// sent as call_by_pointer, see function_handle.hpp); its arguments are serialized; its value (or
// its task's value) is what the caller gets.
#pragma once

#include "apgas/detail/serialization_traits.hpp"
#include "apgas/task.hpp"

#include <type_traits>

namespace apgas::detail {

template <class F>
constexpr void require_stateless() {
  static_assert(!std::is_member_function_pointer_v<F>,
                "apgas: a pointer to a non-static member function cannot be sent to another "
                "place: it needs an object there. Send a free or static member function, or a "
                "lambda with [], and pass the data it needs as arguments.");
  static_assert(std::is_member_function_pointer_v<F> ||
                    (std::is_empty_v<F> && std::is_default_constructible_v<F>),
                "apgas: the function given to async_at/at must capture nothing: a lambda with "
                "[], an empty function object, or a pointer to a free or static member "
                "function (the same binary runs at every place, so its type or its address "
                "names it there). Pass the data it needs as arguments; they are serialized.");
}

/// @brief For the few that take only a function object (glb::run's Make, place_local::make's
/// Init): named by its type alone.
template <class F>
constexpr void require_function_object() {
  static_assert(std::is_empty_v<F> && std::is_default_constructible_v<F>,
                "apgas: this function must capture nothing and be a function object (a lambda "
                "with [] or an empty function object): it is named by its type at the other "
                "place. A function pointer is taken by async_at, at and the collectives, not "
                "here: wrap it in a lambda with [].");
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
