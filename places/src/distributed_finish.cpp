// The distributed finish protocol (see distributed_finish.hpp): home links, arrivals and
// proxies, reports, asks and cleanups.
#include "distributed_finish.hpp"

#include "apgas/detail/exception_codec.hpp"
#include "apgas/detail/finish_name.hpp"
#include "apgas/detail/message_dispatcher.hpp"
#include "apgas/detail/scheduler.hpp"
#include "apgas/place.hpp"
#include "apgas/serialization.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>

namespace apgas::detail {

namespace {

proxy* proxy_of(const finish_state& f) noexcept {
  return static_cast<proxy*>(static_cast<proxy_link*>(f.m_remote));
}
home_link* home_link_of(const finish_state& f) noexcept {
  return static_cast<home_link*>(f.m_remote);
}

finish_id get_finish_id(byte_reader& r) {
  finish_id id;
  id.home = deserialize<place_id>(r);
  id.serial = deserialize<std::uint64_t>(r);
  return id;
}
/// The exceptions gathered in `fs` (a report carries them home); `fs` forgets them.
std::vector<std::exception_ptr> take_errors(finish_state& fs) {
  std::lock_guard guard(fs.m_exceptions_lock);
  if (fs.m_exceptions == nullptr) return {};
  std::vector<std::exception_ptr> errors = std::move(*fs.m_exceptions);
  fs.discard_exceptions();
  return errors;
}
/// A report's payload (its kind and its sender are the tree's, see tree_messaging.hpp).
std::vector<std::byte> encode_report(const finish_report& rep,
                                     const std::vector<std::exception_ptr>& errors) {
  std::vector<std::byte> bytes;
  byte_writer w(bytes);
  serialize_all(w, rep.id.home, rep.id.serial, rep.seq, rep.completed, rep.sent);
  w.write_length(errors.size());
  for (const std::exception_ptr& e : errors) write_exception(w, e, rep.from);
  return bytes;
}

} // namespace

distributed_finish::distributed_finish(message_dispatcher& dispatcher, tree_messaging& tree,
                                       std::chrono::microseconds report_hold_max)
    : m_dispatcher(dispatcher), m_tree(tree), m_sched(dispatcher.sched()),
      m_here(dispatcher.here()), m_places(dispatcher.places()),
      m_kind_report(dispatcher.add_handler<&distributed_finish::on_report>(*this, "finish report")),
      m_kind_ask(dispatcher.add_handler<&distributed_finish::on_ask>(*this, "finish ask")),
      m_kind_cleanup(
          dispatcher.add_handler<&distributed_finish::on_cleanup>(*this, "finish cleanup")),
      m_report_hold_max(report_hold_max) {
  dispatcher.before_each_poll<&distributed_finish::send_due_reports>(*this);
  dispatcher.after_each_delivery<&distributed_finish::flush_arrivals>(*this);
  dispatcher.expects_messages_when<&distributed_finish::reports_waiting>(*this);
  dispatcher.describes_state_with<&distributed_finish::describe_open_finishes>(
      *this, "open distributed finishes homed here");
  // Each hook finds its module through the finish's link, so that several places can share a
  // process (tests on the fake network). Set before any activity can reach another place.
  g_remote_hooks.end_proxy_strands = [](finish_state& f, std::uint64_t n) noexcept {
    proxy* px = proxy_of(f);
    px->owner->end_strands(*px, n);
  };
  g_remote_hooks.release_remote = [](finish_state& f) noexcept {
    home_link_of(f)->owner->release_home(f);
  };
  g_remote_hooks.home_quiet = [](finish_state& f) noexcept {
    // acquire: pairs with create_home_link's release (the link is there: the remote part is
    // open, and the caller's acquire of the count saw it open, see open_remote_part).
    auto* link =
        static_cast<home_link*>(std::atomic_ref<void*>(f.m_remote).load(std::memory_order_acquire));
    link->owner->on_home_quiet(f);
  };
}

distributed_finish::~distributed_finish() {
  std::lock_guard guard(m_proxies_mutex);
  for (auto& [id, px] : m_proxies) delete px; // none remain after a clean run
}

// ---- sending ---------------------------------------------------------------------------------

void throw_spmd_nested() {
  throw std::logic_error("apgas: an activity of a finish_pattern::spmd finish started a "
                         "remote activity in it (use a nested finish for that)");
}

void throw_spmd_second(place_id to) {
  throw std::logic_error(fmt::format("apgas: a finish_pattern::spmd finish started a second "
                                     "activity at place {}",
                                     to));
}

void open_remote_part(home_link& link, finish_state& f) noexcept {
  f.open_remote_part();
  link.owner->on_remote_part_opened();
}

void distributed_finish::on_remote_part_opened() noexcept {
  m_dispatcher.expect_message(); // its reports; closed again in apply_report
}

const finish_id& distributed_finish::count_send(finish_state& f, place_id to) {
  if (const finish_id* id = count_linked_send(f, to)) [[likely]]
    return *id;
  create_home_link(f); // the finish's first remote activity
  return *count_linked_send(f, to);
}

finish_id distributed_finish::message_id_of(finish_state& f) {
  if (f.m_reopenable) return proxy_of(f)->id;
  // acquire: see count_linked_send.
  if (void* link = std::atomic_ref<void*>(f.m_remote).load(std::memory_order_acquire))
    return static_cast<home_link*>(link)->id;
  return create_home_link(f).id;
}

home_link& distributed_finish::create_home_link(finish_state& f) {
  // Two strands of f may race to create the link: the homes mutex decides.
  std::lock_guard guard(m_homes_mutex);
  if (f.m_remote == nullptr) {
    const std::uint64_t spmd_bit = f.m_pattern == finish_pattern::spmd ? k_spmd_serial_bit : 0;
    auto* link = new home_link(*this, finish_id{m_here, m_next_serial++ | spmd_bit}, m_places);
    m_homes.emplace(link->id.serial, &f);
    // release: a strand that loads the link with acquire (count_linked_send) sees it
    // constructed and registered.
    std::atomic_ref<void*>(f.m_remote).store(link, std::memory_order_release);
    m_counters.finishes_distributed.fetch_add(1, std::memory_order_relaxed); // a statistic
  }
  return *home_link_of(f);
}

// ---- arrivals: activities of a finish reach a place; the first opens its proxy -----------------

proxy& distributed_finish::find_proxy(const finish_id& id) {
  // The cached proxy is alive: only on_cleanup, a handler too, frees a general proxy.
  if (m_last_arrival != nullptr && m_last_arrival_id == id) [[likely]]
    return *m_last_arrival;
  return find_proxy_in_map(id);
}

proxy& distributed_finish::find_proxy_in_map(const finish_id& id) {
  if (id.home == m_here) {
    // A finish of this place that no longer exists (or never did): a damaged message, which
    // would otherwise open a proxy that reports to nobody.
    std::lock_guard guard(m_homes_mutex);
    if (!m_homes.contains(id.serial)) [[unlikely]]
      throw transport_error(fmt::format("apgas: place {}: an activity arrived for finish {}, "
                                        "which this place does not hold (a damaged message?)",
                                        m_here, describe(id)));
  }
  std::lock_guard guard(m_proxies_mutex);
  auto [it, inserted] = m_proxies.try_emplace(id, nullptr);
  if (inserted) it->second = new proxy(*this, id);
  m_last_arrival = it->second;
  m_last_arrival_id = id;
  return *it->second;
}

proxy& distributed_finish::arrive(const finish_id& id, place_id from) {
  proxy& px = find_proxy(id);
  std::lock_guard count_guard(px.lock);
  // The proxy's lock orders the increment against a strand taking the count to zero; the
  // activity's own decrement comes later on the same causal chain.
  px.on_arrivals_locked(1);
  px.tally.on_arrivals(1, from == id.home);
  return px; // alive: the arrival is unreported until this activity ends
}

void distributed_finish::gather(const finish_id& id, place_id from, promise_base* activity) {
  // Not counted yet, and not freed meanwhile: a cleanup of its finish cannot come before this
  // place reported the activity, which it has not even counted.
  proxy& px = find_proxy(id);
  activity->m_finish = &px.fs;
  activity->m_role = promise_base::role::strand;
  activity->m_parent = nullptr;
  gather_arrivals_of(px, from == id.home);
  try {
    m_arrivals.push_back(activity);
  } catch (...) { // out of memory: count and run it alone
    flush_arrivals();
    arrive(id, from);
    m_sched.inject(as_independent(activity));
  }
}

plain_arrivals& distributed_finish::gather_plain(const finish_id& id, place_id from) {
  // A full block is counted and made runnable now, and a new one begins: blocks stay small
  // enough for their offsets and for the reserve of the next.
  if (m_plain != nullptr && m_plain->bytes.size() >= k_max_plain_block_bytes) [[unlikely]]
    flush_arrivals();
  // The arguments stay bytes until the batch runs: a failure then is that activity's.
  gather_arrivals_of(find_proxy(id), from == id.home);
  if (m_plain == nullptr) [[unlikely]] {
    m_plain = std::make_shared<plain_arrivals>();
    m_plain->bytes.reserve(m_plain_capacity.first);
    m_plain->runs.reserve(m_plain_capacity.second);
  }
  return *m_plain;
}

void distributed_finish::arrive_failed(const finish_id& id, place_id from,
                                       std::exception_ptr error) {
  run_arrived(id, from, [&] { std::rethrow_exception(error); });
}

void distributed_finish::flush_arrivals() noexcept {
  if (m_arrivals.empty() && m_plain == nullptr) return;
  proxy& px = *m_arrivals_proxy;
  // Batches of plain asyncs are strands like other arrivals but hold several activities each:
  // the proxy counts strands (to know when its part is quiet) and reports activities. Out of
  // memory here cannot be reported to anyone: it ends the job (noexcept).
  const std::size_t strands_before = m_arrivals.size();
  std::size_t plain = 0;
  if (m_plain != nullptr) {
    // The next block starts as big as this one: the next delivery is probably alike.
    m_plain_capacity = {std::max(m_plain_capacity.first, m_plain->bytes.size()),
                        std::max(m_plain_capacity.second, m_plain->runs.size())};
    plain = make_plain_batches(std::move(m_plain), px.fs, m_sched.worker_count(), m_arrivals);
    m_plain = nullptr;
  }
  {
    std::lock_guard count_guard(px.lock);
    // As in arrive(); the injects below come after, on this thread.
    px.on_arrivals_locked(m_arrivals.size());
    px.tally.on_arrivals(strands_before + plain, m_arrivals_from_home);
  }
  // The proxy stays alive: its count now holds these activities until they end.
  for (promise_base* p : m_arrivals) m_sched.inject(as_independent(p));
  m_arrivals.clear(); // keeps the capacity
  m_arrivals_proxy = nullptr;
}

// ---- a proxy goes quiet: report now, or hold the report until the home asks -------------------

void distributed_finish::end_strands(proxy& px, std::uint64_t n) noexcept {
  std::unique_lock guard(px.lock);
  // acq_rel: release these strands' writes (and sends) to whoever takes the report; acquire
  // the other strands' if we are the last.
  const auto ends = static_cast<std::int64_t>(n);
  if (px.fs.m_count.fetch_sub(ends, std::memory_order_acq_rel) != ends) return;
  if (!px.asked && px.id.home != m_here && m_report_hold_max.count() > 0 &&
      (px.reports > 0 || px.tally.received_from_home() >= k_stream_activities)) {
    // Not the first quiet period (or a stream from the home), and the home has not asked: it
    // is still busy itself, and more of this finish's activities are probably on their way (a
    // stream of asyncs arrives one coalesced buffer at a time). The report waits for the
    // home's ask, or m_report_hold_max if none comes.
    const auto now = held_reports::clock::now();
    px.quiet_since = now;
    if (!px.deferred) {
      px.deferred = true;
      m_held.hold(px.id, now + m_report_hold_max);
    }
    return;
  }
  take_and_send_report(px, std::move(guard));
}

void distributed_finish::send_due_reports() noexcept {
  if (!m_held.any_acquire()) return;
  // Held reports fall due only after m_report_hold_max (a safeguard): a look every 64 polls of
  // a thread is soon enough, and spares the busy polls of a place that holds a report through
  // a whole stream a lock, a clock read and a scan each.
  thread_local unsigned polls_until_look = 1;
  if (--polls_until_look != 0) return;
  polls_until_look = 64;
  std::vector<finish_id> due;
  const auto now = held_reports::clock::now();
  m_held.take_due(now, due);
  for (const finish_id& id : due) {
    std::unique_lock map_guard(m_proxies_mutex);
    auto it = m_proxies.find(id);
    if (it == m_proxies.end()) continue; // an ask took its report meanwhile; the finish ended
    proxy& px = *it->second;
    std::unique_lock guard(px.lock);
    map_guard.unlock();         // px cannot go away: its report is not taken (see struct proxy)
    if (!px.deferred) continue; // an ask took it
    if (px.fs.m_count.load(std::memory_order_relaxed) != 0) {
      px.deferred = false; // busy again: the strand that ends it holds again
      continue;
    }
    const auto due_at = px.quiet_since + m_report_hold_max;
    if (now < due_at) { // it woke up and went quiet again meanwhile: wait from then on
      m_held.hold(px.id, due_at);
      continue;
    }
    m_counters.holds_expired.fetch_add(1, std::memory_order_relaxed); // a statistic
    take_and_send_report(px, std::move(guard));
  }
}

void distributed_finish::take_and_send_report(proxy& px,
                                              std::unique_lock<spin_lock> guard) noexcept {
  // pre: guard holds px.lock and px's count is zero.
  try {
    const finish_report rep = px.tally.take_report(px.id, m_here);
    std::vector<std::exception_ptr> errors = take_errors(px.fs);
    ++px.reports;
    // A held report leaves the held list with it (an ask came, or its hold expired):
    // otherwise the place would think a report due and poll often until then.
    if (std::exchange(px.deferred, false)) m_held.forget(rep.id);
    guard.unlock();
    // From here on px may be freed (the home may finish and clean up): use rep.id only.
    if (is_spmd(rep.id)) { // its one activity ended: nothing more can arrive, no cleanup comes
      std::unique_lock map_guard(m_proxies_mutex);
      const auto it = m_proxies.find(rep.id);
      proxy* owned = it != m_proxies.end() ? it->second : nullptr;
      if (owned != nullptr) m_proxies.erase(it);
      map_guard.unlock();
      delete owned;
    }
    if (rep.id.home == m_here) {
      // As if they had travelled: a failure of an async_at is the same at every place.
      for (std::exception_ptr& e : errors) e = across_places(e, m_here, m_places);
      return apply_report(rep, errors);
    }
    m_counters.reports_sent.fetch_add(1, std::memory_order_relaxed); // a statistic
    // The asyncs this report counts as sent leave before it (workers stage them): a place asked
    // for its reports that got them after would report twice.
    m_dispatcher.flush_held_back();
    // Up the finish's tree: at many places the reports reach the home in batches.
    m_tree.send_up(rep.id.home, m_kind_report, encode_report(rep, errors));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "apgas: place %u: cannot report a finish: %s\n", m_here, e.what());
    std::abort(); // the home would wait forever
  }
}

