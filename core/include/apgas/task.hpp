/// @file task<T>: the coroutine type of every activity.
///
///     apgas::task<long> fib(int n) {
///       if (n < 2) co_return n;
///       auto [a, b] = co_await apgas::finish_all(fib(n - 1), fib(n - 2));
///       co_return a + b;
///     }
///
/// A task is lazy: it runs when awaited (`co_await t`, a sequential call that may itself spawn
/// activities), when spawned (`co_await async(t)`), as a finish body, or as the root of
/// runtime::run. Frames come from per-worker pools.
#pragma once

#include "apgas/detail/await_required.hpp"

#include <coroutine>
#include <utility>

namespace apgas {

namespace detail {
template <class T>
struct promise;
template <class T>
struct call_awaiter;
} // namespace detail

/// @brief A lazily started coroutine that is an apgas activity (or part of one).
/// Thread-safety: a task object is owned by one activity; its frame may run on any worker.
template <class T = void>
class APGAS_AWAIT_IT task {
public:
  using promise_type = detail::promise<T>;
  using value_type = T;
  using handle_type = std::coroutine_handle<promise_type>;

  task() noexcept = default;
  explicit task(handle_type h) noexcept : m_handle(h) {}
  task(task&& other) noexcept : m_handle(std::exchange(other.m_handle, nullptr)) {}
  task& operator=(task&& other) noexcept {
    if (this != &other) {
      reset();
      m_handle = std::exchange(other.m_handle, nullptr);
    }
    return *this;
  }
  task(const task&) = delete;
  task& operator=(const task&) = delete;
  ~task() { reset(); }

  /// @brief True if the task holds a coroutine that has not been handed over.
  bool valid() const noexcept { return static_cast<bool>(m_handle); }

  /// @brief Runs the task in sequence, inside the caller's activity: asyncs it starts are
  /// governed by the caller's finish (a sequential call to a parallel function).
  detail::call_awaiter<T> operator co_await() && noexcept { return {m_handle, {}}; }

  /// @brief Hands the frame over (to the scheduler, which destroys it when it ends).
  handle_type release() noexcept { return std::exchange(m_handle, nullptr); }

private:
  void reset() noexcept {
    if (m_handle) m_handle.destroy();
    m_handle = nullptr;
  }
  handle_type m_handle = nullptr;
};

} // namespace apgas

#include "apgas/detail/promise.hpp"
