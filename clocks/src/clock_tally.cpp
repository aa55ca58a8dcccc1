// The counting of a distributed clock's phases (see clock_tally.hpp).
#include "apgas/detail/clock_tally.hpp"

#include "apgas/clock.hpp"

#include <algorithm>
#include <cstring>

namespace apgas::detail {

void clock_tally::adjust(phase_state& ph, place_id p, std::int64_t delta) {
  if (delta == 0) return;
  auto [it, inserted] = ph.pending.try_emplace(p, 0);
  it->second += delta;
  if (it->second == 0) ph.pending.erase(it);
}

void clock_tally::apply(clock_report r, std::vector<clock_phase_end>& ended) {
  if (r.phase < m_oldest) return; // a report of an ended phase cannot exist (see the header)
  phase_state& ph = m_phases[r.phase];
  ph.touched = true;
  if (r.seq != ph.next_seq[r.from]) { // an earlier one of its place is on its way
    ph.held.push_back(std::move(r));
    return;
  }
  apply_in_order(r, ph);
  // Apply what it unblocks (rare: held-back reports exist only after a reordering).
  for (bool progress = true; progress && !ph.held.empty();) {
    progress = false;
    for (auto it = ph.held.begin(); it != ph.held.end(); ++it) {
      if (it->seq != ph.next_seq[it->from]) continue;
      const clock_report unblocked = std::move(*it);
      ph.held.erase(it);
      apply_in_order(unblocked, ph);
      progress = true;
      break;
    }
  }
  while (try_end_oldest(ended)) {
  }
}

void clock_tally::apply_in_order(const clock_report& r, phase_state& ph) {
  ++ph.next_seq[r.from];
  if (r.base != 0) m_base_known = true;
  adjust(ph, r.from, static_cast<std::int64_t>(r.base) - static_cast<std::int64_t>(r.completed));
  for (const auto& [to, n] : r.sent) adjust(ph, to, static_cast<std::int64_t>(n));
  if (r.carried != 0) {
    ph.carried[r.from] += r.carried;
    phase_state& next = m_phases[r.phase + 1];
    next.touched = true;
    adjust(next, r.from, static_cast<std::int64_t>(r.carried));
  }
  if (!r.partial.empty()) {
    if (!ph.partials.empty() && ph.partials.begin()->second.combine != r.partial.combine)
      throw clock_use_exception("apgas: the contributions to a clock phase's reduction use "
                                "different operations or types");
    ph.partials.emplace(std::pair(r.from, r.seq), r.partial);
  }
}

bool clock_tally::try_end_oldest(std::vector<clock_phase_end>& ended) {
  if (m_over) return false;
  auto it = m_phases.find(m_oldest);
  if (it == m_phases.end()) return false;
  phase_state& ph = it->second;
  if (!ph.touched || !ph.pending.empty() || !ph.held.empty()) return false;
  // The first phase's registrants that no report sent are the home's base: until its report
  // is in, the others' may balance to zero while some registrant is still running.
  if (!m_base_known) return false;
  clock_phase_end end;
  end.phase = m_oldest;
  for (auto& [key, partial] : ph.partials) { // canonical order: by place, then by report
    if (end.result.empty()) end.result = std::move(partial);
    else end.result.combine(end.result.value.data(), partial.value.data());
  }
  for (const auto& [p, n] : ph.carried)
    if (n != 0) end.carried_at.push_back(p);
  end.last = end.carried_at.empty();
  m_over = end.last;
  m_phases.erase(it);
  ++m_oldest;
  ended.push_back(std::move(end));
  return true;
}

std::vector<std::pair<place_id, std::int64_t>> clock_tally::waiting_for() const {
  const auto it = m_phases.find(m_oldest);
  if (it == m_phases.end()) return {};
  return {it->second.pending.begin(), it->second.pending.end()};
}

} // namespace apgas::detail
