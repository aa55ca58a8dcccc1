// A small test-and-test-and-set lock for very short critical sections (a thief taking one
// item, appending an exception, a frame appended to a coalescing buffer). Never held across a
// suspension or a blocking call. Uncontended it inlines to one atomic read-modify-write and
// one store, where a pthread mutex's lock and unlock are out-of-line library calls with an
// atomic read-modify-write each.
#pragma once

#include <atomic>
#include <thread>

namespace apgas::detail {

/// @brief Pause instruction for spin loops (lets the sibling hyper-thread run).
inline void cpu_relax() noexcept {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

/// @brief TTAS spin lock. Thread-safety: any thread.
class spin_lock {
public:
  [[gnu::always_inline]] bool try_lock() noexcept {
    // relaxed pre-check avoids bouncing the line when it is taken; acquire on success
    // orders the critical section after the previous holder's release.
    return !m_locked.load(std::memory_order_relaxed) &&
           !m_locked.exchange(true, std::memory_order_acquire);
  }
  // The fast path inline, the wait out of line: GCC otherwise leaves lock() itself out of line
  // in large translation units (a call per remote async).
  [[gnu::always_inline]] void lock() noexcept {
    if (!try_lock()) [[unlikely]]
      wait_and_lock();
  }
  [[gnu::noinline]] void wait_and_lock() noexcept {
    while (!try_lock()) {
      // relaxed: we only wait for the value to change; the exchange above acquires.
      for (int spins = 0; m_locked.load(std::memory_order_relaxed); ++spins) {
        cpu_relax();
        // The holder may have been preempted (more threads than cores: places share
        // cores): after a short spin, give our core away instead of burning the slice.
        if (spins >= k_spins_before_yield) {
          std::this_thread::yield();
          spins = 0;
        }
      }
    }
  }
  [[gnu::always_inline]] void unlock() noexcept {
    // release: publishes the critical section to the next acquirer.
    m_locked.store(false, std::memory_order_release);
  }

private:
  /// A critical section lasts much less than this many pauses: a holder that still holds the
  /// lock after them has probably lost its core.
  static constexpr int k_spins_before_yield = 64;
  std::atomic<bool> m_locked{false};
};

} // namespace apgas::detail