// ---- the home: apply reports, ask for held ones, end the finish -------------------------------

void distributed_finish::on_report(place_id from, std::span<const std::byte> body) {
  byte_reader r(body);
  finish_report rep;
  rep.from = from;
  rep.id = get_finish_id(r);
  rep.seq = deserialize<std::uint64_t>(r);
  rep.completed = deserialize<std::uint64_t>(r);
  rep.sent = deserialize<std::vector<std::pair<place_id, std::uint64_t>>>(r);
  std::vector<std::exception_ptr> errors(r.read_length(k_min_exception_bytes));
  for (std::exception_ptr& e : errors) e = read_exception(r, m_places);
  r.expect_end();
  const bool known = rep.id.home == m_here && [&] {
    std::lock_guard guard(m_homes_mutex);
    return m_homes.contains(rep.id.serial);
  }();
  const bool places_exist = std::all_of(rep.sent.begin(), rep.sent.end(),
                                        [&](const auto& s) { return s.first < m_places; });
  if (!known || !places_exist) [[unlikely]]
    throw transport_error(fmt::format(
        "apgas: place {}: a finish report from place {} names {}", m_here, from,
        known ? "a place that does not exist" : "no finish homed here (a damaged message?)"));
  apply_report(rep, errors);
}

void distributed_finish::apply_report(const finish_report& rep,
                                      const std::vector<std::exception_ptr>& errors) {
  finish_state* f = nullptr;
  {
    std::lock_guard guard(m_homes_mutex);
    auto it = m_homes.find(rep.id.serial);
    if (it == m_homes.end()) {
      std::fprintf(stderr, "apgas: place %u: report for unknown finish %u:%llu\n", m_here,
                   rep.id.home, static_cast<unsigned long long>(rep.id.serial));
      std::abort();
    }
    f = it->second;
  }
  home_link& link = *home_link_of(*f);
  for (const std::exception_ptr& e : errors) f->add_exception(e);
  for (const auto& [to, n] : rep.sent) link.touch(to);
  link.touch(rep.from);
  std::vector<place_id> ask;
  const bool closed = link.tally.on_report(rep, &ask);
  // Once this report is applied, a report applied by another thread (the home's own proxy's,
  // from the worker that ended its last strand) may close the tally and end the finish: `f`
  // and `link` may be freed from here on unless this report closed it (then the finish waits
  // for the release below). So the asks use the report's copy of the id, not link.id.
  send_asks(rep.id, ask); // (none if closed)
  if (closed) {
    m_dispatcher.expected_message_arrived();
    if (f->release_remote_part()) complete_from_outside(*f);
  }
}

