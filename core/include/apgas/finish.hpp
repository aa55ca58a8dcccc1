/// @file async and finish: starting activities and waiting for all of them.
///
///     co_await apgas::finish([&]() -> apgas::task<> {
///       co_await apgas::async(fib(n - 1), a);  // a = fib(n-1), in parallel
///       b = co_await fib(n - 2);                // in sequence
///     });                                      // both done here; a + b is ready
///
/// finish is a scope: its body is a coroutine, and the code after `co_await finish(...)` runs
/// exactly once, after every activity started inside it (transitively, including asyncs that
/// outlive their parent) has ended. The waiting activity suspends; its worker keeps working.
#pragma once

#include "apgas/task.hpp"

#include <concepts>
#include <type_traits>

namespace apgas {

namespace detail {
template <class Body>
class finish_awaiter;
template <class T>
struct async_awaiter;
template <class... T>
class finish_all_awaiter;
} // namespace detail

/// @brief A finish scope with the run's default policy: runs `body` and every activity it
/// starts, and resumes the caller once all of them have ended. `body` is a task<>, a callable
/// returning task<>, or a plain callable.
template <class Body>
APGAS_AWAIT_IT detail::finish_awaiter<std::decay_t<Body>> finish(Body&& body);

/// @brief A finish scope whose asyncs use policy `p`.
template <class Body>
APGAS_AWAIT_IT detail::finish_awaiter<std::decay_t<Body>> finish(policy p, Body&& body);

/// @brief A finish whose activities follow `pattern` (see finish_pattern), for example
/// `co_await apgas::finish(apgas::finish_pattern::spmd, body)`: one activity per place.
template <class Body>
APGAS_AWAIT_IT detail::finish_awaiter<std::decay_t<Body>> finish(finish_pattern pattern,
                                                                 Body&& body);

/// @brief Starts `t` as a new activity governed by the caller's finish.
/// Under work-first the child runs at once and the caller's continuation becomes stealable;
/// under help-first the child becomes stealable and the caller goes on.
template <class T>
APGAS_AWAIT_IT detail::async_awaiter<T> async(task<T>&& t);

/// @brief Like async(t), and stores the task's result in `out` when it ends. `out` must stay
/// alive until the enclosing finish ends (X10's async-initialised value).
template <class T, class U>
requires std::same_as<T, U> APGAS_AWAIT_IT detail::async_awaiter<T> async(task<T>&& t, U& out);

/// @brief Starts a callable as an activity: either a coroutine returning a task (for example a
/// lambda `[=]() -> task<> {...}`) or a plain function that does not suspend. The callable is
/// moved into the activity, so its captures live as long as it runs.
template <class F>
requires(!detail::is_task_v<F> &&
         std::invocable<std::decay_t<F>&>) APGAS_AWAIT_IT detail::async_awaiter<void> async(F&& f);

/// @brief `finish { async t1; ...; async tn; }` with the tasks' results: the tasks run as
/// activities of a new finish (one is run at once by this worker, the others are stealable)
/// and their values come back as a tuple (std::monostate for task<void>).
///
///     auto [a, b] = co_await apgas::finish_all(fib(n - 1), fib(n - 2));
///
/// Cheaper than a finish with a body when the activities are known up front: no body frame.
template <class... T>
requires(sizeof...(T) >=
         1) APGAS_AWAIT_IT detail::finish_all_awaiter<T...> finish_all(task<T>... tasks);

} // namespace apgas

#include "apgas/detail/finish_awaiters.hpp"
