// The lock of a place's atomic blocks. Unlike spin_lock (sections of a few instructions), an
// atomic block is user code of any length, and every worker of the place may want it at once:
// a waiter spins briefly, for the common short body, then sleeps on a futex so that it does
// not burn a core that the holder (or another place's worker) could use.
//
// Three states (Drepper, "Futexes are tricky", mutex 2): free, locked, locked with sleepers.
// Only an unlock that finds sleepers possible makes a system call.
#pragma once

#include "apgas/detail/futex.hpp"

#include <atomic>
#include <cstdint>

namespace apgas::detail {

/// @brief A mutex that spins, then parks on a futex. Not recursive. Thread-safety: any thread.
class atomic_lock {
public:
  [[gnu::always_inline]] bool try_lock() noexcept {
    std::uint32_t expected = k_free;
    // acquire on success: the section comes after the previous holder's release; relaxed on
    // failure: nothing was taken.
    return m_word.compare_exchange_strong(expected, k_locked, std::memory_order_acquire,
                                          std::memory_order_relaxed);
  }
  [[gnu::always_inline]] void lock() noexcept {
    if (!try_lock()) [[unlikely]]
      wait_and_lock();
  }
  [[gnu::always_inline]] void unlock() noexcept {
    // release: publishes the section to the next holder.
    if (m_word.exchange(k_free, std::memory_order_release) == k_sleepers) [[unlikely]]
      wake_one();
  }
  /// @brief True while somebody holds the lock (a hint, for diagnostics and tests).
  bool is_locked() const noexcept {
    return m_word.load(std::memory_order_relaxed) != k_free; // relaxed: a snapshot
  }

private:
  static constexpr std::uint32_t k_free = 0;
  static constexpr std::uint32_t k_locked = 1;
  static constexpr std::uint32_t k_sleepers = 2; ///< locked, and somebody may sleep on it

  void wait_and_lock() noexcept;
  void wake_one() noexcept;

  std::atomic<std::uint32_t> m_word{k_free};
};

} // namespace apgas::detail
