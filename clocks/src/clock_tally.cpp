// The counting of a distributed clock's phases (see clock_tally.hpp).
#include "apgas/detail/clock_tally.hpp"

#include "apgas/clock.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace apgas::detail {

void clock_partial::fail(bool mismatch, std::exception_ptr error) noexcept {
  try {
    failure = std::make_shared<const clock_failure>(clock_failure{mismatch, std::move(error)});
  } catch (...) { // out of memory: a failure without its exception still fails the phase
    static const auto k_unknown = std::make_shared<const clock_failure>();
    failure = k_unknown;
  }
}

void clock_partial::fold(combine_fn op, const std::byte* v, std::uint32_t bytes) noexcept {
  if (failed()) return;
  if (combine == nullptr) {
    combine = op;
    size = bytes;
    std::memcpy(value.data(), v, bytes);
    return;
  }
  if (op != combine || bytes != size) return fail(true, nullptr);
  try {
    op(value.data(), v);
  } catch (...) {
    fail(false, std::current_exception());
  }
}

void clock_partial::fold(const clock_partial& other) noexcept {
  if (failed()) return;
  if (other.failed()) {
    failure = other.failure;
    return;
  }
  if (other.combine != nullptr) fold(other.combine, other.value.data(), other.size);
}

void clock_partial::rethrow() const {
  if (failure->mismatch || failure->error == nullptr)
    throw clock_use_exception(failure->mismatch
                                  ? "apgas: the contributions to a clock phase's reduction use "
                                    "different operations or types"
                                  : "apgas: a clock phase's reduction failed (out of memory)");
  std::rethrow_exception(failure->error);
}

void clock_tally::phase_state::reset() noexcept {
  std::fill(places.begin(), places.end(), per_place{});
  nonzero = 0;
  held.clear();
  partials.clear();
  touched = false;
}

void clock_tally::reserve_through(std::uint64_t phase) {
  const std::size_t open = phase - m_oldest + 1;
  if (open > m_open) m_open = open;
  if (open <= m_ring.size()) return;
  // Grow to a power of two, each open phase moved to its slot in the larger ring.
  std::size_t size = std::max<std::size_t>(m_ring.size() * 2, 4);
  while (size < open) size *= 2;
  std::vector<phase_state> ring(size);
  for (std::uint64_t p = m_oldest; p < m_oldest + m_ring.size(); ++p)
    ring[p & (size - 1)] = std::move(m_ring[p & (m_ring.size() - 1)]);
  m_ring = std::move(ring);
}

void clock_tally::adjust(phase_state& ph, place_id p, std::int64_t delta) {
  if (delta == 0) return;
  per_place& pp = ph.at(p);
  const bool was_zero = pp.pending == 0;
  pp.pending += delta;
  if (was_zero) ++ph.nonzero;
  else if (pp.pending == 0) --ph.nonzero;
}

void clock_tally::apply(const clock_report& r, std::vector<clock_phase_end>& ended) {
  if (r.phase < m_oldest) return; // a report of an ended phase cannot exist (see the header)
  // Its place knows of phases that ended on the collective path, which this tally has not
  // seen end: skip them (see the header). Unless this tally still waits for reports of the
  // phase before the path (it has some of them, in flight from the others): until that phase
  // ends here, the report waits.
  if (r.last_collective >= m_oldest) {
    if (reports_before(r.last_collective + 1)) {
      m_waiting_for_path.push_back(r);
      return;
    }
    skip_to(r.last_collective + 1);
  }
  // The ring holds the next phase too before ph is taken: a carry reaches it (growing the ring
  // would move ph).
  reserve_through(r.phase + 1);
  phase_state& ph = slot(r.phase);
  ph.touched = true;
  if (r.seq != ph.at(r.from).next_seq) { // an earlier one of its place is on its way
    ph.held.push_back(r);
    return;
  }
  apply_in_order(r, ph);
  // Apply what it unblocks (rare: held-back reports exist only after a reordering).
  for (bool progress = true; progress && !ph.held.empty();) {
    progress = false;
    for (auto it = ph.held.begin(); it != ph.held.end(); ++it) {
      if (it->seq != ph.at(it->from).next_seq) continue;
      const clock_report unblocked = std::move(*it);
      ph.held.erase(it);
      apply_in_order(unblocked, ph);
      progress = true;
      break;
    }
  }
  while (try_end_oldest(ended)) {
  }
  // A phase ended: reports that waited for it may now skip to their phase.
  if (!m_waiting_for_path.empty() && !ended.empty()) {
    std::vector<clock_report> waiting = std::move(m_waiting_for_path);
    m_waiting_for_path.clear();
    for (const clock_report& w : waiting) apply(w, ended);
  }
}

bool clock_tally::reports_before(std::uint64_t phase) const {
  for (std::uint64_t p = m_oldest; p < std::min(phase, m_oldest + m_open); ++p) {
    const phase_state& ph = m_ring[p & (m_ring.size() - 1)];
    if (!ph.held.empty()) return true;
    for (const per_place& pp : ph.places)
      if (pp.next_seq != 0) return true;
  }
  return false;
}

