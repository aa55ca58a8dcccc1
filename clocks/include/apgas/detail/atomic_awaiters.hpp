// How atomic and when (<apgas/atomic.hpp>) run: the checks that refuse a body or condition
// that would suspend, and the awaiters that take the place's lock (atomic) or wait in its queue
// until the condition holds (when, see when_queue.hpp). Included at the end of atomic.hpp.
#pragma once

#include "apgas/atomic.hpp"
#include "apgas/detail/trace.hpp"
#include "apgas/detail/when_queue.hpp"
#include "apgas/task.hpp"

#include <concepts>
#include <coroutine>
#include <exception>
#include <functional>
#include <optional>
#include <source_location>
#include <stdexcept>
#include <type_traits>
#include <utility>

namespace apgas::detail {

template <class F>
constexpr bool check_plain_block() {
  if constexpr (!std::invocable<F&>) {
    static_assert(std::invocable<F&>,
                  "apgas: the body of atomic/when is a callable taking no arguments");
    return false;
  } else {
    static_assert(!is_task_v<std::invoke_result_t<F&>>,
                  "apgas: the body of atomic/when must not suspend: give a plain callable, not "
                  "a coroutine returning apgas::task (start the coroutine after the block)");
    return !is_task_v<std::invoke_result_t<F&>>;
  }
}

template <class C>
constexpr bool check_plain_condition() {
  if constexpr (!std::invocable<C&>) {
    static_assert(std::invocable<C&>,
                  "apgas: the condition of when is a callable taking no arguments");
    return false;
  } else if constexpr (is_task_v<std::invoke_result_t<C&>>) {
    static_assert(!is_task_v<std::invoke_result_t<C&>>,
                  "apgas: the condition of when must not suspend: give a plain callable that "
                  "returns bool, not a coroutine returning apgas::task");
    return false;
  } else {
    static_assert(std::convertible_to<std::invoke_result_t<C&>, bool>,
                  "apgas: the condition of when must return a bool (or something convertible)");
    return std::convertible_to<std::invoke_result_t<C&>, bool>;
  }
}

/// @brief What atomic() and when() return for a refused callable, after their static_assert
/// said why: awaitable, so that the assertion is the only error.
struct refused_block {
  bool await_ready() const noexcept { return true; }
  void await_suspend(std::coroutine_handle<>) const noexcept {}
  void await_resume() const noexcept {}
};

/// @brief What a `when` whose body returns nothing keeps of it.
struct no_value {};

/// @brief Ends an atomic block at the end of a scope, also when its body throws.
struct atomic_end {
  when_queue& m_queue;
  ~atomic_end() { m_queue.end(); }
};

/// @brief co_await atomic(f): never suspends; takes the lock, runs f, ends the block. Inside
/// an atomic block (or a `when`) f runs at once, as part of the enclosing block (X10's nested
/// atomic): the enclosing body is a plain callable and cannot co_await.
template <class F>
class atomic_awaiter {
  using result = std::invoke_result_t<F&>;
  /// A nested block's value, kept for await_resume.
  using kept = std::conditional_t<
      std::is_void_v<result>, no_value,
      std::conditional_t<std::is_reference_v<result>, std::remove_reference_t<result>*, result>>;

public:
  explicit atomic_awaiter(F f) : m_f(std::move(f)) {
    if (in_atomic_block()) [[unlikely]]
      run_nested();
  }
  bool await_ready() const noexcept { return true; }
  template <class P>
  void await_suspend(std::coroutine_handle<P>) const noexcept {
    require_apgas_caller<P>(); // never called: await_ready is true
  }
  decltype(auto) await_resume() {
    if (m_nested) [[unlikely]]
      return take_nested();
    when_queue& q = g_when_queue;
    q.begin();
    const atomic_end end{q};
    return std::invoke(m_f);
  }

private:
  void run_nested() {
    if constexpr (std::is_void_v<result>) std::invoke(m_f);
    else if constexpr (std::is_reference_v<result>) m_kept.emplace(&std::invoke(m_f));
    else m_kept.emplace(std::invoke(m_f));
    m_nested = true;
  }
  result take_nested() {
    if constexpr (std::is_void_v<result>) return;
    else if constexpr (std::is_reference_v<result>) return static_cast<result>(**m_kept);
    else return std::move(*m_kept);
  }

