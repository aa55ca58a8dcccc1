// The lifeline protocol's state at one place (see apgas/detail/glb_place.hpp for the protocol
// and its termination argument). Nothing here sends or polls while holding the place's lock: a
// send may deliver messages (back-pressure), and their handlers take the lock.
#include "apgas/detail/glb_place.hpp"

#include "apgas/detail/glb_checkpoint.hpp"
#include "apgas/detail/message_dispatcher.hpp"
#include "apgas/detail/scheduler.hpp"
#include "apgas/exceptions.hpp"

#include "glb_module.hpp"
#include <fmt/format.h>

#include <algorithm>
#include <cstdio>

namespace apgas::detail::glb {

place_base::place_base(std::uint64_t run, const apgas::glb::parameters& resolved,
                       message_dispatcher& dispatcher)
    : m_run(run), m_params(resolved), m_dispatcher(dispatcher),
      m_module(glb_module::of(dispatcher)), m_here(dispatcher.here()),
      m_places(dispatcher.places()), m_rng(0x6A09E667F3BCC909ULL ^ (run << 32) ^ dispatcher.here()),
      m_workers(dispatcher.sched().worker_count()) {
  if (m_places > 1) {
    m_lifelines = lifelines_of(m_here, m_places, m_params.lifeline_base, m_params.lifeline_count);
    m_victims = victims_of(m_here, m_places, m_params.random_victims, m_rng);
  }
  m_registered.assign(m_lifelines.size(), false);
  m_stats.place = m_here;
  m_started_at = m_idle_since = clock::now();
}

place_base::~place_base() {
  if (m_writer.joinable()) m_writer.join(); // a part of the run's last checkpoint
}

// ---- working activities ----------------------------------------------------------------------

void place_base::note_working_locked() noexcept {
  if (m_working++ != 0) return;
  const clock::time_point now = clock::now();
  m_idle += now - m_idle_since;
  // The trace's clock is this steady clock; a place that had not worked yet was not idle.
  if (g_trace_on && m_idle_since != clock::time_point{}) [[unlikely]]
    trace_record(trace_event{
        std::chrono::duration_cast<std::chrono::nanoseconds>(m_idle_since.time_since_epoch())
            .count(),
        std::chrono::duration_cast<std::chrono::nanoseconds>(now.time_since_epoch()).count(), 0, 0,
        0, 0, trace_kind::glb_idle});
}

void place_base::begin_start_work(unsigned bags) {
  promise_base* waiter = nullptr;
  {
    std::lock_guard guard(m_lock);
    m_started = true;
    if (bags > 0) {
      note_working_locked();
      m_working += bags - 1;
    }
    waiter = parked_waiter_locked();
  }
  resume_waiter(waiter);
}

void place_base::begin_local_work() {
  std::lock_guard guard(m_lock);
  ++m_working; // the caller works: the place was not idle
  ++m_stats.local_splits;
}

void place_base::poll() noexcept { (void)m_dispatcher.poll(); }

void place_base::fire_alarm_if_due() noexcept { m_module.tick(); }

void place_base::set_requests_locked() noexcept {
  // relaxed: a hint for the working activities, which take the lock before acting on it.
  m_requests.store(static_cast<std::uint32_t>(m_random_thieves.size() + m_lifeline_thieves.size()),
                   std::memory_order_relaxed);
}

std::optional<request> place_base::take_request() {
  std::lock_guard guard(m_lock);
  std::optional<request> r;
  if (!m_random_thieves.empty()) {
    r = request{m_random_thieves.front(), false}; // the longest waiting first
    m_random_thieves.erase(m_random_thieves.begin());
  } else if (!m_lifeline_thieves.empty()) {
    r = request{m_lifeline_thieves.back(), true};
    m_lifeline_thieves.pop_back();
  }
  set_requests_locked();
  return r;
}

void place_base::give_back(request r) {
  {
    std::lock_guard guard(m_lock);
    if (r.lifeline) {
      if (std::find(m_lifeline_thieves.begin(), m_lifeline_thieves.end(), r.thief) ==
          m_lifeline_thieves.end())
        m_lifeline_thieves.push_back(r.thief);
      set_requests_locked();
      return;
    }
    // Another working activity may split its bag; the last one to end refuses it otherwise.
    if (m_working > 1 && !m_failed && !m_frozen) {
      m_random_thieves.push_back(r.thief);
      set_requests_locked();
      return;
    }
  }
  send(r.thief, message::refusal);
}

void place_base::send_loot(place_id thief, std::uint64_t items, std::span<const std::byte> bag) {
  {
    std::lock_guard guard(m_lock);
    ++m_stats.steals_served;
    m_stats.loot_sent_items += items;
    m_stats.loot_sent_bytes += bag.size();
  }
  send(thief, message::loot, bag);
}

void place_base::note_lifeline_loot(std::uint64_t items, std::size_t bytes) {
  std::lock_guard guard(m_lock);
  ++m_stats.lifeline_loot_sent;
  m_stats.loot_sent_items += items;
  m_stats.loot_sent_bytes += bytes;
}

after_work place_base::end_work() {
  std::vector<place_id> refused;
  after_work next = after_work::end;
  promise_base* waiter = nullptr;
  {
    std::lock_guard guard(m_lock);
    if (--m_working == 0) {
      m_idle_since = clock::now();
      // Refused under the lock that makes a request arriving from now on refused at once: no
      // random thief is left waiting at a place without working activities.
      refused.swap(m_random_thieves);
      set_requests_locked();
      if (m_places > 1 && !m_thief && !m_failed) {
        m_thief = true;
        next = after_work::steal;
      }
    }
    waiter = parked_waiter_locked(); // the others may all be parked
  }
  resume_waiter(waiter);
  refuse_all(refused);
  return next;
}

void place_base::fail(bool was_working, bool was_thief) noexcept {
  std::vector<place_id> refused;
  promise_base* waiter = nullptr;
  {
    std::lock_guard guard(m_lock);
    m_failed = true;
    if (was_working && --m_working == 0) m_idle_since = clock::now();
    if (was_thief) m_thief = false;
    refused.swap(m_random_thieves);
    set_requests_locked();
    waiter = parked_waiter_locked();
  }
  try {
    resume_waiter(waiter);
    refuse_all(refused);
  } catch (...) { // the network failed too: the job ends with the transport's error
  }
}

void place_base::refuse_all(std::vector<place_id>& thieves) {
  for (place_id t : thieves) send(t, message::refusal);
}

// ---- the thief --------------------------------------------------------------------------------

bool place_base::keep_stealing() {
  promise_base* waiter = nullptr;
  {
    std::lock_guard guard(m_lock);
    if (m_working == 0 && !m_failed) return true;
    m_thief = false; // the place works again (or failed): its thief stops here
    waiter = parked_waiter_locked();
  }
  resume_waiter(waiter);
  return false;
}

place_id place_base::pick_victim() noexcept {
  return m_victims[static_cast<std::size_t>(m_rng.below(m_victims.size()))];
}

std::coroutine_handle<> place_base::steal_awaiter::suspend(promise_base& thief) {
  m_place.m_answer.reset();
  // release: the answer's handler (acquire) sees m_answer reset.
  m_place.m_waiting_thief.store(&thief, std::memory_order_release);
  {
    std::lock_guard guard(m_place.m_lock);
    ++m_place.m_stats.steals_attempted;
  }
  // Count what this worker leaves behind before the answer can resume the thief elsewhere.
  if (g_trace_on) [[unlikely]]
    m_wait.begin(); // before the request leaves: the answer may resume the thief at once
  const std::coroutine_handle<> next = t_worker->suspend_for_external();
  m_place.m_dispatcher.expect_message();  // idle workers poll for the answer
  m_place.send(m_victim, message::steal); // from here on, the thief may be resumed
  return next;
}

void place_base::on_answer(std::optional<std::span<const std::byte>> bag) {
  // acquire: pairs with the thief's release (see steal_awaiter::suspend).
  promise_base* thief = m_waiting_thief.exchange(nullptr, std::memory_order_acquire);
  if (thief == nullptr) [[unlikely]]
    throw transport_error("apgas: a GLB answer to a steal nobody waits for");
  if (bag) m_answer.emplace(bag->begin(), bag->end());
  m_dispatcher.expected_message_arrived();
  m_dispatcher.sched().inject(as_independent(thief));
}

void place_base::found_loot(std::uint64_t items, std::size_t bytes) {
  std::lock_guard guard(m_lock);
  ++m_stats.steals_successful;
  m_stats.loot_received_items += items;
  m_stats.loot_received_bytes += bytes;
  m_thief = false;
  note_working_locked();
}

void place_base::give_up() {
  std::vector<place_id> buddies;
  promise_base* waiter = nullptr;
  {
    std::lock_guard guard(m_lock);
    m_thief = false;
    waiter = parked_waiter_locked();
    if (m_working == 0 && !m_failed) { // else work arrived meanwhile
      for (std::size_t i = 0; i < m_lifelines.size(); ++i) {
        if (m_registered[i]) continue; // at most one registration per lifeline at a time
        m_registered[i] = true;
        buddies.push_back(m_lifelines[i]);
      }
      m_stats.lifeline_requests_sent += buddies.size();
    }
  }
  resume_waiter(waiter);
  register_on(buddies);
}

void place_base::start_quiet() {
  if (m_places == 1) return;
  std::vector<place_id> buddies;
  {
    std::lock_guard guard(m_lock);
    for (std::size_t i = 0; i < m_lifelines.size(); ++i) {
      m_registered[i] = true;
      buddies.push_back(m_lifelines[i]);
    }
    // The tree parent feeds this place once, at the start (unless it is a lifeline already).
    if (m_params.tree && m_here > 0 &&
        std::find(buddies.begin(), buddies.end(), tree_parent_of(m_here)) == buddies.end())
      buddies.push_back(tree_parent_of(m_here));
    m_stats.lifeline_requests_sent += buddies.size();
  }
  register_on(buddies);
}

void place_base::register_on(std::vector<place_id>& buddies) {
  for (place_id b : buddies) {
    if (g_trace_on) [[unlikely]] {
      const std::int64_t now = trace_now();
      trace_record(trace_event{now, now, b, 0, 0, 0, trace_kind::glb_lifeline});
    }
    send(b, message::lifeline);
  }
}

void place_base::lifeline_loot_arrived(place_id from, std::uint64_t items, std::size_t bytes) {
  std::lock_guard guard(m_lock);
  for (std::size_t i = 0; i < m_lifelines.size(); ++i)
    if (m_lifelines[i] == from) m_registered[i] = false; // fed: it may register there again
  ++m_stats.lifeline_activations;
  if (g_trace_on) [[unlikely]] {
    const std::int64_t now = trace_now();
    trace_record(trace_event{now, now, from, items, 0, 0, trace_kind::glb_lifeline_loot});
  }
  m_stats.loot_received_items += items;
  m_stats.loot_received_bytes += bytes;
  note_working_locked();
}

// ---- checkpoints ------------------------------------------------------------------------------

bool place_base::parked_locked() const noexcept {
  return m_frozen && m_started && !m_thief && m_working == m_parked.size();
}

promise_base* place_base::parked_waiter_locked() noexcept {
  if (m_parked_waiter == nullptr || !parked_locked()) return nullptr;
  return std::exchange(m_parked_waiter, nullptr);
}

void place_base::resume_waiter(promise_base* waiter) {
  if (waiter != nullptr) m_dispatcher.sched().inject(as_independent(waiter));
}

std::coroutine_handle<> place_base::suspend_parked(std::coroutine_handle<> me, promise_base& p,
                                                   void* bag) {
  promise_base* waiter = nullptr;
  std::coroutine_handle<> next;
  {
    std::lock_guard guard(m_lock);
    if (!m_frozen) return me; // thawed since the hint was read: go on
    // Counted as suspended before thaw() can see it (and resume it on another worker).
    next = t_worker->suspend_for_external();
    m_parked.emplace_back(&p, bag);
    waiter = parked_waiter_locked();
  }
  resume_waiter(waiter);
  return next;
}

std::coroutine_handle<> place_base::suspend_until_parked(std::coroutine_handle<> me,
                                                         promise_base& p, void*) {
  std::lock_guard guard(m_lock);
  if (parked_locked()) return me;
  m_parked_waiter = &p;
  return t_worker->suspend_for_external();
}

void place_base::freeze() {
  std::vector<place_id> refused;
  {
    std::lock_guard guard(m_lock);
    m_frozen = true;
    // relaxed: a hint; park() rechecks m_frozen under the lock.
    m_freeze_hint.store(true, std::memory_order_relaxed);
    refused.swap(m_random_thieves); // a parked place serves nobody: they steal elsewhere
    set_requests_locked();
  }
  refuse_all(refused);
}

void place_base::freeze_everywhere() {
  if (m_here == 0) on_freeze();
  else {
    send(0, message::freeze);
    freeze(); // before place 0's message comes back down: the caller is about to wait here
  }
}

void place_base::on_freeze() {
  for (place_id c : tree_children_of(m_here, m_places)) send(c, message::freeze);
  freeze();
}

place_base::freeze_state place_base::frozen_state() const {
  std::lock_guard guard(m_lock);
  return freeze_state{m_stats.lifeline_loot_sent, m_stats.lifeline_activations, m_failed};
}

std::vector<void*> place_base::parked_bags() const {
  std::lock_guard guard(m_lock);
  std::vector<void*> bags;
  bags.reserve(m_parked.size());
  for (const auto& [activity, bag] : m_parked) bags.push_back(bag);
  return bags;
}

void place_base::thaw() {
  std::vector<std::pair<promise_base*, void*>> parked;
  {
    std::lock_guard guard(m_lock);
    m_frozen = false;
    // relaxed: a hint; the parked activities are resumed below, through the scheduler.
    m_freeze_hint.store(false, std::memory_order_relaxed);
    parked.swap(m_parked);
  }
  for (const auto& [activity, bag] : parked) resume_waiter(activity);
}

void place_base::start_writing_part(std::string dir, std::uint64_t seq,
                                    std::vector<std::byte> bytes) {
  if (m_writer.joinable()) m_writer.join(); // not expected: the coordinator joined it
  m_write_failure = nullptr;
  m_writer = std::thread([this, dir = std::move(dir), seq, bytes = std::move(bytes)] {
    try {
      const auto start = clock::now();
      checkpoint::part_record r = checkpoint::write_part(dir, seq, m_here, bytes);
      m_written = {std::move(r), std::chrono::duration<double>(clock::now() - start).count()};
    } catch (...) {
      m_write_failure = std::current_exception();
    }
  });
}

std::pair<checkpoint::part_record, double> place_base::finish_writing_part() {
  if (m_writer.joinable()) m_writer.join(); // orders the thread's writes before our reads
  if (m_write_failure) std::rethrow_exception(std::exchange(m_write_failure, nullptr));
  return std::exchange(m_written, {});
}

// ---- handlers ---------------------------------------------------------------------------------

void place_base::on_steal_request(place_id from) {
  {
    std::lock_guard guard(m_lock);
    ++m_stats.steals_received;
    if (m_working > 0 && !m_failed && !m_frozen) {
      m_random_thieves.push_back(from); // a working activity answers it
      set_requests_locked();
      return;
    }
  }
  send(from, message::refusal);
}

void place_base::on_lifeline_request(place_id from) {
  std::lock_guard guard(m_lock);
  ++m_stats.lifeline_requests_received;
  if (std::find(m_lifeline_thieves.begin(), m_lifeline_thieves.end(), from) ==
      m_lifeline_thieves.end())
    m_lifeline_thieves.push_back(from);
  set_requests_locked();
}

void place_base::send(place_id to, message what, std::span<const std::byte> payload) {
  m_module.send(to, what, m_run, payload);
}

// ---- the end of the run ------------------------------------------------------------------------

std::uint64_t place_base::items_so_far() const noexcept {
  std::uint64_t n = 0;
  // relaxed: a figure for a progress line, or read after the run's finish ended.
  for (const worker_slot& w : m_workers) n += w.items.load(std::memory_order_relaxed);
  return n;
}

std::string place_base::describe() const {
  std::lock_guard guard(m_lock);
  std::string s = fmt::format("    run {}: {} items processed here, {} working activit{}{}{}\n",
                              m_run, items_so_far(), m_working, m_working == 1 ? "y" : "ies",
                              m_thief ? ", stealing" : "", m_failed ? ", failed" : "");
  s += fmt::format("    {} random thie{} waiting here, {} registered on this place's lifeline\n",
                   m_random_thieves.size(), m_random_thieves.size() == 1 ? "f" : "ves",
                   m_lifeline_thieves.size());
  std::string on;
  for (std::size_t i = 0; i < m_lifelines.size(); ++i)
    if (m_registered[i]) on += fmt::format(" {}", m_lifelines[i]);
  s += fmt::format("    registered on the lifelines of:{}\n", on.empty() ? " none" : on);
  return s;
}

void place_base::fail_no_progress(const std::type_info& bag, std::uint64_t rounds) const {
  throw usage_error(fmt::format(
      "apgas: place {}: glb: the process() of bag type {} processed no item {} times in a row "
      "while empty() was false: a bag that is not empty must process at least one item a call",
      m_here, apgas::glb::detail::type_name(bag), rounds));
}

apgas::glb::place_stats place_base::stats() const {
  std::lock_guard guard(m_lock);
  apgas::glb::place_stats s = m_stats;
  s.items = items_so_far();
  const clock::time_point now = clock::now();
  clock::duration idle = m_idle;
  if (m_working == 0) idle += now - m_idle_since;
  const clock::duration total = now - m_started_at;
  s.idle_seconds = std::chrono::duration<double>(idle).count();
  s.busy_seconds = std::chrono::duration<double>(total - idle).count();
  return s;
}

} // namespace apgas::detail::glb