void distributed_finish::on_home_quiet(finish_state& f) noexcept {
  home_link& link = *home_link_of(f);
  try {
    std::vector<place_id> asked = link.tally.on_home_quiet();
    // What this place still holds for the finish's places leaves before the asks: a place
    // asked before it arrives reports once more after it ran. Staged asyncs always; the
    // coalescing buffers too when the asks come down a tree, through other places (sent
    // straight, an ask leaves with the buffer to its place, behind what that holds).
    if (asked.empty() || m_tree.tree(m_here).flat()) m_dispatcher.flush_held_back();
    else m_dispatcher.flush();
    send_asks(link.id, std::move(asked));
  } catch (const std::exception& e) {
    // The places asked report anyway, once their hold expires (--report-delay-us).
    std::fprintf(stderr, "apgas: place %u: cannot ask for a finish's reports: %s\n", m_here,
                 e.what());
  }
}

void distributed_finish::send_asks(const finish_id& id, std::vector<place_id> places) {
  if (is_spmd(id)) return;    // an SPMD proxy never holds its one report
  std::erase(places, m_here); // the home's own proxy never holds a report
  if (places.empty()) return;
  m_counters.asks_sent.fetch_add(places.size(), std::memory_order_relaxed); // a statistic
  const auto payload = pack_head(id.home, id.serial);
  m_tree.multicast(m_here, places, m_kind_ask, payload); // the home waits: it leaves at once
}

