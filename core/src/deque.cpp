// The split deque's boundary paths, out of line: the owner comes here only when a thief asked
// for work, when its private part is empty, or when the ring is full (see deque.hpp).
#include "apgas/detail/deque.hpp"

namespace apgas::detail {

void ws_deque::make_room() {
  // acquire: pairs with the thieves' compare-and-swap (release), so that a thief's read of a
  // slot it took completes before we write over that slot after a wrap-around.
  m_top_seen = top_of(m_public.load(std::memory_order_acquire));
  if (m_bottom - m_top_seen < m_ring->capacity) return;
  auto* bigger = new ring(std::size_t{m_ring->capacity} * 2);
  for (std::uint32_t i = m_top_seen; i != m_bottom; ++i) bigger->put(i, m_ring->get(i));
  // Thieves may still be reading the old ring: retire it, free it with the deque.
  m_retired.emplace_back(m_ring);
  // release: a thief that acquires the new pointer sees the copied slots.
  m_array.store(bigger, std::memory_order_release);
  m_ring = bigger;
}

void ws_deque::publish(std::uint32_t n) noexcept {
  m_split += n;
  m_shared += n;
  // A read-modify-write, because thieves move top in the same word meanwhile; adding to the
  // high half leaves top as it is. seq_cst: its release half lets a thief that acquires the
  // word see the slots up to the new split; as a seq_cst operation it is also the publisher's
  // half of the parking protocol with the gate's seq_cst loads that follow: a worker about to
  // park either sees the items (has_stealable_seq_cst) or is seen and woken.
  const std::uint64_t before =
      m_public.fetch_add(std::uint64_t{n} << 32, std::memory_order_seq_cst);
  m_top_seen = top_of(before);
  if (m_gate != nullptr) m_gate->notify_one_after_seq_cst_rmw();
}

void ws_deque::answer_request() noexcept {
  const std::uint32_t private_items = m_bottom - m_split;
  if (private_items == 0) return; // the request stays up: the next push answers it
  // relaxed: a hint. Lowered before the items go public: a thief that takes them all and asks
  // again is then heard.
  m_wanted.store(false, std::memory_order_relaxed);
  publish((private_items + 1) / 2); // the older half, at least one
}

void ws_deque::share_all() noexcept {
  if (m_bottom == m_split || !m_thieves_exist) return;
  // relaxed: as in answer_request.
  m_wanted.store(false, std::memory_order_relaxed);
  publish(m_bottom - m_split);
}

ws_deque::item ws_deque::pop_public() noexcept {
  // relaxed: the compare-and-swap below checks the word; the slots are our own writes.
  std::uint64_t word = m_public.load(std::memory_order_relaxed);
  for (;;) {
    const std::uint32_t t = top_of(word);
    m_top_seen = t;
    if (t == m_split) return 0; // empty: every public item was stolen (or there was none)
    // acq_rel on both swaps below: totally ordered with the thieves' compare-and-swap on the
    // same word (one side wins each item); acquire also as in make_room (a thief's read of a
    // slot we reuse).
    if (m_split - t == 1) {
      // The last public item is taken as a thief takes it, by moving top past it. Lowering the
      // split instead would let its index go public again holding another item, and a thief
      // that read the word and the slot before could then swap the word as it was and take
      // the old item a second time (ABA). So the split never goes down to top, and an index
      // stays public, its slot unchanged, until top passes it.
      if (m_public.compare_exchange_weak(word, pack(m_split, m_split), std::memory_order_acq_rel,
                                         std::memory_order_relaxed)) {
        m_top_seen = m_split;
        return m_ring->get(t); // the deque is empty: bottom, split and top are equal
      }
      continue;
    }
    // Take back the newest public item only: the others stay where idle workers can take
    // them (work handed in from outside is public as a whole, and an owner that took back
    // half of it would keep that half from thieves until its next push or pop). The new split
    // stays above t (see above).
    const std::uint32_t new_split = m_split - 1;
    if (m_public.compare_exchange_weak(word, pack(t, new_split), std::memory_order_acq_rel,
                                       std::memory_order_relaxed)) {
      m_split = new_split;
      break;
    }
  }
  const std::uint32_t b = --m_bottom; // private again: ours alone
  return m_ring->get(b);
}

} // namespace apgas::detail
