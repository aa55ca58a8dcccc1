// Per-worker work-stealing deque: Chase-Lev, growable, in the C11 formulation of
// Lê, Pop, Cohen and Zappa Nardelli ("Correct and efficient work-stealing for weak memory
// models", PPoPP'13). The owner pushes and pops at the bottom; thieves take from the top.
// The store-load fence of pop and steal may be split between them (asymmetric_fence.hpp).
#pragma once

#include "apgas/detail/asymmetric_fence.hpp"

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace apgas::detail {

/// @brief A lock-free single-owner, multi-thief deque of non-zero word-sized items.
/// Thread-safety: push/pop only from the owner thread; steal from any thread.
class ws_deque {
public:
  using item = std::uintptr_t; ///< 0 means "no item"

  explicit ws_deque(std::size_t initial_capacity = 256)
      : m_array(new ring(round_up_pow2(initial_capacity))) {}
  ws_deque(const ws_deque&) = delete;
  ws_deque& operator=(const ws_deque&) = delete;
  // relaxed: a deque is destroyed only once no thief can reach it (its workers have stopped).
  ~ws_deque() { delete m_array.load(std::memory_order_relaxed); }

  /// @brief Owner only: push an item at the bottom.
  /// @return true if the deque looked empty just before the push (a thief may need waking).
  [[gnu::always_inline]] bool push(item value) {
    // relaxed: only the owner writes m_bottom.
    const std::int64_t b = m_bottom.load(std::memory_order_relaxed);
    // acquire: pairs with the thieves' CAS on m_top so that a slot they emptied is not
    // reused before their read of it completed.
    const std::int64_t t = m_top.load(std::memory_order_acquire);
    // relaxed: only the owner replaces the array.
    ring* a = m_array.load(std::memory_order_relaxed);
    if (b - t > static_cast<std::int64_t>(a->capacity) - 1) a = grow(a, t, b);
    a->put(b, value);
    // release: publishes the slot (and everything the owner wrote to the item, such as a
    // coroutine frame's fields) to a thief that acquires m_bottom.
    m_bottom.store(b + 1, std::memory_order_release);
    return b == t;
  }

  /// @brief Owner only: pop the most recently pushed item, or 0 if empty (or lost to a thief).
  [[gnu::always_inline]] item pop() {
    const std::int64_t b = m_bottom.load(std::memory_order_relaxed) - 1;
    ring* a = m_array.load(std::memory_order_relaxed);
    m_bottom.store(b, std::memory_order_relaxed);
    // The store to m_bottom must be visible to thieves before we read m_top (store-load
    // order), otherwise owner and thief could both take the last item: a seq_cst fence, or,
    // with the asymmetric fence, the full barrier a thief's heavy_fence() makes this thread
    // pass (asymmetric_fence.hpp), and here only the compiler kept from reordering.
    if (g_asymmetric_fence) std::atomic_signal_fence(std::memory_order_seq_cst);
    else std::atomic_thread_fence(std::memory_order_seq_cst);
    std::int64_t t = m_top.load(std::memory_order_relaxed);
    if (t > b) { // empty
      m_bottom.store(b + 1, std::memory_order_relaxed);
      return 0;
    }
    item value = a->get(b);
    if (t == b) { // last item: race the thieves for it
      // seq_cst CAS: totally ordered with the thieves' CAS on the same slot.
      if (!m_top.compare_exchange_strong(t, t + 1, std::memory_order_seq_cst,
                                         std::memory_order_relaxed))
        value = 0;
      m_bottom.store(b + 1, std::memory_order_relaxed);
    }
    return value;
  }

  /// @brief Any thread: take the oldest item, or 0 if empty or if another thread won the race.
  item steal() {
    // acquire: see the owner's and other thieves' progress on m_top.
    std::int64_t t = m_top.load(std::memory_order_acquire);
    // Orders the read of m_top before the read of m_bottom, pairing with the owner's side in
    // pop(): a seq_cst fence, or the heavy one that stands in for the owner's too. A deque
    // that looks empty costs no system call (relaxed: a stale look only fails this attempt).
    if (g_asymmetric_fence) {
      if (m_bottom.load(std::memory_order_relaxed) <= t) return 0;
      heavy_fence();
    } else {
      std::atomic_thread_fence(std::memory_order_seq_cst);
    }
    // acquire: pairs with push()'s release so the slot content is visible.
    const std::int64_t b = m_bottom.load(std::memory_order_acquire);
    if (t >= b) return 0;
    // acquire (consume in the paper): the array pointer published by grow().
    ring* a = m_array.load(std::memory_order_acquire);
    item value = a->get(t);
    // seq_cst CAS: only one of the racing thieves (and the owner's pop of the last item) wins.
    if (!m_top.compare_exchange_strong(t, t + 1, std::memory_order_seq_cst,
                                       std::memory_order_relaxed))
      return 0;
    return value;
  }

  /// @brief Approximate number of items (exact when called by the owner with no thieves).
  std::int64_t size_estimate() const {
    // relaxed: a hint only.
    return m_bottom.load(std::memory_order_relaxed) - m_top.load(std::memory_order_relaxed);
  }

  /// @brief Owner only: true if the deque is certainly empty, without pop()'s fence (an idle
  /// worker checks its own deque on every round of its search).
  bool owner_sees_empty() const {
    // relaxed: only the owner writes m_bottom, and thieves only ever raise m_top, so a stale
    // m_top is lower than the true one: b <= t read here means b <= t now.
    return m_bottom.load(std::memory_order_relaxed) <= m_top.load(std::memory_order_relaxed);
  }

  /// @brief Approximate emptiness test usable by any thread (a hint).
  bool looks_empty() const {
    // acquire: a hint only, but one that sees pushes published before it.
    return m_bottom.load(std::memory_order_acquire) <= m_top.load(std::memory_order_acquire);
  }
  /// @brief Emptiness test for a worker about to park: seq_cst loads, so that a push followed
  /// by the pusher's seq_cst fence is seen (see idle_gate.hpp).
  bool looks_empty_seq_cst() const {
    return m_bottom.load(std::memory_order_seq_cst) <= m_top.load(std::memory_order_seq_cst);
  }

private:
  struct ring {
    explicit ring(std::size_t cap) : capacity(cap), mask(cap - 1), slots(new slot[cap]) {}
    // Slots are atomics because a thief may read a slot the owner is overwriting after a
    // wrap-around; the thief's CAS on m_top then fails and the torn value is discarded.
    struct slot {
      std::atomic<item> v{0};
    };
    void put(std::int64_t i, item x) {
      // relaxed: published by the release store of m_bottom.
      slots[static_cast<std::size_t>(i) & mask].v.store(x, std::memory_order_relaxed);
    }
    item get(std::int64_t i) const {
      // relaxed: ordered by the acquire of m_bottom / m_array.
      return slots[static_cast<std::size_t>(i) & mask].v.load(std::memory_order_relaxed);
    }
    std::size_t capacity;
    std::size_t mask;
    std::unique_ptr<slot[]> slots;
  };

  static std::size_t round_up_pow2(std::size_t n) {
    std::size_t c = 2;
    while (c < n) c <<= 1;
    return c;
  }

  [[gnu::noinline]] ring* grow(ring* old, std::int64_t t, std::int64_t b) {
    auto* bigger = new ring(old->capacity * 2);
    for (std::int64_t i = t; i < b; ++i) bigger->put(i, old->get(i));
    // Thieves may still be reading the old ring: retire it, free it with the deque.
    m_retired.emplace_back(old);
    // release: a thief that acquires the new pointer sees the copied slots.
    m_array.store(bigger, std::memory_order_release);
    return bigger;
  }

  // m_top: written by thieves (CAS) and by the owner popping the last item.
  alignas(64) std::atomic<std::int64_t> m_top{0};
  // m_bottom and m_array: written by the owner only.
  alignas(64) std::atomic<std::int64_t> m_bottom{0};
  std::atomic<ring*> m_array;
  std::vector<std::unique_ptr<ring>> m_retired; // owner only
};

} // namespace apgas::detail
