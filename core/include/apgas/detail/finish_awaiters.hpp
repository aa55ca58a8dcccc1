// How finish, finish_all and async (<apgas/finish.hpp>) run: the awaiters that start a finish's
// body as its first strand, hand a fixed set of tasks to the scheduler (finish_all), or spawn a
// child activity (async). The finish's counting itself is in activity.hpp.
#pragma once

#include "apgas/detail/trace.hpp"
#include "apgas/finish.hpp"
#include "apgas/task.hpp"

#include <array>
#include <concepts>
#include <cstddef>
#include <tuple>
#include <type_traits>
#include <utility>
#include <variant>

namespace apgas::detail {

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
  finish_awaiter(policy p, Body body, finish_pattern pattern = finish_pattern::general)
      : m_state(p), m_body(std::move(body)) {
    m_state.m_pattern = pattern;
  }
  bool await_ready() const noexcept { return false; }
  template <class P>
  std::coroutine_handle<> await_suspend(std::coroutine_handle<P> waiter) {
    require_apgas_caller<P>();
    m_state.m_waiter = &waiter.promise();
    auto h = start_body();
    promise_base& b = h.promise();
    b.m_finish = &m_state;
    b.m_role = promise_base::role::strand;
    b.m_parent = nullptr;
    m_state.m_body = &b;
    if (g_trace_on) [[unlikely]]
      m_wait.begin();
    return t_worker->transfer(h);
  }
  void await_resume() {
    // The wait includes the body's own run (from the co_await to the resume); only waits
    // longer than a folded slice are kept, so that a finish per recursive call costs no event.
    if (g_trace_on) [[unlikely]]
      m_wait.end(trace_kind::finish_wait, 0, g_trace->fold_ns());
    m_state.rethrow_if_failed();
  }

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
  trace_wait m_wait; ///< written by the waiter before the body starts, read when it resumes
};

/// @brief Where finish_all keeps the result of one task (nothing for task<void>).
template <class T>
struct result_slot {
  T m_value{};
};
template <>
struct result_slot<void> {};

/// @brief co_await finish_all(t1, ..., tn): a finish whose activities are the given tasks.
template <class... T>
class finish_all_awaiter {
  static constexpr std::size_t k_count = sizeof...(T);

public:
  [[gnu::always_inline]] finish_all_awaiter(policy p, task<T>&&... tasks)
      : finish_all_awaiter(p, std::index_sequence_for<T...>{}, std::move(tasks)...) {}
  finish_all_awaiter(const finish_all_awaiter&) = delete;
  finish_all_awaiter& operator=(const finish_all_awaiter&) = delete;
  // Destroys the frames only if never awaited (they were not handed over).
  [[gnu::always_inline]] ~finish_all_awaiter() {
    if (m_state.m_waiter == nullptr)
      for (promise_base* p : m_promises) p->m_self.destroy();
  }

  bool await_ready() const noexcept { return false; }
  // Inlined into the awaiting coroutine: this is the spawn path of fork-join code (a call
  // costs the register saves of a big function, several percent of fib's time per task).
  template <class P>
  [[gnu::always_inline]] std::coroutine_handle<> await_suspend(std::coroutine_handle<P> waiter) {
    require_apgas_caller<P>();
    m_state.m_waiter = &waiter.promise(); // also marks the tasks as handed over
    worker& w = *t_worker;
    w.m_counters.spawns += k_count - 1;
    // A local copy: the stores below go through these pointers, and GCC cannot tell that
    // they leave the array (in the frame) unchanged, so it would reload it after each.
    const std::array<promise_base*, k_count> promises = m_promises;
    // Adaptive goes work-first here: a fixed set of tasks holds k-1 deque items under either
    // policy (nothing for a bound to limit), and work-first is the cheaper fork-join.
    const bool work_first = m_state.m_policy != policy::help_first;
    for (std::size_t i = 0; i < k_count; ++i) {
      promise_base* p = promises[i];
      p->m_finish = &m_state;
      p->m_role = promise_base::role::strand;
      // Work-first: the tasks form one strand, like a child and its parent's continuation:
      // task i is joined implicitly by task i+1 if nobody took it from the deque, so a
      // finish_all whose tasks are not stolen costs no atomic operation. Whoever takes a
      // pushed task counts it as a strand of its own, exactly as for a stolen continuation
      // (see activity.hpp).
      p->m_parent = work_first && i + 1 < k_count ? promises[i + 1] : nullptr;
    }
    if (work_first) {
      for (std::size_t i = k_count; i-- > 1;) w.push(as_continuation(promises[i]));
      return w.transfer(promises[0]->m_self);
    }
    // Help-first: every task is a counted strand from the start; the last runs now. (Not the
    // chain above: the tasks' own help-first asyncs would sit above an uncounted task.)
    // relaxed: published to thieves by the deque pushes (release).
    m_state.m_count.store(static_cast<std::int64_t>(k_count), std::memory_order_relaxed);
    for (std::size_t i = 0; i + 1 < k_count; ++i) w.push(as_fresh_strand(promises[i]));
    return w.transfer(promises[k_count - 1]->m_self);
  }
  [[gnu::always_inline]] auto await_resume() {
    m_state.rethrow_if_failed();
    return collect(std::index_sequence_for<T...>{});
  }

private:
  template <std::size_t... I>
  [[gnu::always_inline]] finish_all_awaiter(policy p, std::index_sequence<I...>, task<T>&&... tasks)
      : m_state(p), m_promises{prepare(tasks.release(), std::get<I>(m_slots))...} {}

