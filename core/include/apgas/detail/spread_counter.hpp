// spread_counter: a statistics counter that the workers of a place bump on hot paths without an
// atomic read-modify-write.
#pragma once

#include "apgas/detail/scheduler.hpp"
#include "apgas/detail/worker.hpp"

#include <atomic>
#include <cstdint>
#include <memory>

namespace apgas::detail {

/// @brief Each worker of one scheduler adds to a slot of its own, with a load and a store
/// (one writer per slot), where one shared atomic would cost a lock-prefixed fetch_add per
/// event (a remote async, say: tens of millions per second, from every worker). Other threads
/// add to a shared slot with fetch_add. Reads sum the slots.
/// Thread-safety: any thread. relaxed everywhere: a figure for people, nothing is ordered by
/// it; a read while workers add is a little behind, a read after they stopped is exact.
class spread_counter {
public:
  explicit spread_counter(const scheduler& owner)
      : m_owner(&owner), m_slots(std::make_unique<slot[]>(owner.worker_count())) {}

  // Inline always: GCC leaves it out of line in large translation units otherwise (a call
  // per remote async).
  [[gnu::always_inline]] void add(std::uint64_t n = 1) noexcept {
    if (worker* w = t_worker; w != nullptr && &w->sched() == m_owner) {
      std::atomic<std::uint64_t>& v = m_slots[w->index()].value;
      v.store(v.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
      return;
    }
    m_shared.fetch_add(n, std::memory_order_relaxed);
  }
  /// @brief Takes `n` off (a count that goes up and down, such as replies awaited: the slots
  /// wrap around modulo 2^64 and their sum is right, read with load_signed()).
  [[gnu::always_inline]] void sub(std::uint64_t n = 1) noexcept { add(std::uint64_t{0} - n); }
  /// @brief The sum as a signed count (see sub). While threads add, it may be off either way.
  std::int64_t load_signed() const noexcept { return static_cast<std::int64_t>(load()); }
  /// @brief The sum (the order argument, for the interface of std::atomic, is ignored).
  std::uint64_t load(std::memory_order = std::memory_order_relaxed) const noexcept {
    std::uint64_t total = m_shared.load(std::memory_order_relaxed);
    for (unsigned i = 0; i < m_owner->worker_count(); ++i)
      total += m_slots[i].value.load(std::memory_order_relaxed);
    return total;
  }

private:
  struct alignas(64) slot { // one cache line per worker: no false sharing between writers
    std::atomic<std::uint64_t> value{0};
  };
  const scheduler* m_owner;
  std::unique_ptr<slot[]> m_slots;
  std::atomic<std::uint64_t> m_shared{0};
};

} // namespace apgas::detail