void distributed_finish::on_ask(place_id /*from*/, std::span<const std::byte> body) {
  flush_arrivals(); // count what arrived before the ask: the report then includes it
  byte_reader r(body);
  const finish_id id = get_finish_id(r);
  r.expect_end();
  // No proxy yet: the activities the home counted for this place are still on their way (an
  // ask can overtake them: it comes down the home's tree, they came straight). The proxy opens
  // now, asked, so that its first report leaves as soon as they have run.
  proxy& px = find_proxy(id);
  std::unique_lock guard(px.lock); // px stays: the home waits for it (pending there)
  px.asked = true;
  // A held report leaves now; if the part is busy, its end reports at once (asked).
  if (px.deferred && px.fs.m_count.load(std::memory_order_relaxed) == 0)
    take_and_send_report(px, std::move(guard));
}

void distributed_finish::complete_from_outside(finish_state& f) {
  if (f.m_waiter != nullptr) m_sched.inject(as_independent(f.m_waiter));
  else (void)f.on_complete(); // a root finish: wakes the thread in run()
}

// ---- the end: the home frees its link and cleans up the proxies -------------------------------

void distributed_finish::release_home(finish_state& f) noexcept {
  home_link* link = home_link_of(f);
  {
    std::lock_guard guard(m_homes_mutex);
    m_homes.erase(link->id.serial);
  }
  // SPMD proxies freed themselves when they reported: no cleanup for them.
  if (!is_spmd(link->id)) send_cleanups(*link);
  f.m_remote = nullptr;
  delete link;
}

