// Where idle workers park and how they are woken. A worker that found nothing to do for a
// while parks on an epoch word (a futex); whoever makes work
// available where nobody may see it bumps the epoch and wakes one sleeper.
//
// To keep wake-ups (system calls) rare, a publisher wakes nobody while some worker is
// *searching* (awake and looking for work): that worker will find the work. A searcher that
// finds work and was the last one searching wakes a sleeper to take over the search, so work
// published later is still seen (the "one thief awake" rule).
//
// No lost wake-up (Dekker pattern, both sides seq_cst):
//   sleeper: e = epoch; sleepers++; if (work visible) { sleepers--; retry } else wait(epoch, e)
//   waker:   publish work; fence; if (sleepers > 0) { epoch++; notify_one }
// Either the waker sees the sleeper's increment (and bumps the epoch it waits on), or the
// sleeper's re-check sees the published work.
#pragma once

#include "apgas/detail/futex.hpp"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <limits>

namespace apgas::detail {

/// @brief Parking lot of one place's workers. Thread-safety: any thread.
class idle_gate {
public:
  /// @brief Called after work was published (deque push to an empty deque, injected task):
  /// wakes a sleeper unless a searcher will see the work.
  void notify_one() noexcept {
    // seq_cst fence: orders the caller's publication before the reads below (Dekker with a
    // searcher that stops searching, and with a sleeper, whose re-checks are seq_cst).
    std::atomic_thread_fence(std::memory_order_seq_cst);
    // relaxed: the fence above provides the ordering.
    if (m_searching.load(std::memory_order_relaxed) > 0) return;
    wake_one();
  }
  /// @brief Wakes one sleeper if there is any.
  void wake_one() noexcept {
    if (m_sleepers.load(std::memory_order_seq_cst) > 0) {
      // seq_cst: part of the Dekker pattern described above.
      m_epoch.fetch_add(1, std::memory_order_seq_cst);
      futex_wake(m_epoch, 1);
    }
  }
  /// @brief A worker starts looking for work.
  void begin_search() noexcept {
    // seq_cst: read by publishers after their fence (see notify_one).
    m_searching.fetch_add(1, std::memory_order_seq_cst);
  }
  /// @brief A worker stops looking for work. @return true if it was the last searcher.
  bool end_search() noexcept {
    // seq_cst: a publisher that saw us searching relies on our later re-check seeing its work.
    return m_searching.fetch_sub(1, std::memory_order_seq_cst) == 1;
  }

  /// @brief Wakes every sleeper (shutdown, root completion).
  void notify_all() noexcept {
    m_epoch.fetch_add(1, std::memory_order_seq_cst);
    futex_wake(m_epoch, std::numeric_limits<int>::max());
  }
  /// @brief Step 1 of parking: announce, and return the epoch to wait on.
  std::uint32_t prepare_park() noexcept {
    // seq_cst on both: Dekker with notify_one (the epoch must be read before announcing).
    const std::uint32_t e = m_epoch.load(std::memory_order_seq_cst);
    m_sleepers.fetch_add(1, std::memory_order_seq_cst);
    return e;
  }
  /// @brief Step 2a: the re-check found work; withdraw.
  void cancel_park() noexcept { m_sleepers.fetch_sub(1, std::memory_order_relaxed); }
  /// @brief Step 2b: sleep until the epoch moves on, or at most `timeout` (zero: no limit;
  /// a place with a network uses a limit so that someone polls it).
  void park(std::uint32_t epoch,
            std::chrono::nanoseconds timeout = std::chrono::nanoseconds::zero()) noexcept {
    futex_wait(m_epoch, epoch, timeout);
    // relaxed: only a hint for wakers; a stale positive count costs one spurious notify.
    m_sleepers.fetch_sub(1, std::memory_order_relaxed);
  }
  /// @brief notify_one for a publisher whose publication was itself a seq_cst
  /// read-modify-write (a deque making items public): that operation stands in for the fence,
  /// since it and the loads below are all in the single order of seq_cst operations.
  void notify_one_after_seq_cst_rmw() noexcept {
    // seq_cst: see above (the sleeper's side is seq_cst too).
    if (m_searching.load(std::memory_order_seq_cst) > 0) return;
    wake_one();
  }
  /// @brief Number of parked (or parking) workers, a hint.
  std::uint32_t sleepers() const noexcept { return m_sleepers.load(std::memory_order_relaxed); }

private:
  alignas(64) std::atomic<std::uint32_t> m_epoch{0};
  alignas(64) std::atomic<std::uint32_t> m_sleepers{0};
  alignas(64) std::atomic<std::uint32_t> m_searching{0};
};

} // namespace apgas::detail