  F m_f;
  bool m_nested = false;
  std::optional<kept> m_kept;
};

/// @brief co_await when(c, f): runs f now if c() holds, else suspends the activity in the
/// place's queue until an atomic block makes c() true (see when_queue.hpp).
template <class C, class F>
class when_awaiter final : private when_waiter {
  using raw_result = std::invoke_result_t<F&>;
  using value_type = std::remove_cvref_t<raw_result>;

public:
  when_awaiter(C cond, F f, std::source_location site)
      : when_waiter{&try_complete, nullptr, nullptr, site}, m_cond(std::move(cond)),
        m_f(std::move(f)) {}
  when_awaiter(const when_awaiter&) = delete;
  when_awaiter& operator=(const when_awaiter&) = delete;

  /// Tests the condition under the lock and, if it holds, runs the body: no suspension. If
  /// not, returns false with the lock still held, for await_suspend, which the coroutine
  /// calls next on this thread: the test and the queueing are one step (no lost wake-up).
  bool await_ready() noexcept {
    g_when_queue.begin();
    if (!try_complete(*this)) return false;
    g_when_queue.end(); // the body ran (or a test threw): other conditions may hold now
    return true;
  }
  template <class P>
  std::coroutine_handle<> await_suspend(std::coroutine_handle<P> self) noexcept {
    require_apgas_caller<P>();
    worker& w = *t_worker;
    m_activity = &self.promise();
    m_sched = &w.sched();
    if (g_trace_on) [[unlikely]]
      m_wait.begin(); // before the release below publishes us
    g_when_queue.enqueue(*this);
    // Count what this worker leaves behind before a waker can resume us elsewhere: the
    // release below publishes the queued waiter.
    const std::coroutine_handle<> next = w.suspend_for_external();
    g_when_queue.release(); // from here on, `this` may be resumed
    return next;
  }
  auto await_resume() {
    if (g_trace_on) [[unlikely]]
      m_wait.end(trace_kind::when_wait); // nothing if the condition held at once
    if (m_error) std::rethrow_exception(m_error);
    if constexpr (!std::is_void_v<raw_result>) return std::move(*m_value);
  }

private:
  static bool try_complete(when_waiter& base) noexcept {
    auto& self = static_cast<when_awaiter&>(base);
    try {
      if (!static_cast<bool>(std::invoke(self.m_cond))) return false;
      if constexpr (std::is_void_v<raw_result>) std::invoke(self.m_f);
      else self.m_value.emplace(std::invoke(self.m_f));
    } catch (...) {
      self.m_error = std::current_exception(); // rethrown by the activity, at its await_resume
    }
    return true;
  }

  C m_cond;
  F m_f;
  trace_wait m_wait; ///< written before the waiter is queued, read when it resumes
  std::exception_ptr m_error;
  [[no_unique_address]] std::conditional_t<std::is_void_v<raw_result>, no_value,
                                           std::optional<value_type>>
      m_value;
};

} // namespace apgas::detail

namespace apgas {

template <class F>
auto atomic(F&& f) {
  if constexpr (detail::check_plain_block<std::decay_t<F>>())
    return detail::atomic_awaiter<std::decay_t<F>>(std::forward<F>(f));
  else return detail::refused_block{};
}

template <class C, class F>
auto when(C&& cond, F&& f, std::source_location site) {
  constexpr bool plain_condition = detail::check_plain_condition<std::decay_t<C>>();
  constexpr bool plain_block = detail::check_plain_block<std::decay_t<F>>();
  if (detail::in_atomic_block()) [[unlikely]]
    throw std::logic_error("apgas: when inside an atomic block or when: it would wait while "
                           "holding the place's lock (test the condition in the block instead)");
  if constexpr (plain_condition && plain_block)
    return detail::when_awaiter<std::decay_t<C>, std::decay_t<F>>(std::forward<C>(cond),
                                                                  std::forward<F>(f), site);
  else return detail::refused_block{};
}

} // namespace apgas
