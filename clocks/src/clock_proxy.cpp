// One clock at one place: registrants, phases, reports (see clock_proxy.hpp).
#include "clock_proxy.hpp"

#include "clock_protocol.hpp"
#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <utility>

namespace apgas::detail {

namespace {
/// A protocol invariant does not hold: a message or a count is wrong. Ends the job loudly (a
/// wrong phase would be worse than no answer).
[[noreturn, gnu::cold]] void broken(const clock_id& id, const char* what) {
  std::fprintf(stderr, "apgas: clock %u:%llu: %s\n", id.home,
               static_cast<unsigned long long>(id.serial), what);
  std::abort();
}
} // namespace

clock_proxy::clock_proxy(clock_protocol& module, clock_id id, std::uint64_t phase,
                         signal default_signal, std::optional<std::uint64_t> first_phase)
    : m_module(module), m_id(id), m_signal(default_signal), m_phase(phase),
      m_first_phase(first_phase) {
  // Every place tallies a distributed clock up to --clock-all-to-all-places places; beyond, the
  // home.
  if (first_phase && (module.all_to_all() || id.home == module.here()))
    m_tally = std::make_unique<clock_tally>(*first_phase, !module.all_to_all());
}

void clock_proxy::retain() noexcept {
  // relaxed: a new reference is made from an existing one (a registration, or the table under
  // its mutex), which orders it before that one's release.
  m_refs.fetch_add(1, std::memory_order_relaxed);
}

void clock_proxy::release() noexcept {
  // Copies first: once the count is zero another thread may free the proxy (see release_idle).
  clock_protocol& module = m_module;
  const clock_id id = m_id;
  // acq_rel: the last release sees every other holder's changes before the proxy is freed.
  if (m_refs.fetch_sub(1, std::memory_order_acq_rel) == 1) module.release_idle(id);
}

bool clock_proxy::idle() const noexcept {
  std::lock_guard guard(m_lock);
  if (m_refs.load(std::memory_order_acquire) != 0 || m_registrants != 0) return false;
  if (!m_first_phase) return true; // a local clock without registrants is over
  // A place that reported in a phase keeps the proxy until it knows the phase has ended: a
  // registration of that phase may still reach it, and its next report must follow the
  // earlier ones (their sequence numbers).
  return m_base == 0 && !current_slot().unreported() && !next_slot().unreported() &&
         current_slot().unresumed == 0 && next_slot().unresumed == 0 &&
         m_phase.load(std::memory_order_relaxed) > m_reported_through &&
         (m_tally == nullptr || m_tally->over());
}

// ---- registrations ---------------------------------------------------------------------------

void clock_proxy::register_maker() noexcept {
  std::lock_guard guard(m_lock);
  ++current_slot().unresumed;
  ++m_registrants;
}

void clock_proxy::count_sent(phase_slot& s, place_id to, std::int64_t n) {
  for (auto& [p, count] : s.sent) {
    if (p != to) continue;
    count = static_cast<std::uint64_t>(static_cast<std::int64_t>(count) + n);
    return;
  }
  if (n > 0) s.sent.emplace_back(to, static_cast<std::uint64_t>(n));
}

void clock_proxy::register_child(std::uint64_t phase, bool resumed) noexcept {
  std::lock_guard guard(m_lock);
  ++m_registrants;
  resumed = account(phase, resumed);
  phase_slot& s = slot_of(phase);
  phase_slot* counted_in = &s;
  if (!resumed) {
    ++s.unresumed;
  } else if (&s == &next_slot() || s.unresumed > 0) {
    // The spawner resumed in `phase`, which has not ended here, and that phase's report here
    // is still to come (a registrant here has not resumed: it holds the report back and with
    // it the phase; or the phase is the next one, which reports only once it is current): the
    // child counts as having resumed in it, as its spawner did.
    ++s.resumed;
    ++s.completed;
    ++s.carried;
  } else {
    // Every registrant here has resumed and the phase is reported: the child starts in the
    // next phase, held open at the tallies by its spawner's reported carry (see drop).
    counted_in = &next_slot();
    ++next_slot().unresumed;
  }
  // A distributed clock's tallies learn of the child as of one sent here (a local clock's
  // home counts its registrants itself, and its first report gives them as its base).
  if (m_first_phase) count_sent(*counted_in, m_module.here(), 1);
}

bool clock_proxy::account(std::uint64_t& phase, bool resumed) const noexcept {
  if (resumed && m_phase.load(std::memory_order_relaxed) > phase) {
    ++phase;
    return false;
  }
  return resumed;
}

void clock_proxy::register_adopted(std::uint64_t phase) noexcept {
  std::lock_guard guard(m_lock);
  const std::uint64_t now = m_phase.load(std::memory_order_relaxed);
  const bool owes_nothing = m_registrants == 0 && !current_slot().unreported() &&
                            !next_slot().unreported() && current_slot().unresumed == 0 &&
                            next_slot().unresumed == 0;
  if (phase > now + 1 || (phase > now && owes_nothing)) {
    // A token of a later phase reaches a place with no business in this clock: it moves on.
    if (!owes_nothing) broken(m_id, "a registration arrived two phases ahead of its place");
    m_slots[0].reset();
    m_slots[1].reset();
    m_phase.store(phase, std::memory_order_release);
  } else if (phase < now) {
    broken(m_id, "a registration arrived for a phase that has ended");
  }
  ++slot_of(phase).unresumed; // its spawner's place counted it as sent here
  ++m_registrants;
}

clock_token clock_proxy::register_remote(std::uint64_t phase, place_id to) {
  std::lock_guard guard(m_lock);
  if (!m_first_phase) {
    // The clock leaves its home: from this phase on every place with registrants reports, and
    // the registrants already here are the home's base (its first report says so).
    m_first_phase = phase;
    m_base = static_cast<std::uint64_t>(current_slot().unresumed) + current_slot().completed;
    m_tally = std::make_unique<clock_tally>(phase, !m_module.all_to_all());
  }
  count_sent(slot_of(phase), to, 1);
  return clock_token{m_id, phase, *m_first_phase, m_signal};
}

void clock_proxy::unregister_remote(std::uint64_t phase, place_id to) noexcept {
  std::lock_guard guard(m_lock);
  count_sent(slot_of(phase), to, -1);
}

void clock_proxy::resume(std::uint64_t phase, const reduce_contribution* c) {
  outbox out;
  {
    std::lock_guard guard(m_lock);
    phase_slot& s = slot_of(phase); // not resumed: the phase has not ended
    if (c != nullptr) s.partial.fold(c->combine, static_cast<const std::byte*>(c->value), c->size);
    --s.unresumed;
    ++s.resumed;
    ++s.completed;
    ++s.carried;
    after_change(out);
  }
  publish(out);
}

void clock_proxy::drop(std::uint64_t phase, bool resumed) noexcept {
  outbox out;
  {
    std::lock_guard guard(m_lock);
    resumed = account(phase, resumed);
    phase_slot& s = slot_of(phase);
    --m_registrants;
    const bool next_empty =
        next_slot().unresumed == 0 && next_slot().resumed == 0 && !next_slot().unreported();
    if (!resumed) { // it leaves its phase as if it had resumed, carrying nothing
      --s.unresumed;
      ++s.completed;
    } else if (s.carried > 0 && (&s == &next_slot() || s.resumed > 1 || next_empty)) {
      // Its carry into the next phase is not reported yet: it just does not carry. (Unless
      // the next phase has registrants here that only the carries of this phase hold open at
      // the tallies: those of children that started resumed. Some carry must then stay; it is
      // the same registrant count whichever stays. A carry from the next slot holds nothing:
      // its children start resumed in it.)
      --s.carried;
      --s.resumed;
    } else {
      // Its carry into the next phase is reported (the tallies count it there), or it holds
      // the next phase open: it leaves in the next phase. Only the current phase reports
      // before it ends here.
      --next_slot().unresumed;
      ++next_slot().completed;
    }
    after_change(out);
  }
  publish(out);
}

bool clock_proxy::wait(std::uint64_t phase, clock_waiter& w) {
  std::lock_guard guard(m_lock);
  if (m_phase.load(std::memory_order_relaxed) > phase) return false;
  phase_slot& s = slot_of(phase);
  w.next = s.waiters;
  s.waiters = &w;
  return true;
}

const clock_partial& clock_proxy::result_of(std::uint64_t phase) const noexcept {
  (void)phase; // pre: phase == m_phase - 1 (see the header)
  return m_last_result;
}

// ---- phases ----------------------------------------------------------------------------------

void clock_proxy::after_change(outbox& out) {
  phase_slot& cur = current_slot();
  if (cur.unresumed > 0) return; // the current phase's registrants here are not all done
  if (!m_first_phase) {
    // A local clock: the last resume of the phase ends it (no registrant left: it is over).
    if (m_registrants == 0) return;
    return end_phase(std::move(cur.partial), out);
  }
  if (!cur.unreported() && m_base == 0) return;
  out.reports.push_back(take_report(cur, m_phase.load(std::memory_order_relaxed)));
  if (m_tally != nullptr) out.tally_after_send = true;
}

clock_report clock_proxy::take_report(phase_slot& s, std::uint64_t phase) {
  clock_report r;
  r.from = m_module.here();
  r.first_phase = *m_first_phase;
  r.phase = phase;
  r.seq = s.next_seq++;
  m_reported_through = std::max(m_reported_through, phase);
  r.base = std::exchange(m_base, 0);
  r.completed = std::exchange(s.completed, 0);
  r.carried = std::exchange(s.carried, 0);
  r.sent = std::move(s.sent);
  s.sent.clear();
  r.partial = s.partial;
  s.partial = clock_partial{};
  return r;
}

void clock_proxy::end_phase(clock_partial&& result, outbox& out) {
  const std::uint64_t phase = m_phase.load(std::memory_order_relaxed);
  if (!result.empty() || !m_last_result.empty()) m_last_result = std::move(result);
  phase_slot& ended = slot_of(phase);
  for (clock_waiter* w = ended.waiters; w != nullptr;) {
    clock_waiter* next = w->next; // read before it may run (it is woken after the unlock)
    out.wake.push_back(w);
    w = next;
  }
  // Registrants that resumed here carry into the next phase, beside those already in it; the
  // ended phase's slot is the one after next's.
  slot_of(phase + 1).unresumed += static_cast<std::int64_t>(ended.resumed);
  ended.reset();
  // release: an advancing activity that sees the new phase (ended()) sees m_last_result.
  m_phase.store(phase + 1, std::memory_order_release);
  m_module.counters().phases_ended.fetch_add(1, std::memory_order_relaxed); // a statistic
  // The new phase may be quiet here already (its registrants here all dropped early).
  if (m_first_phase) after_change(out);
}

void clock_proxy::apply_ends(std::vector<clock_phase_end>& ends, outbox& out) {
  // The home of a clock beyond --clock-all-to-all-places tells the other places.
  const bool releases = !m_module.all_to_all() && m_id.home == m_module.here();
  for (clock_phase_end& end : ends) {
    if (releases) out.releases.push_back(end);
    const std::uint64_t now = m_phase.load(std::memory_order_relaxed);
    if (end.phase < now) continue; // this place moved past it (it had no registrant in it)
    if (end.phase > now) {
      // This place had no business in the phases between: catch up.
      if (m_registrants != 0 || current_slot().waiters != nullptr)
        broken(m_id, "a phase ended before an earlier one at a place with registrants");
      m_slots[0].reset();
      m_slots[1].reset();
      m_phase.store(end.phase, std::memory_order_relaxed);
    }
    end_phase(std::move(end.result), out);
  }
}

void clock_proxy::tally(const clock_report& r, outbox& out) {
  // apply_ends may take another report (a phase quiet here at once), which tallies again.
  std::vector<clock_phase_end> ends = std::move(m_ends);
  ends.clear();
  m_tally->apply(r, ends);
  apply_ends(ends, out);
  m_ends = std::move(ends);
}

void clock_proxy::on_report(const clock_report& r) {
  outbox out;
  {
    std::lock_guard guard(m_lock);
    if (m_tally == nullptr) broken(m_id, "a report reached a place that does not tally");
    tally(r, out);
  }
  publish(out);
}

void clock_proxy::on_release(clock_phase_end end) {
  outbox out;
  {
    std::lock_guard guard(m_lock);
    std::vector<clock_phase_end> ends(1, std::move(end));
    apply_ends(ends, out);
  }
  publish(out);
}

void clock_proxy::publish(outbox& out) {
  out.reports.for_each([&](const clock_report& r) { m_module.send_report(*this, r); });
  out.releases.for_each([&](const clock_phase_end& end) { m_module.send_release(*this, end); });
  if (out.tally_after_send) {
    // A report tallied after others may have tallied a later one of this place: the tally
    // applies a place's reports in the order they were taken (their seq).
    outbox more;
    {
      std::lock_guard guard(m_lock);
      out.reports.for_each([&](const clock_report& r) { tally(r, more); });
    }
    publish(more);
  }
  if (out.wake.empty()) return;
  // Every waiter of the phase at once: one lock of the scheduler's queue for all of them. (A
  // buffer of this thread's: injecting never comes back here.)
  thread_local std::vector<deque_item> items;
  items.clear();
  out.wake.for_each([&](clock_waiter* w) { items.push_back(as_independent(w->activity)); });
  m_module.sched().inject_all(items);
}

std::string clock_proxy::describe() const {
  std::lock_guard guard(m_lock);
  std::string s =
      fmt::format("    clock {}:{} phase {}{}: {} registrant(s) here, {} not resumed", m_id.home,
                  m_id.serial, m_phase.load(std::memory_order_relaxed),
                  m_first_phase ? "" : " (local)", m_registrants, current_slot().unresumed);
  if (m_tally != nullptr &&
      m_tally->oldest_open_phase() == m_phase.load(std::memory_order_relaxed)) {
    const auto waiting = m_tally->waiting_for();
    if (!waiting.empty()) s += "; the phase waits for";
    for (const auto& [p, n] : waiting) s += fmt::format(" place {} ({})", p, n);
  }
  return s + "\n";
}

} // namespace apgas::detail
