// Per-worker work-stealing deque, split in two (after Lace's split deque: van Dijk and van de
// Pol, "Lace: non-blocking split deque for work-stealing", Euro-Par 2014 workshops).
//
//   index:   top ........ split ........ bottom
//            [ public: thieves take the oldest ][ private: the owner's alone ]
//
// The owner pushes and pops at the bottom of the private part with plain loads and stores: no
// fence, no read-modify-write, nothing another thread writes on the way. Thieves see only the
// public part, through one 64-bit word (top and split), and take its oldest item with a
// compare-and-swap on that word. A thief that finds the public part empty raises the deque's
// *wanted* flag; the owner reads it (a plain load of a line thieves rarely write) at its next
// push or pop and answers by moving the split down the private part: the older half of its
// items becomes public. A flag raised while there is nothing private stays up, so the next
// push is public at once. And the bottom item of the deque, the first pushed onto an empty
// one, is always public: it is the root of the owner's work (the rest of a loop, the other half
// of a recursion), and the long activity the owner runs after pushing it would keep it from a
// thief until the activity ends. An activity that runs long without pushing or popping can
// also answer requests itself (serve_requests: GLB's drain loop does, between batches). So
// the owner pays a read-modify-write only at the boundary: when it
// answers a request, and when its private part is empty and it takes back the newest item
// of what it made public (a compare-and-swap that races the thieves' on the same word, so that
// each item goes to one side only), which in a flat loop of spawns is every iteration, the
// cost that a Chase-Lev deque's push onto an empty deque pays in its fence. A thief never
// interrupts the owner: no signal, no IPI, no membarrier; it waits at most until the owner's next
// push or pop for work to be shared.
//
// Indices are 32 bits and wrap (the public word holds two), compared by difference: a deque
// holds fewer than 2^31 items, and a thief's compare-and-swap could succeed on a stale word
// only after 2^32 steals between its read and its swap.
#pragma once

