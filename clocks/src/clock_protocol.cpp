// The distributed clock protocol's module: the table of clocks that left their home, reports
// and releases (see clock_protocol.hpp).
#include "clock_protocol.hpp"

#include "apgas/detail/code_registry.hpp"
#include "apgas/detail/exception_codec.hpp"
#include "apgas/detail/message_format.hpp"
#include "apgas/detail/scheduler.hpp"
#include "apgas/serialization.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>

namespace apgas::detail {

APGAS_REGISTER_PROTOCOL_MODULE(clocks, [](message_dispatcher& dispatcher) {
  dispatcher.add_module<clock_protocol>();
});

namespace {

/// A partial reduction on the wire: the combine function's code offset (0: none, -1: failed),
/// then its size and bytes, or for a failure whether it is a mismatch and the exception.
constexpr std::int64_t k_failed_partial = -1;

void put_partial(byte_writer& w, const clock_partial& p, place_id here) {
  if (p.failed()) {
    const bool mismatch = p.failure->mismatch || p.failure->error == nullptr;
    serialize_all(w, k_failed_partial, static_cast<std::uint8_t>(mismatch ? 1 : 0));
    if (!mismatch) write_exception(w, p.failure->error, here); // with its type and place
    return;
  }
  const std::int64_t code = p.empty() ? 0 : code_offset(reinterpret_cast<const void*>(p.combine));
  serialize_all(w, code, p.size);
  w.write_bytes(p.value.data(), p.empty() ? 0 : p.size);
}
/// Reads a partial written by put_partial into `p` (empty before), in place: a report or a
/// release carries one, and the value is a few dozen bytes.
void read_partial(byte_reader& r, place_id places, clock_partial& p) {
  const auto code = deserialize<std::int64_t>(r);
  if (code == k_failed_partial) {
    const bool mismatch = deserialize<std::uint8_t>(r) != 0;
    p.fail(mismatch, mismatch ? nullptr : read_exception(r, places));
    return;
  }
  const auto size = deserialize<std::uint32_t>(r);
  if (code == 0) return;
  if (size == 0 || size > k_max_reduce_bytes)
    throw transport_error("apgas: a clock message carries a reduction value of a wrong size");
  if (!registered_code(code, code_kind::combine))
    throw transport_error("apgas: a clock message names no reduction (a damaged message, or a "
                          "different build at its place?)");
  p.combine = reinterpret_cast<combine_fn>(const_cast<void*>(code_at(code)));
  p.size = size;
  r.read_bytes(p.value.data(), size);
}

} // namespace

clock_protocol::clock_protocol(message_dispatcher& dispatcher)
    : m_dispatcher(dispatcher), m_sched(dispatcher.sched()), m_here(dispatcher.here()),
      m_places(dispatcher.places()),
      m_all_to_all(m_places <= dispatcher.sched().opts().clock_all_to_all_places),
      m_tree(*dispatcher.find_module<tree_messaging>()),
      m_kind_report(dispatcher.add_handler<&clock_protocol::on_report>(*this, "clock report")),
      m_kind_release(dispatcher.add_handler<&clock_protocol::on_release>(*this, "clock release")),
      m_net_collectives(dispatcher.net().collectives()),
      m_group_lanes(m_net_collectives != nullptr ? m_net_collectives->group_lanes() : 0) {
  dispatcher.describes_state_with<&clock_protocol::describe>(*this, "clocks");
  dispatcher.reports_stats_with<&clock_protocol::stats_table>(*this);
  dispatcher.before_each_poll<&clock_protocol::complete_due>(*this);
  dispatcher.expects_messages_when<&clock_protocol::collectives_pending>(*this);
}

std::string clock_protocol::stats_table() const {
  const auto rd = [](const std::atomic<std::uint64_t>& c) {
    return c.load(std::memory_order_relaxed); // statistics
  };
  const std::uint64_t made = rd(m_counters.clocks_made);
  if (made == 0 && rd(m_counters.phases_ended) == 0) return {}; // no clock reached this place
  std::uint64_t collective = rd(m_counters.phases_collective);
  {
    std::lock_guard guard(m_table_mutex);
    for (const auto& [id, px] : m_table) collective += px->phases_on_collective_path();
  }
  // Phases ended on the collective path are counted apart (off their hot path).
  const std::uint64_t phases = rd(m_counters.phases_ended) + collective;
  const auto per_phase = [phases](std::uint64_t n) {
    return phases == 0 ? 0.0 : static_cast<double>(n) / static_cast<double>(phases);
  };
  std::string s = fmt::format("apgas clocks: place {} of {}\n", m_here, m_places);
  s += fmt::format("  {:<34} {}\n", "clocks made here", made);
  s += fmt::format("  {:<34} {}\n", "phases ended here", phases);
  s += fmt::format("  {:<34} {}\n", "advances that suspended", rd(m_counters.advances_waited));
  s += fmt::format("  {:<34} {} ({:.2f} per phase)\n", "clock reports sent",
                   rd(m_counters.reports_sent), per_phase(rd(m_counters.reports_sent)));
  s += fmt::format("  {:<34} {} ({:.2f} per phase)\n", "clock releases sent",
                   rd(m_counters.releases_sent), per_phase(rd(m_counters.releases_sent)));
  s += fmt::format("  {:<34} {}\n", "phases on the collective path", collective);
  s += fmt::format("  {:<34} {}\n", "phases that left it", rd(m_counters.collective_fallbacks));
  return s;
}

clock_protocol::~clock_protocol() {
  std::lock_guard guard(m_table_mutex);
  for (auto& [id, px] : m_table) delete px; // none remain once every clock is over
}

clock_protocol& clock_protocol::current() {
  clock_protocol* m = message_dispatcher::current().find_module<clock_protocol>();
  if (m == nullptr) [[unlikely]]
    throw std::logic_error("apgas: the clock module is missing from this runtime");
  return *m;
}

// ---- the table -------------------------------------------------------------------------------

clock_proxy& clock_protocol::make_clock(signal s, std::uint64_t first_phase) {
  // relaxed: only uniqueness of the serial matters.
  const clock_id id{m_here, m_next_serial.fetch_add(1, std::memory_order_relaxed)};
  auto* px = new clock_proxy(*this, id, first_phase, s, std::nullopt);
  px->retain();
  {
    std::lock_guard guard(m_table_mutex); // the dump lists it; reports find it once it leaves
    m_table.emplace(id, px);
  }
  m_counters.clocks_made.fetch_add(1, std::memory_order_relaxed); // a statistic
  return *px;
}

clock_proxy* clock_protocol::find(const clock_id& id, const clock_token* create_from) {
  std::lock_guard guard(m_table_mutex);
  auto it = m_table.find(id);
  if (it == m_table.end()) {
    if (create_from == nullptr) return nullptr;
    auto* px = new clock_proxy(*this, id, create_from->phase, create_from->default_signal,
                               create_from->first_phase);
    it = m_table.emplace(id, px).first;
  }
  // Retained under the table's mutex: release_idle decides to free under it too.
  it->second->retain();
  return it->second;
}

clock_proxy& clock_protocol::adopt(const clock_token& t) {
  if (t.first_phase == 0 || t.phase < t.first_phase)
    throw transport_error("apgas: a clock registration arrived damaged");
  return *find(t.id, &t);
}

void clock_protocol::release_idle(const clock_id& id) noexcept {
  clock_proxy* px = nullptr;
  {
    // The proxy is reached through the table only: a thread that released it may find it
    // retained again and released by another thread, freed, or replaced by a new proxy of the
    // same clock (which it frees only if that one too is unreferenced and owes nothing).
    std::lock_guard guard(m_table_mutex);
    const auto it = m_table.find(id);
    if (it == m_table.end() || !it->second->idle()) return;
    px = it->second;
    m_table.erase(it);
  }
  delete px;
}

// ---- messages --------------------------------------------------------------------------------

namespace {
/// This thread's buffer for a clock message (a report or a release: one phase, one or two
/// messages per place; no malloc each time).
std::vector<std::byte>& message_buffer() {
  thread_local std::vector<std::byte> bytes;
  bytes.clear();
  return bytes;
}
} // namespace

void clock_protocol::send_report(const clock_proxy& px, const clock_report& r) {
  if (all_to_all()) {
    // Each report leaves at once, framed (the latency path of `at`): a phase waits for it, and
    // at few places for nothing else. The frame may stay with the network: one per place.
    thread_local std::vector<std::byte> framed;
    for (place_id p = 0; p < m_places; ++p) {
      if (p == m_here) continue;
      start_framed(framed, m_kind_report);
      write_report(framed, px, r);
      m_counters.reports_sent.fetch_add(1, std::memory_order_relaxed); // a statistic
      m_dispatcher.net().send_now_framed(p, framed);
    }
  } else if (px.id().home != m_here) {
    // Up the home's tree: the home handles O(arity) messages per phase at any scale.
    std::vector<std::byte>& bytes = message_buffer();
    write_report(bytes, px, r);
    m_counters.reports_sent.fetch_add(1, std::memory_order_relaxed);
    m_tree.send_up(px.id().home, m_kind_report, bytes);
  }
}

void clock_protocol::write_report(std::vector<std::byte>& out, const clock_proxy& px,
                                  const clock_report& r) {
  // The first phase rides on every report: a place may hear of the clock first from a report
  // of a later phase, and its tally must start where the clock left its home. The fixed
  // fields go in one copy.
  const auto head =
      pack_head(px.id().home, px.id().serial, r.first_phase, r.phase, r.seq, r.base, r.completed,
                r.carried, r.last_collective, static_cast<std::uint8_t>(r.lane_ok ? 1 : 0));
  byte_writer w(out);
  w.write_bytes(head.data(), head.size());
  serialize(w, r.sent);
  put_partial(w, r.partial, px.module().here());
}

void clock_protocol::send_release(const clock_proxy& px, const clock_phase_end& end) {
  std::vector<std::byte>& bytes = message_buffer();
  byte_writer w(bytes);
  serialize_all(w, px.id().home, px.id().serial, end.phase,
                static_cast<std::uint8_t>(end.last ? 1 : 0),
                static_cast<std::uint8_t>(end.stable ? 1 : 0));
  put_partial(w, end.result, m_here);
  if (end.stable) serialize(w, end.members); // who takes the collective path
  std::vector<place_id> targets = end.reported_at;
  std::erase(targets, m_here);
  if (targets.empty()) return;
  m_counters.releases_sent.fetch_add(targets.size(), std::memory_order_relaxed); // a statistic
  m_tree.multicast(m_here, targets, m_kind_release, bytes); // down the home's tree
}

void clock_protocol::on_report(place_id from, std::span<const std::byte> body) {
  byte_reader r(body);
  clock_id id;
  clock_report rep;
  rep.from = from;
  // The fixed fields, as write_report packed them, in one bounds check.
  std::uint8_t lane_ok = 0;
  constexpr std::size_t k_head =
      sizeof id.home + sizeof id.serial + 7 * sizeof(std::uint64_t) + sizeof lane_ok;
  unpack_from(r.read_span(k_head).data(), id.home, id.serial, rep.first_phase, rep.phase, rep.seq,
              rep.base, rep.completed, rep.carried, rep.last_collective, lane_ok);
  rep.lane_ok = lane_ok == 1;
  if (lane_ok > 1 || rep.last_collective >= rep.phase)
    throw transport_error("apgas: a clock report arrived damaged");
  rep.sent = deserialize<std::vector<std::pair<place_id, std::uint64_t>>>(r);
  read_partial(r, m_places, rep.partial);
  r.expect_end();
  if (rep.first_phase == 0 || rep.phase < rep.first_phase)
    throw transport_error("apgas: a clock report arrived damaged");
  const clock_token create{id, rep.first_phase, rep.first_phase, signal::lazy};
  clock_proxy* px = find(id, &create);
  px->on_report(rep);
  px->release();
}

void clock_protocol::on_release(place_id /*from*/, std::span<const std::byte> body) {
  byte_reader r(body);
  clock_id id;
  clock_phase_end end;
  id.home = deserialize<place_id>(r);
  id.serial = deserialize<std::uint64_t>(r);
  end.phase = deserialize<std::uint64_t>(r);
  end.last = deserialize<std::uint8_t>(r) != 0;
  end.stable = deserialize<std::uint8_t>(r) != 0;
  read_partial(r, m_places, end.result);
  if (end.stable) {
    end.members = deserialize<std::vector<place_id>>(r);
    if (end.members.empty() || !std::is_sorted(end.members.begin(), end.members.end()) ||
        std::adjacent_find(end.members.begin(), end.members.end()) != end.members.end() ||
        end.members.back() >= m_places)
      throw transport_error("apgas: a clock release arrived damaged");
  }
  r.expect_end();
  clock_proxy* px = find(id, nullptr);
  if (px == nullptr) {
    std::fprintf(stderr, "apgas: place %u: release of phase %llu for unknown clock %u:%llu\n",
                 m_here, static_cast<unsigned long long>(end.phase), id.home,
                 static_cast<unsigned long long>(id.serial));
    std::abort();
  }
  px->on_release(std::move(end));
  px->release();
}

// ---- the collective path ---------------------------------------------------------------------

void clock_protocol::start_collective(const std::vector<place_id>& members, std::size_t my_index,
                                      std::uint32_t lane, phase_vote& vote, collective_done& done) {
  group_call call;
  call.members = members.data();
  call.count = members.size();
  call.my_index = my_index;
  call.lane = lane;
  call.value = &vote;
  call.bytes = sizeof vote;
  call.combine = &combine_votes;
  call.used_bytes = &phase_vote::used_bytes;
  call.empty_value = &phase_vote::k_empty;
  m_net_collectives->start_group(call, done);
  // The other members may wait for what this place buffered (their phase's work, a halo).
  m_dispatcher.flush();
}

void clock_protocol::queue_completion(clock_proxy& px) noexcept {
  // Kept alive until processed: its registrants may all drop meanwhile (it is not idle while
  // the phase is open, but only a release would then free it).
  px.retain();
  std::lock_guard guard(m_completed_lock);
  try {
    m_completed.push_back(&px);
  } catch (...) { // out of memory under the network's lock: nothing can be done but stop
    std::fputs("apgas: out of memory completing a clock phase\n", stderr);
    std::abort();
  }
  // relaxed: a hint (see complete_due).
  m_completions.store(m_completed.size(), std::memory_order_relaxed);
}

void clock_protocol::process_completions() noexcept {
  for (;;) {
    clock_proxy* px = nullptr;
    {
      std::lock_guard guard(m_completed_lock);
      if (m_completed.empty()) return;
      px = m_completed.back();
      m_completed.pop_back();
      m_completions.store(m_completed.size(), std::memory_order_relaxed); // relaxed: a hint
    }
    try {
      px->complete_collective();
    } catch (const std::exception& e) { // sending the reports of a phase that fell back
      std::fprintf(stderr, "apgas: place %u: a clock phase could not complete: %s\n", m_here,
                   e.what());
      std::abort();
    }
    px->release();
  }
}

bool clock_protocol::wait_in_place(clock_proxy& px, std::uint64_t phase) {
  // As a team's collective waits (team.cpp): test the allreduce itself, polling the place
  // now and then, until it completes (then complete it here: no queue, no other thread), the
  // wait lasted --spin-us, or other work shows up.
  const unsigned spin_us = m_sched.opts().spin_us;
  if (spin_us == 0 || m_sched.work_visible()) {
    if (!px.unwatch_collective()) px.complete_collective(); // told already, to us
    return px.ended(phase);
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::microseconds(spin_us);
  for (unsigned round = 1;; ++round) {
    if (round % 128 == 0) (void)m_dispatcher.poll();
    else m_net_collectives->progress();
    if (px.collective_completed()) {
      px.complete_collective();
      return px.ended(phase);
    }
    if (round % 16 == 0 &&
        (std::chrono::steady_clock::now() > deadline || m_sched.work_visible())) {
      if (!px.unwatch_collective()) px.complete_collective(); // told meanwhile, to us
      return px.ended(phase);
    }
  }
}

std::string clock_protocol::describe() const {
  std::lock_guard guard(m_table_mutex);
  std::string s;
  for (const auto& [id, px] : m_table) s += px->describe();
  return s;
}

} // namespace apgas::detail