  template <class U>
  [[gnu::always_inline]] static promise_base* prepare(std::coroutine_handle<promise<U>> h,
                                                      result_slot<U>& slot) {
    if constexpr (!std::is_void_v<U>) h.promise().m_out = &slot.m_value;
    return &h.promise();
  }
  template <std::size_t... I>
  [[gnu::always_inline]] auto collect(std::index_sequence<I...>) {
    return std::tuple<std::conditional_t<std::is_void_v<T>, std::monostate, T>...>{
        take<T>(std::get<I>(m_slots))...};
  }
  template <class U>
  [[gnu::always_inline]] static auto take(result_slot<U>& slot) {
    if constexpr (std::is_void_v<U>) return std::monostate{};
    else {
      // A compiler barrier between the reads of two slots. Without it GCC merges the reads of
      // adjacent small results (fib's two longs) into one 16-byte load, which spans the two
      // 8-byte stores the tasks made moments ago: the CPU cannot forward such a load from its
      // store buffer and stalls until both stores reach the cache, a large share of the time
      // of a task as fine-grained as fib's.
      asm volatile("" ::: "memory");
      return std::move(slot.m_value);
    }
  }

  finish_state m_state;
  std::tuple<result_slot<T>...> m_slots;
  std::array<promise_base*, k_count> m_promises;
};

} // namespace apgas::detail

namespace apgas {

template <class Body>
detail::finish_awaiter<std::decay_t<Body>> finish(Body&& body) {
  return detail::finish_awaiter<std::decay_t<Body>>(detail::g_default_policy,
                                                    std::forward<Body>(body));
}

template <class Body>
detail::finish_awaiter<std::decay_t<Body>> finish(policy p, Body&& body) {
  return detail::finish_awaiter<std::decay_t<Body>>(p, std::forward<Body>(body));
}

template <class Body>
detail::finish_awaiter<std::decay_t<Body>> finish(finish_pattern pattern, Body&& body) {
  return detail::finish_awaiter<std::decay_t<Body>>(detail::g_default_policy,
                                                    std::forward<Body>(body), pattern);
}

template <class T>
detail::async_awaiter<T> async(task<T>&& t) {
  return {t.release()};
}

template <class T, class U>
requires std::same_as<T, U> detail::async_awaiter<T> async(task<T>&& t, U& out) {
  auto h = t.release();
  h.promise().m_out = &out;
  return {h};
}

template <class F>
requires(!detail::is_task_v<F> &&
         std::invocable<std::decay_t<F>&>) detail::async_awaiter<void> async(F&& f) {
  return {detail::run_owned(std::decay_t<F>(std::forward<F>(f))).release()};
}

template <class... T>
requires(sizeof...(T) >= 1) detail::finish_all_awaiter<T...> finish_all(task<T>... tasks) {
  return detail::finish_all_awaiter<T...>(detail::g_default_policy, std::move(tasks)...);
}

} // namespace apgas
