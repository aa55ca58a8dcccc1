// A small test-and-test-and-set lock for very short critical sections (a thief taking one
// item, appending an exception). Never held across a suspension or a system call.
#pragma once

#include <atomic>

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
  bool try_lock() noexcept {
    // relaxed pre-check avoids bouncing the line when it is taken; acquire on success
    // orders the critical section after the previous holder's release.
    return !m_locked.load(std::memory_order_relaxed) &&
           !m_locked.exchange(true, std::memory_order_acquire);
  }
  void lock() noexcept {
    while (!try_lock()) {
      // relaxed: we only wait for the value to change; the exchange above acquires.
      while (m_locked.load(std::memory_order_relaxed)) cpu_relax();
    }
  }
  void unlock() noexcept {
    // release: publishes the critical section to the next acquirer.
    m_locked.store(false, std::memory_order_release);
  }

private:
  std::atomic<bool> m_locked{false};
};

} // namespace apgas::detail