#include "apgas/detail/idle_gate.hpp"

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace apgas::detail {

/// @brief A single-owner, multi-thief deque of non-zero word-sized items, split into a private
/// part (the owner's) and a public part (the thieves').
/// Thread-safety: push/pop/share_all and the owner_* queries only from the owner thread;
/// steal, has_stealable and want_work from any thread.
class ws_deque {
public:
  using item = std::uintptr_t; ///< 0 means "no item"

  /// @param gate woken when the owner makes items public (may be null: a deque alone).
  /// @param first_index where the indices start (tests start near the 32-bit wrap).
  explicit ws_deque(std::size_t initial_capacity = 256, idle_gate* gate = nullptr,
                    std::uint32_t first_index = 0)
      : m_array(new ring(round_up_pow2(initial_capacity))), m_gate(gate),
        m_public(pack(first_index, first_index)), m_bottom(first_index), m_split(first_index),
        m_top_seen(first_index) {
    // relaxed: no other thread can see the deque yet.
    m_ring = m_array.load(std::memory_order_relaxed);
  }
  ws_deque(const ws_deque&) = delete;
  ws_deque& operator=(const ws_deque&) = delete;
  // relaxed: a deque is destroyed only once no thief can reach it (its workers have stopped).
  ~ws_deque() { delete m_array.load(std::memory_order_relaxed); }

  /// @brief Owner only, before any thief runs: the gate woken when items become public, and
  /// whether any thief can exist (a place with one worker has none: nothing is published).
  void set_gate(idle_gate* gate, bool thieves_exist = true) noexcept {
    m_gate = gate;
    m_thieves_exist = thieves_exist;
  }

  /// @brief Owner only: push an item at the bottom, private unless a thief asked for work.
  [[gnu::always_inline]] void push(item value) {
    const std::uint32_t b = m_bottom;
    if (b - m_top_seen >= m_ring->capacity) [[unlikely]]
      make_room();
    m_ring->put(b, value);
    m_bottom = b + 1;
    // relaxed: a request is a hint; one seen late is answered at the next push or pop.
    if (m_wanted.load(std::memory_order_relaxed)) [[unlikely]]
      answer_request();
    else if (b == m_split && m_thieves_exist && public_part_empty())
      publish(1); // the bottom item of a deque is public (see the top of this file)
  }

  /// @brief Owner only: answers a thief's request if one is up. For an activity that runs long
  /// without pushing or popping while its deque may hold items (see deque.hpp).
  void serve_requests() noexcept {
    // relaxed: as in push().
    if (m_wanted.load(std::memory_order_relaxed)) [[unlikely]]
      answer_request();
  }

  /// @brief Owner only: push an item and make every item public (work handed in from outside,
  /// which other workers should be able to take at once).
  void push_public(item value) {
    push(value);
    share_all();
  }

  /// @brief Owner only: makes every private item public.
  void share_all() noexcept;

  /// @brief Owner only: pop the most recently pushed item, or 0 if empty (or lost to a thief).
  [[gnu::always_inline]] item pop() {
    if (m_bottom != m_split) [[likely]] { // a private item: no thief can reach it
      const std::uint32_t b = --m_bottom;
      const item value = m_ring->get(b);
      // relaxed: as in push().
      if (m_wanted.load(std::memory_order_relaxed)) [[unlikely]]
        answer_request();
      return value;
    }
    return pop_public();
  }

  /// @brief Any thread: take the oldest public item, or 0 if there is none (raising the
  /// wanted flag) or another thread won the race for it.
  item steal() noexcept {
    // acquire: pairs with the owner's release when it made the items public (their slots).
    std::uint64_t word = m_public.load(std::memory_order_acquire);
    const std::uint32_t t = top_of(word);
    if (split_of(word) == t) {
      want_work();
      return 0;
    }
    // acquire: the array pointer published by grow(), holding the slot from before.
    ring* a = m_array.load(std::memory_order_acquire);
    const item value = a->get(t);
    // acq_rel: the release orders our read of the slot before the owner's reuse of it (it
    // acquires top before writing over a slot past it, see make_room); only one of the
    // racing thieves and the owner's take-back wins the word.
    if (!m_public.compare_exchange_strong(word, with_top(word, t + 1), std::memory_order_acq_rel,
                                          std::memory_order_relaxed))
      return 0;
    return value;
  }

  /// @brief Any thread: true if a thief could take an item now (a hint).
  bool has_stealable() const noexcept {
    // relaxed: a hint; a thief's steal() re-reads with acquire.
    const std::uint64_t word = m_public.load(std::memory_order_relaxed);
    return top_of(word) != split_of(word);
  }
  /// @brief Has-stealable for a worker about to park: a seq_cst load, so that the owner's
  /// publication followed by its notify's fence is seen (see idle_gate.hpp).
  bool has_stealable_seq_cst() const noexcept {
    const std::uint64_t word = m_public.load(std::memory_order_seq_cst);
    return top_of(word) != split_of(word);
  }
  /// @brief Any thread: asks the owner to make work public at its next push or pop.
  void want_work() noexcept {
    // relaxed: a hint (see push); the load first keeps the line shared while it is raised.
    if (!m_wanted.load(std::memory_order_relaxed)) m_wanted.store(true, std::memory_order_relaxed);
  }

  /// @brief Owner only: the flag want_work raises. An activity that splits its own work when
  /// asked (apgas/on_demand.hpp) reads it with a relaxed load, as push() does: a request seen
  /// late is answered at the next look, and the split's own push lowers it (answer_request).
  const std::atomic<bool>& wanted_flag() const noexcept { return m_wanted; }

  /// @brief Owner only: number of items, public and private (exact without thieves).
  std::int64_t size_estimate() const noexcept {
    // relaxed: a hint (a stale top only overstates the count).
    return static_cast<std::int32_t>(m_bottom - top_of(m_public.load(std::memory_order_relaxed)));
  }

  /// @brief Owner only: true if the deque is certainly empty, without any read-modify-write.
  bool owner_sees_empty() const noexcept {
    // relaxed: thieves only ever raise top, so a stale top is lower than the true one and an
    // empty answer is right (a non-empty one may be stale, and pop() then finds out).
    return m_bottom == m_split && top_of(m_public.load(std::memory_order_relaxed)) == m_split;
  }

  /// @brief Owner only: true if no public item is left (without a read of the thieves' word
  /// when the owner's last look already said so).
  bool public_part_empty() const noexcept {
    if (m_top_seen == m_split) return true; // top only grows, and never past the split
    // relaxed: a stale top says "not empty"; the item then stays private until asked for.
    return top_of(m_public.load(std::memory_order_relaxed)) == m_split;
  }

  /// @brief Owner only (or once it stopped): items it made public so far (statistics).
  std::uint64_t owner_shared_count() const noexcept { return m_shared; }

  /// @brief Owner only: items in the private part (tests and statistics).
  std::uint32_t owner_private_count() const noexcept { return m_bottom - m_split; }

private:
  struct ring {
    explicit ring(std::size_t cap)
        : capacity(static_cast<std::uint32_t>(cap)), mask(static_cast<std::uint32_t>(cap - 1)),
          slots(new slot[cap]) {}
    // Slots are atomics because a thief may read a slot the owner is overwriting after a
    // wrap-around; the thief's compare-and-swap then fails and the torn value is discarded.
    struct slot {
      std::atomic<item> v{0};
    };
    void put(std::uint32_t i, item x) {
      // relaxed: published by the release that makes the slot public.
      slots[i & mask].v.store(x, std::memory_order_relaxed);
    }
    item get(std::uint32_t i) const {
      // relaxed: ordered by the acquire of the public word / m_array.
      return slots[i & mask].v.load(std::memory_order_relaxed);
    }
    std::uint32_t capacity;
    std::uint32_t mask;
    std::unique_ptr<slot[]> slots;
  };

  static constexpr std::uint64_t pack(std::uint32_t top, std::uint32_t split) noexcept {
    return (std::uint64_t{split} << 32) | top;
  }
  static constexpr std::uint32_t top_of(std::uint64_t word) noexcept {
    return static_cast<std::uint32_t>(word);
  }
  static constexpr std::uint32_t split_of(std::uint64_t word) noexcept {
    return static_cast<std::uint32_t>(word >> 32);
  }
  static constexpr std::uint64_t with_top(std::uint64_t word, std::uint32_t top) noexcept {
    return (word & ~std::uint64_t{0xFFFFFFFF}) | top;
  }

  static std::size_t round_up_pow2(std::size_t n) {
    std::size_t c = 2;
    while (c < n) c <<= 1;
    return c;
  }

  /// The ring looked full: re-read top, and grow if it really is.
  [[gnu::noinline]] void make_room();
  /// A thief asked: make the older half of the private part public, or nothing if it is empty
  /// (the request stays up and the next push answers it).
  [[gnu::noinline]] void answer_request() noexcept;
  /// The private part is empty: take back its newest public item, or report empty.
  [[gnu::noinline]] item pop_public() noexcept;
  /// Moves the split `n` items down the private part (publishing them) and wakes a sleeper.
  void publish(std::uint32_t n) noexcept;

  // ---- read-mostly: the ring pointer thieves read; the flag thieves raise and the owner reads
  // on every push and pop (written at most once per request, so it stays in the owner's cache).
  alignas(64) std::atomic<ring*> m_array;
  std::atomic<bool> m_wanted{false};
  idle_gate* m_gate;           ///< set before the workers start; read by the owner
  bool m_thieves_exist = true; ///< set before the workers start; read by the owner
  // ---- the thieves' word: top (low half) and split (high half). Thieves compare-and-swap it;
  // the owner reads it at the boundary only.
  alignas(64) std::atomic<std::uint64_t> m_public;
  // ---- owner only.
  alignas(64) std::uint32_t m_bottom; ///< the next free index
  std::uint32_t m_split;              ///< split_of(m_public), which only the owner changes
  std::uint32_t m_top_seen;           ///< a lower bound of top (thieves only raise it)
  ring* m_ring;                       ///< m_array's value
  std::uint64_t m_shared = 0;         ///< items made public (statistics)
  std::vector<std::unique_ptr<ring>> m_retired;
};

} // namespace apgas::detail