void distributed_finish::send_cleanups(const home_link& link) noexcept {
  try {
    std::vector<place_id> places;
    link.for_each_touched([&](place_id p) { places.push_back(p); });
    // This place too (the tree sends it through the transport's loopback): proxies are freed
    // by message handlers only (see m_last_arrival). Only messages to other places count.
    const auto others = places.size() - std::count(places.begin(), places.end(), m_here);
    m_counters.cleanups_sent.fetch_add(others, std::memory_order_relaxed); // a statistic
    const auto payload = pack_head(link.id.home, link.id.serial);
    m_tree.multicast(m_here, places, m_kind_cleanup, payload);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "apgas: place %u: cannot clean up a finish: %s\n", m_here, e.what());
  }
}

void distributed_finish::on_cleanup(place_id from, std::span<const std::byte> body) {
  flush_arrivals(); // none can be of this finish (it ended), but m_arrivals_proxy may be it
  byte_reader r(body);
  const finish_id id = get_finish_id(r);
  r.expect_end();
  proxy* px = nullptr;
  {
    std::lock_guard guard(m_proxies_mutex);
    auto it = m_proxies.find(id);
    if (it == m_proxies.end()) return; // nothing ever arrived here
    px = it->second;
    // Every report of px was taken (the home finished), and whoever took the last one no
    // longer touches it; the lock is free unless a scan for due reports looks at it: this
    // waits for that. A cleanup while activities of the finish still run here, or a report is
    // still owed, cannot come from its home: a damaged message, refused, the proxy kept.
    std::lock_guard quiet(px->lock);
    if (px->fs.m_count.load(std::memory_order_relaxed) != 0 || px->deferred) [[unlikely]]
      throw transport_error(fmt::format("apgas: place {}: a cleanup from place {} for finish "
                                        "{}, whose activities still run here (a damaged "
                                        "message?)",
                                        m_here, from, describe(id)));
    m_proxies.erase(it);
  }
  if (m_last_arrival == px) m_last_arrival = nullptr; // handler context, like find_proxy
  delete px;
}

std::string distributed_finish::describe_open_finishes() const {
  std::string s;
  std::lock_guard guard(m_homes_mutex);
  for (const auto& [serial, f] : m_homes) {
    s += fmt::format("    finish {} pending (activities sent minus completed)",
                     describe(finish_id{m_here, serial}));
    for (const auto& [p, n] : home_link_of(*f)->tally.snapshot())
      s += fmt::format(" place {}={}", p, n);
    s += "\n";
    // A failure the finish holds while it waits explains many hangs: an activity that
    // failed never did what another one waits for (a `when`, a collective).
    std::lock_guard errors_guard(f->m_exceptions_lock);
    if (f->m_exceptions != nullptr && !f->m_exceptions->empty()) {
      std::string first;
      try {
        std::rethrow_exception(f->m_exceptions->front());
      } catch (...) {
        first = describe_current_exception();
      }
      s += fmt::format("      {} failure(s) gathered, to be thrown when it ends; the first: {}\n",
                       f->m_exceptions->size(), first);
    }
  }
  return s;
}

} // namespace apgas::detail
