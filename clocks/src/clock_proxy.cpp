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
  m_path.proxy = this;
  if (module.group_lanes() != 0) m_lane = clock_lanes::lane_of(id, module.group_lanes());
}

clock_proxy::~clock_proxy() {
  free_lane();
  // relaxed: statistics.
  m_module.counters().phases_collective.fetch_add(
      m_phases_collective.load(std::memory_order_relaxed), std::memory_order_relaxed);
}

bool clock_proxy::hold_lane() {
  if (!m_lane_held && m_module.group_lanes() != 0)
    m_lane_held = m_module.lanes().hold(m_lane, m_id);
  return m_lane_held;
}

void clock_proxy::free_lane() noexcept {
  if (!m_lane_held) return;
  m_module.lanes().free(m_lane, m_id);
  m_lane_held = false;
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

bool clock_proxy::resume(std::uint64_t phase, const reduce_contribution* c, bool advancing) {
  m_lock.lock();
  phase_slot& s = slot_of(phase); // not resumed: the phase has not ended
  if (c != nullptr) s.partial.fold(c->combine, static_cast<const std::byte*>(c->value), c->size);
  --s.unresumed;
  ++s.resumed;
  ++s.completed;
  ++s.carried;
  // The collective path's common case, without the outbox: the last resume of a stable phase.
  if (m_path.active && s.unresumed == 0 && &s == &current_slot() && cast_stable_vote(advancing)) {
    m_lock.unlock();
    start_collective();
    return advancing;
  }
  outbox out;
  out.advancing = advancing;
  after_change(out);
  m_lock.unlock();
  publish(out);
  return advancing && out.start_collective;
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
    return end_phase(std::move(cur.partial), out, nullptr);
  }
  if (!cur.unreported() && m_base == 0) return;
  if (m_path.active) return cast_vote(out);
  out.reports.push_back(take_report(cur, m_phase.load(std::memory_order_relaxed)));
  if (m_tally != nullptr) out.tally_after_send = true;
}

bool clock_proxy::cast_stable_vote(bool watched) {
  const std::uint64_t phase = m_phase.load(std::memory_order_relaxed);
  phase_slot& s = current_slot();
  // Stable: this place's one report of the phase would change nothing (clock_tally.hpp).
  const std::uint64_t n = m_path.registrants;
  if (m_path.in_flight || s.next_seq != 0 || m_base != 0 || !s.sent.empty() || s.completed != n ||
      s.carried != n || n == 0 || s.partial.failed())
    return false;
  // The report is taken without being built (once per phase): its counts are known, and only
  // its partial is kept, for a fallback (see stable_report).
  m_path.vote.set(true, s.partial);
  if (!s.partial.empty()) {
    m_path.stable_partial = s.partial;
    s.partial.clear();
  }
  m_path.stable_taken = true;
  s.next_seq = 1;
  s.completed = 0;
  s.carried = 0;
  m_reported_through = std::max(m_reported_through, phase);
  begin_collective(watched);
  return true;
}

void clock_proxy::begin_collective(bool watched) noexcept {
  m_path.in_flight = true;
  m_path.error = nullptr;
  // relaxed: the allreduce's start (under the network's lock) orders it before done(). An
  // advancing registrant watches it from the start: the last member to arrive completes it
  // inside the start, and nothing need be queued then.
  m_path.state.store(watched ? collective_path::k_watched : collective_path::k_running,
                     std::memory_order_relaxed);
}

void clock_proxy::start_collective() {
  m_module.start_collective(m_path.members, m_path.my_index, m_lane, m_path.vote, m_path);
}

void clock_proxy::cast_vote(outbox& out) {
  const std::uint64_t phase = m_phase.load(std::memory_order_relaxed);
  phase_slot& s = current_slot();
  if (m_path.in_flight) {
    // A registration of the phase arrived after the vote: its sender's vote is not stable,
    // so the phase falls back, and this report goes after the first.
    m_path.held.push_back(take_report(s, phase));
    return;
  }
  if (!cast_stable_vote(out.advancing)) {
    clock_report r = take_report(s, phase);
    m_path.vote.set(false, r.partial);
    m_path.held.push_back(std::move(r));
    begin_collective(out.advancing);
  }
  out.start_collective = true;
}

clock_report clock_proxy::stable_report(std::uint64_t phase) {
  clock_report r;
  r.from = m_module.here();
  r.first_phase = *m_first_phase;
  r.phase = phase;
  r.seq = 0;
  r.completed = m_path.registrants;
  r.carried = m_path.registrants;
  r.partial = std::move(m_path.stable_partial);
  m_path.stable_partial.clear();
  r.last_collective = m_last_collective;
  r.lane_ok = m_lane_held;
  return r;
}

void clock_proxy::choose_path(const clock_phase_end& decision, std::uint64_t carried) {
  const place_id here = m_module.here();
  const auto it = std::lower_bound(decision.members.begin(), decision.members.end(), here);
  const bool member = decision.stable && it != decision.members.end() && *it == here;
  if (member && m_lane_held && carried != 0) {
    if (!m_path.active) {
      m_path.active = true;
      m_path.members = decision.members;
      m_path.my_index = static_cast<std::size_t>(it - decision.members.begin());
    }
    m_path.registrants = carried;
    return;
  }
  m_path.active = false;
  free_lane();
}

