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
#include <utility>

namespace apgas {

namespace detail {

/// @brief co_await async(...): spawns a prepared child frame.
template <class T>
struct async_awaiter {
  std::coroutine_handle<promise<T>> m_child;
  bool await_ready() const noexcept { return false; }
  template <class P>
  std::coroutine_handle<> await_suspend(std::coroutine_handle<P> parent) {
    require_apgas_caller<P>();
    return spawn(parent.promise(), m_child.promise());
  }
  void await_resume() const noexcept {}
};

template <class F>
task<> run_owned(F f) { // keeps the callable alive for as long as the activity runs
  if constexpr (is_task_v<std::invoke_result_t<F&>>) co_await f();
  else {
    f();
    co_return;
  }
}

template <class F>
task<> make_body(F&& f) {
  if constexpr (is_task_v<F>) return std::forward<F>(f);
  else return run_owned(std::forward<F>(f));
}

/// @brief co_await finish(...): runs the body as the first strand of a new finish.
template <class Body>
class finish_awaiter {
public:
  finish_awaiter(policy p, Body body) : m_state(p), m_body(std::move(body)) {}
  bool await_ready() const noexcept { return false; }
  template <class P>
  std::coroutine_handle<> await_suspend(std::coroutine_handle<P> waiter) {
    require_apgas_caller<P>();
    m_state.m_waiter = waiter;
    auto h = start_body();
    promise_base& b = h.promise();
    b.m_finish = &m_state;
    b.m_role = promise_base::role::strand;
    b.m_parent = nullptr;
    return t_worker->transfer(h);
  }
  void await_resume() { m_state.rethrow_if_failed(); }

private:
  auto start_body() {
    if constexpr (is_task_v<Body>) return m_body.release();
    else if constexpr (is_task_v<std::invoke_result_t<Body&>>) {
      // The callable lives in this awaiter, itself in the waiting frame, until the finish ends.
      m_task = m_body();
      return m_task.release();
    } else {
      m_task = run_owned(std::move(m_body));
      return m_task.release();
    }
  }
  finish_state m_state;
  Body m_body;
  task<> m_task;
};

} // namespace detail

/// @brief Starts `t` as a new activity governed by the caller's finish.
/// Under work-first the child runs at once and the caller's continuation becomes stealable;
/// under help-first the child becomes stealable and the caller goes on.
template <class T>
[[nodiscard]] detail::async_awaiter<T> async(task<T>&& t) {
  return {t.release()};
}

/// @brief Like async(t), and stores the task's result in `out` when it ends. `out` must stay
/// alive until the enclosing finish ends (X10's async-initialised value).
template <class T, class U>
  requires std::same_as<T, U>
[[nodiscard]] detail::async_awaiter<T> async(task<T>&& t, U& out) {
  auto h = t.release();
  h.promise().m_out = &out;
  return {h};
}

/// @brief Starts a callable as an activity: either a coroutine returning a task (for example a
/// lambda `[=]() -> task<> {...}`) or a plain function that does not suspend. The callable is
/// moved into the activity, so its captures live as long as it runs.
template <class F>
  requires(!detail::is_task_v<F> && std::invocable<std::decay_t<F>&>)
[[nodiscard]] detail::async_awaiter<void> async(F&& f) {
  return {detail::run_owned(std::decay_t<F>(std::forward<F>(f))).release()};
}

/// @brief A finish scope with the run's default policy. `body` is a task<>, a callable
/// returning task<>, or a plain callable.
template <class Body>
[[nodiscard]] auto finish(Body&& body) {
  return detail::finish_awaiter<std::decay_t<Body>>(detail::g_default_policy,
                                                    std::forward<Body>(body));
}

/// @brief A finish scope whose asyncs use policy `p`.
template <class Body>
[[nodiscard]] auto finish(policy p, Body&& body) {
  return detail::finish_awaiter<std::decay_t<Body>>(p, std::forward<Body>(body));
}

} // namespace apgas
