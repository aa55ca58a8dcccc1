// The alarm a GLB run's checkpoint coordinator sleeps on between checkpoints: an activity
// suspended until a time, or until the run's work ends (wake). No thread of its own: the time
// is checked where the place looks at its network anyway (before every poll: working
// activities poll between batches, an idle place's watcher every few milliseconds), and
// between batches at one place, where nothing polls.
#pragma once

#include "apgas/detail/promise.hpp"
#include "apgas/detail/worker.hpp"

#include <atomic>
#include <chrono>
#include <coroutine>
#include <cstdint>

namespace apgas::detail {
class message_dispatcher;
}

namespace apgas::detail::glb {

/// @brief One sleeper at a time (one GLB run at a time per place). Thread-safety: any thread.
class alarm {
public:
  using clock = std::chrono::steady_clock;

  explicit alarm(message_dispatcher& dispatcher) noexcept : m_dispatcher(dispatcher) {}

  /// @brief co_await sleep_until(t): suspends the calling activity until t has passed (as
  /// seen by fire_if_due, at the next tick) or wake() was called since the last arm().
  class awaiter;
  awaiter sleep_until(clock::time_point due) noexcept;
  /// @brief Resumes the sleeper now, and every later sleep_until at once, until arm().
  void wake() noexcept;
  /// @brief Makes sleep_until sleep again (at the start of a run).
  void arm() noexcept;
  /// @brief Resumes the sleeper if its time has come. Cheap when nobody sleeps (one load).
  /// @return true if it did.
  bool fire_if_due() noexcept;

private:
  bool resume(promise_base* sleeper) noexcept;

  message_dispatcher& m_dispatcher;
  // The sleeper stores its time, then itself; whoever takes it back (an exchange) resumes it:
  // fire_if_due or wake.
  std::atomic<promise_base*> m_sleeper{nullptr};
  std::atomic<std::int64_t> m_due_ns{0};
  std::atomic<bool> m_woken{false};
};

class alarm::awaiter {
public:
  awaiter(alarm& a, clock::time_point due) noexcept : m_alarm(a), m_due(due) {}
  bool await_ready() const noexcept { return false; }
  template <class P>
  std::coroutine_handle<> await_suspend(std::coroutine_handle<P> me) {
    apgas::detail::require_apgas_caller<P>();
    return suspend(me.promise());
  }
  void await_resume() const noexcept {}

private:
  std::coroutine_handle<> suspend(promise_base& p) noexcept;
  alarm& m_alarm;
  clock::time_point m_due;
};

inline alarm::awaiter alarm::sleep_until(clock::time_point due) noexcept { return {*this, due}; }

/// @brief This place's alarm (its GLB module's).
alarm& checkpoint_alarm();

} // namespace apgas::detail::glb