bool clock_proxy::complete_stable_phase() {
  clock_waiter* waiters = nullptr;
  {
    std::lock_guard guard(m_lock);
    // acquire: pairs with done()'s exchange (the result, the error).
    if (!m_path.in_flight ||
        m_path.state.load(std::memory_order_acquire) != collective_path::k_done)
      return true; // nothing to complete (done already, or not yet told)
    const std::uint64_t phase = m_phase.load(std::memory_order_relaxed);
    phase_slot& ended = slot_of(phase);
    phase_slot& next = slot_of(phase + 1);
    // Not the common case: a failure, a fallback, or a next phase that is quiet here already
    // (its registrants all dropped early), which the general code handles.
    if (m_path.error || m_path.vote.stable == 0 || !m_path.stable_taken || !m_path.held.empty() ||
        ended.unresumed != 0 || next.unresumed + static_cast<std::int64_t>(ended.resumed) == 0)
      return false;
    m_path.in_flight = false;
    m_path.stable_taken = false;
    m_path.stable_partial.clear();
    m_last_collective = phase;
    // relaxed: a statistic; only this thread writes it (under m_lock): no read-modify-write.
    m_phases_collective.store(m_phases_collective.load(std::memory_order_relaxed) + 1,
                              std::memory_order_relaxed);
    if (m_path.vote.has_value != 0 || !m_last_result.empty())
      m_path.vote.result_into(m_last_result);
    waiters = ended.waiters;
    next.unresumed += static_cast<std::int64_t>(ended.resumed);
    ended.reset();
    // release: an advancing activity that sees the new phase (ended()) sees m_last_result.
    m_phase.store(phase + 1, std::memory_order_release);
  }
  if (waiters == nullptr) return true;
  // Every waiter of the phase at once (a buffer of this thread's, as in publish).
  thread_local std::vector<deque_item> items;
  items.clear();
  for (clock_waiter* w = waiters; w != nullptr;) {
    clock_waiter* after = w->next; // read before it may run
    items.push_back(as_independent(w->activity));
    w = after;
  }
  m_module.sched().inject_all(items);
  return true;
}

void clock_proxy::collective_path::done(std::exception_ptr e) noexcept {
  error = std::move(e);
  // acq_rel: publishes the error and the result to the completer (see state).
  if (state.exchange(k_done, std::memory_order_acq_rel) == k_running)
    proxy->module().queue_completion(*proxy);
}

void clock_proxy::complete_collective() {
  if (complete_stable_phase()) return;
  outbox out;
  {
    std::lock_guard guard(m_lock);
    // acquire: pairs with done()'s exchange (the result, the error).
    if (!m_path.in_flight ||
        m_path.state.load(std::memory_order_acquire) != collective_path::k_done)
      return;
    const std::uint64_t phase = m_phase.load(std::memory_order_relaxed);
    m_path.in_flight = false;
    if (m_path.error) [[unlikely]] {
      try {
        std::rethrow_exception(m_path.error);
      } catch (const std::exception& e) {
        std::fprintf(stderr, "apgas: clock %u:%llu: a phase's group allreduce failed: %s\n",
                     m_id.home, static_cast<unsigned long long>(m_id.serial), e.what());
        std::abort(); // a lost phase would hang the job: end it, loudly
      }
    }
    const bool taken_stable = std::exchange(m_path.stable_taken, false);
    if (m_path.vote.stable != 0) {
      // Every member's part of the phase was stable: it ends here, as it does at the others.
      if (!taken_stable || !m_path.held.empty() || current_slot().unresumed != 0)
        broken(m_id, "a phase ended on the collective path with a registrant still in it");
      m_path.stable_partial.clear();
      m_last_collective = phase;
      // relaxed: a statistic; only this thread writes it (under m_lock): no read-modify-write.
      m_phases_collective.store(m_phases_collective.load(std::memory_order_relaxed) + 1,
                                std::memory_order_relaxed);
      clock_partial result;
      m_path.vote.result_into(result);
      end_phase(std::move(result), out, nullptr);
    } else {
      // Some member's was not: the phase ends by the general protocol, and so does this place's
      // part of it (the tallies skip to it, see clock_tally::skip_to).
      if (taken_stable) out.reports.push_back(stable_report(phase)); // it was the first
      m_path.active = false;
      free_lane();
      for (clock_report& r : m_path.held) out.reports.push_back(std::move(r));
      m_path.held.clear();
      if (m_tally != nullptr) out.tally_after_send = true;
      m_module.counters().collective_fallbacks.fetch_add(1, std::memory_order_relaxed);
    }
  }
  publish(out);
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
  s.partial.clear();
  r.last_collective = m_last_collective;
  // The lane is held only for a report that may make its phase stable.
  r.lane_ok = r.seq == 0 && r.base == 0 && r.sent.empty() && r.completed == r.carried &&
              r.carried != 0 && hold_lane();
  return r;
}

void clock_proxy::end_phase(clock_partial&& result, outbox& out, const clock_phase_end* decision) {
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
  const std::uint64_t carried = ended.resumed;
  slot_of(phase + 1).unresumed += static_cast<std::int64_t>(carried);
  ended.reset();
  if (decision != nullptr) choose_path(*decision, carried);
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
    end_phase(std::move(end.result), out, &end);
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
  if (out.start_collective) start_collective();
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