void clock_tally::skip_to(std::uint64_t phase) {
  // Only carries reached the skipped phases, which no place reported; the phase skipped to
  // and later ones may have reports already (from places that had not heard of the collective
  // path: a registration sent in the phase that fell back).
  const auto reported = [](const phase_state& ph) {
    return std::any_of(ph.places.begin(), ph.places.end(),
                       [](const per_place& pp) { return pp.next_seq != 0; });
  };
  const std::uint64_t open_end = m_oldest + m_open;
  for (std::uint64_t p = m_oldest; p < std::min(phase, open_end); ++p)
    if (reported(slot(p)))
      throw std::logic_error("apgas: a clock tally was asked to skip to phase " +
                             std::to_string(phase) + " past phase " + std::to_string(p) +
                             ", which it has reports of");
  std::vector<per_place> carries;
  if (m_open != 0) {
    carries = std::move(slot(m_oldest).places);
    for (std::uint64_t p = m_oldest; p < std::min(phase, open_end); ++p) slot(p).reset();
  }
  m_open = open_end > phase ? static_cast<std::size_t>(open_end - phase) : 0;
  m_oldest = phase;
  reserve_through(phase + 1);
  // The phase takes the same carries (its slot may be the oldest's: the ring wraps).
  phase_state& to = slot(phase);
  for (place_id q = 0; q < carries.size(); ++q) {
    if (carries[q].carried_in == 0) continue;
    to.at(q).carried_in += carries[q].carried_in;
    adjust(to, q, carries[q].pending);
  }
  to.touched = true;
  m_base_known = true; // the first phase ended before any phase could be stable
}

void clock_tally::apply_in_order(const clock_report& r, phase_state& ph) {
  per_place& me = ph.at(r.from);
  me.stable = r.seq == 0 && r.base == 0 && r.sent.empty() && r.completed == r.carried &&
              r.carried == me.carried_in && r.carried != 0 && r.lane_ok;
  ++ph.at(r.from).next_seq;
  if (r.base != 0) m_base_known = true;
  adjust(ph, r.from, static_cast<std::int64_t>(r.base) - static_cast<std::int64_t>(r.completed));
  for (const auto& [to, n] : r.sent) adjust(ph, to, static_cast<std::int64_t>(n));
  if (r.carried != 0) {
    ph.at(r.from).carried += r.carried;
    phase_state& next = slot(r.phase + 1); // reserved by apply: ph stays valid
    next.touched = true;
    next.at(r.from).carried_in += r.carried;
    adjust(next, r.from, static_cast<std::int64_t>(r.carried));
  }
  if (!r.partial.empty()) ph.partials.emplace_back(std::pair(r.from, r.seq), r.partial);
}

bool clock_tally::try_end_oldest(std::vector<clock_phase_end>& ended) {
  if (m_over || m_open == 0) return false;
  phase_state& ph = slot(m_oldest);
  if (!ph.touched || ph.nonzero != 0 || !ph.held.empty()) return false;
  // The first phase's registrants that no report sent are the home's base: until its report
  // is in, the others' may balance to zero while some registrant is still running.
  if (!m_base_known) return false;
  clock_phase_end& end = ended.emplace_back();
  end.phase = m_oldest;
  // Canonical order, by place then by report, so that every tallying place folds the same
  // values the same way (floating point included). Reports usually arrive in that order.
  const auto by_report = [](const auto& a, const auto& b) { return a.first < b.first; };
  if (!std::is_sorted(ph.partials.begin(), ph.partials.end(), by_report))
    std::sort(ph.partials.begin(), ph.partials.end(), by_report);
  for (const auto& [key, partial] : ph.partials) end.result.fold(partial);
  bool carried = false;
  bool stable = true;
  for (place_id p = 0; p < ph.places.size(); ++p) {
    if (ph.places[p].next_seq == 0) continue; // it did not report in this phase
    carried = carried || ph.places[p].carried != 0;
    stable = stable && ph.places[p].next_seq == 1 && ph.places[p].stable;
    if (m_list_reporters) end.reported_at.push_back(p);
    end.members.push_back(p);
  }
  end.last = !carried;
  end.stable = stable && carried;
  if (!end.stable) end.members.clear();
  m_over = end.last;
  // The ended phase's slot is reused for a later one.
  ph.reset();
  ++m_oldest;
  --m_open;
  return true;
}

std::vector<std::pair<place_id, std::int64_t>> clock_tally::waiting_for() const {
  std::vector<std::pair<place_id, std::int64_t>> waiting;
  if (m_open == 0) return waiting;
  const phase_state& ph = m_ring[m_oldest & (m_ring.size() - 1)];
  for (place_id p = 0; p < ph.places.size(); ++p)
    if (ph.places[p].pending != 0) waiting.emplace_back(p, ph.places[p].pending);
  return waiting;
}

} // namespace apgas::detail
