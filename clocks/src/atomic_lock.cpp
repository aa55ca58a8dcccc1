// The slow paths of atomic_lock: waiting for the lock and waking a sleeper.
#include "apgas/detail/atomic_lock.hpp"

#include "apgas/detail/spin_lock.hpp"

namespace apgas::detail {

namespace {
/// Pauses before a waiter sleeps: a few microseconds, which covers the short bodies most atomic
/// blocks have (a sleep and its wake-up cost two system calls and a context switch).
constexpr int k_spins_before_sleep = 100;
} // namespace

void atomic_lock::wait_and_lock() noexcept {
  for (int spins = 0; spins < k_spins_before_sleep; ++spins) {
    cpu_relax();
    // relaxed: we only watch for a change; the exchange that takes the lock acquires.
    std::uint32_t word = m_word.load(std::memory_order_relaxed);
    if (word == k_sleepers) break; // others sleep already: spinning would only jump the queue
    if (word == k_free && m_word.compare_exchange_weak(word, k_locked, std::memory_order_acquire,
                                                       std::memory_order_relaxed))
      return;
  }
  // Mark the lock as having sleepers before sleeping, so that its holder's unlock wakes one.
  // acquire: when the exchange finds the lock free, we hold it (marked, which costs at most
  // one needless wake-up at our unlock).
  while (m_word.exchange(k_sleepers, std::memory_order_acquire) != k_free)
    futex_wait(m_word, k_sleepers);
}

void atomic_lock::wake_one() noexcept { futex_wake(m_word, 1); }

} // namespace apgas::detail
