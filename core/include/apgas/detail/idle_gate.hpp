// Where idle workers park and how they are woken. A worker that found nothing to do for a
// while parks on an epoch word (futex through std::atomic::wait); whoever makes work
// available where nobody may see it bumps the epoch and wakes one sleeper.
//
// No lost wake-up (Dekker pattern, both sides seq_cst):
//   sleeper: e = epoch; sleepers++; if (work visible) { sleepers--; retry } else wait(epoch, e)
//   waker:   publish work; fence; if (sleepers > 0) { epoch++; notify_one }
// Either the waker sees the sleeper's increment (and bumps the epoch it waits on), or the
// sleeper's re-check sees the published work.
#pragma once

#include <atomic>
#include <cstdint>

namespace apgas::detail {

/// @brief Parking lot of one place's workers. Thread-safety: any thread.
class idle_gate {
public:
  /// @brief Called after work was published (deque push to an empty deque, injected task).
  void notify_one() noexcept {
    // seq_cst fence: orders the caller's publication before the read of m_sleepers.
    std::atomic_thread_fence(std::memory_order_seq_cst);
    // relaxed: the fence above provides the ordering.
    if (m_sleepers.load(std::memory_order_relaxed) > 0) {
      // seq_cst: part of the Dekker pattern described above.
      m_epoch.fetch_add(1, std::memory_order_seq_cst);
      m_epoch.notify_one();
    }
  }
  /// @brief Wakes every sleeper (shutdown, root completion).
  void notify_all() noexcept {
    m_epoch.fetch_add(1, std::memory_order_seq_cst);
    m_epoch.notify_all();
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
  /// @brief Step 2b: sleep until the epoch moves on.
  void park(std::uint32_t epoch) noexcept {
    m_epoch.wait(epoch, std::memory_order_seq_cst);
    // relaxed: only a hint for wakers; a stale positive count costs one spurious notify.
    m_sleepers.fetch_sub(1, std::memory_order_relaxed);
  }
  /// @brief Number of parked (or parking) workers, a hint.
  std::uint32_t sleepers() const noexcept { return m_sleepers.load(std::memory_order_relaxed); }

private:
  alignas(64) std::atomic<std::uint32_t> m_epoch{0};
  alignas(64) std::atomic<std::uint32_t> m_sleepers{0};
};

} // namespace apgas::detail
