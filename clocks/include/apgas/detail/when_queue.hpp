// The atomic lock of this place and its queue of suspended `when`s (X10's conditional atomic
// blocks, after Tardieu et al., "A work-stealing scheduler for X10's task parallelism with
// suspension", section 6.1).
//
// A `when` whose condition is false joins the queue, in the same hold of the lock as its test
// (no lost wake-up), and its activity suspends: its worker goes on with other work. Whoever
// ends an atomic block or a `when` body (anything that may have changed a condition) re-tests
// the queued conditions before releasing the lock, and for each that holds runs that `when`'s
// body there and then, on behalf of the suspended activity, which it then makes runnable with
// its value (or its exception) ready. The paper instead moves the whole queue to the waker's
// deque and lets every activity re-test for itself; testing in place costs a call per waiter,
// not a resumption (and a lock hold) per waiter, and a woken activity never finds its
// condition false again, so nothing is re-queued. Bodies that run there may make other
// conditions true: the waker tests again until a round runs none.
//
// One lock and one queue per place, that is per process: a process runs one place (one
// runtime at a time).
#pragma once

#include "apgas/detail/activity.hpp"
#include "apgas/detail/atomic_lock.hpp"

#include <cstddef>
#include <source_location>
#include <string>

namespace apgas::detail {

class scheduler;

/// @brief A suspended `when`, linked into the queue. Lives in the awaiter, in the suspended
/// activity's frame. Every field is written and read under the atomic lock, except m_activity
/// and m_sched, which the waker reads after the lock, before it makes the activity runnable.
struct when_waiter {
  /// Under the lock: tests the condition and, if it holds, runs the body, keeping its value or
  /// exception (or the condition's) for the activity. Returns true if the `when` is done.
  bool (*m_try_complete)(when_waiter&) noexcept;
  promise_base* m_activity; ///< what to resume once done
  scheduler* m_sched;       ///< where the activity runs (the place's scheduler)
  std::source_location m_site;
  when_waiter* m_next = nullptr;
};

/// @brief Set while this thread holds the place's atomic lock: it runs an atomic block, a
/// `when` condition or body (its own or, completing them, another activity's).
inline thread_local bool t_holds_atomic_lock = false;

/// @brief True inside an atomic block, a `when` condition or body (on this thread).
inline bool in_atomic_block() noexcept { return t_holds_atomic_lock; }

/// @brief The atomic lock of this place and its suspended `when`s. Thread-safety: any thread
/// of the place; the queue only under the lock.
class when_queue {
public:
  /// @brief Starts an atomic block: takes the lock.
  [[gnu::always_inline]] void begin() noexcept {
    m_lock.lock();
    t_holds_atomic_lock = true;
  }
  /// @brief Ends an atomic block or a `when` body: completes the `when`s whose condition now
  /// holds, releases the lock, and makes their activities runnable.
  [[gnu::always_inline]] void end() noexcept {
    // Under the lock: a plain read of the queue.
    if (m_first == nullptr) [[likely]] {
      t_holds_atomic_lock = false;
      m_lock.unlock();
    } else {
      complete_waiters_and_unlock();
    }
  }
  /// @brief Ends a hold of the lock that changed nothing (a condition found false).
  void release() noexcept {
    t_holds_atomic_lock = false;
    m_lock.unlock();
  }
  /// @brief pre: the lock is held. Adds `w` at the end of the queue.
  void enqueue(when_waiter& w) noexcept {
    w.m_next = nullptr;
    if (m_last != nullptr) m_last->m_next = &w;
    else m_first = &w;
    m_last = &w;
    ++m_waiting;
  }
  /// @brief The suspended `when`s, one line per call site ("    3 at file:line in function"),
  /// or nothing. Waits a little for the lock; says so if a long atomic block keeps it.
  std::string describe() const;
  /// @brief How many `when`s are suspended (a snapshot, for tests; takes the lock).
  std::size_t waiting() const;
  /// @brief True while somebody holds the lock (a hint, for tests).
  bool locked() const noexcept { return m_lock.is_locked(); }

private:
  void complete_waiters_and_unlock() noexcept;

  mutable atomic_lock m_lock;
  when_waiter* m_first = nullptr; ///< under m_lock
  when_waiter* m_last = nullptr;  ///< under m_lock
  std::size_t m_waiting = 0;      ///< under m_lock
};

/// @brief This process's (this place's) atomic lock and `when` queue.
extern constinit when_queue g_when_queue;

} // namespace apgas::detail
