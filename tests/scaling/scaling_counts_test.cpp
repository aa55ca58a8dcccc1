// Real places against the simulation of docs/scaling.md: the workloads of
// models/protocol_model.hpp (a finish with one activity at every place, for_each_place,
// at_each_place, a clock phase with a registrant at every place) run on 1, 2 and 4 places, and
// every place's counts of what it sent, per kind of message, must be the ones the model gives
// for the same places and options (--tree-arity, --clock-all-to-all-places). Every place runs
// the same tests in the same order (runtime::run is collective).
//
// What is compared exactly: activities, at replies, finish reports, asks and cleanups, clock
// reports and releases, the tree's down messages and the entries each place relays up a tree:
// none of them depends on timing. What is not: how many tree-up messages the relayed entries
// leave in. A place relays in one message the entries of one delivery (one poll), and which
// entries arrive in the same poll depends on timing (the model's rounds batch them as a poll
// would if every hop took the same time). So the tree-up messages a place sent are checked to
// lie between its own entries plus one message for all it relayed, and its own entries plus
// one message per relayed entry.
#include <apgas/apgas.hpp>
#include <apgas/detail/message_dispatcher.hpp>
#include <apgas/detail/tree_messaging.hpp>

#include "../places_test_main.hpp"
#include "clock_protocol.hpp"
#include "protocol_model.hpp"
#include <gtest/gtest.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

using apgas::place_id;
using apgas::task;
namespace detail = apgas::detail;
namespace model = apgas::model;

namespace {

apgas::runtime* g_rt = nullptr;

// ---- draining the trees -----------------------------------------------------------------------

/// Makes sure every message sent down a tree so far has been handled, so that the counters of
/// the places that relay them are final when read. A finish's cleanups (and nothing else of the
/// workloads) may still travel after the finish has ended. Each place multicasts a probe to
/// every other place down its own tree and collects their acknowledgements: a tree-down
/// message takes the same hops as every earlier one from the same root to the same place, and
/// each hop keeps the order of its messages, so a place acknowledges the probe only after it
/// handled (and passed on) everything its root sent it before. The probe's own tree-down
/// messages are the same every time (see measure).
class drain_module final : public detail::protocol_module {
public:
  explicit drain_module(detail::message_dispatcher& dispatcher)
      : m_dispatcher(dispatcher),
        m_kind_start(dispatcher.add_handler<&drain_module::on_start>(*this, "test drain start")),
        m_kind_probe(dispatcher.add_handler<&drain_module::on_probe>(*this, "test drain probe")),
        m_kind_ack(dispatcher.add_handler<&drain_module::on_ack>(*this, "test drain ack")),
        m_kind_done(dispatcher.add_handler<&drain_module::on_done>(*this, "test drain done")) {}

  static drain_module& current() {
    return *detail::message_dispatcher::current().find_module<drain_module>();
  }

  /// @brief At place 0: returns once every place's probe has been acknowledged by every other
  /// place. Polls the network meanwhile (the caller's worker serves the messages).
  void drain_all() {
    const place_id places = m_dispatcher.places();
    if (places == 1) return;
    // relaxed: only this thread resets it, before any probe leaves.
    m_done.store(0, std::memory_order_relaxed);
    for (place_id p = 1; p < places; ++p) send(p, m_kind_start);
    start();
    // acquire: the handlers' increments come after their places' acknowledgements.
    while (m_done.load(std::memory_order_acquire) < places) (void)m_dispatcher.poll();
  }

private:
  void send(place_id to, detail::message_kind kind) {
    const std::byte bytes[1] = {static_cast<std::byte>(kind)};
    m_dispatcher.net().send_now(to, bytes);
  }
  void start() {
    m_acks = 0;
    std::vector<place_id> others;
    for (place_id p = 0; p < m_dispatcher.places(); ++p)
      if (p != m_dispatcher.here()) others.push_back(p);
    m_dispatcher.find_module<detail::tree_messaging>()->multicast(m_dispatcher.here(), others,
                                                                  m_kind_probe, {});
  }
  void on_start(place_id, std::span<const std::byte>) { start(); }
  void on_probe(place_id root, std::span<const std::byte>) { send(root, m_kind_ack); }
  void on_ack(place_id, std::span<const std::byte>) {
    if (++m_acks != m_dispatcher.places() - 1) return;
    if (m_dispatcher.here() == 0) m_done.fetch_add(1, std::memory_order_release); // see drain_all
    else send(0, m_kind_done);
  }
  void on_done(place_id, std::span<const std::byte>) {
    m_done.fetch_add(1, std::memory_order_release); // see drain_all
  }

  detail::message_dispatcher& m_dispatcher;
  detail::message_kind m_kind_start;
  detail::message_kind m_kind_probe;
  detail::message_kind m_kind_ack;
  detail::message_kind m_kind_done;
  place_id m_acks = 0; ///< handler context only (the transport runs one handler at a time)
  std::atomic<place_id> m_done{0}; ///< places whose probe every other place acknowledged
};

APGAS_REGISTER_PROTOCOL_MODULE(scaling_test_drain, [](detail::message_dispatcher& dispatcher) {
  dispatcher.add_module<drain_module>();
});

// ---- reading the counters ---------------------------------------------------------------------

/// One place's counters (crosses places as the value of an `at`: copied byte for byte).
struct snapshot {
  apgas::message_counts m;
  std::uint64_t up_sent = 0;
  std::uint64_t entries_relayed = 0;
  std::uint64_t down_sent = 0;
  std::uint64_t clock_reports_sent = 0;
  std::uint64_t clock_releases_sent = 0;
};

/// This place's counters (in an `at` of a plain function: read in the message handler).
snapshot read_here() {
  // relaxed: statistics, read after the drain (see drain_module) made them final.
  constexpr auto relaxed = std::memory_order_relaxed;
  snapshot s;
  s.m = apgas::local_message_counts();
  const detail::tree_counters& t =
      detail::message_dispatcher::current().find_module<detail::tree_messaging>()->counters();
  s.up_sent = t.up_sent.load(relaxed);
  s.entries_relayed = t.entries_relayed.load(relaxed);
  s.down_sent = t.down_sent.load(relaxed);
  detail::clock_counters& c = detail::clock_protocol::current().counters();
  s.clock_reports_sent = c.reports_sent.load(relaxed);
  s.clock_releases_sent = c.releases_sent.load(relaxed);
  return s;
}

/// Every place's counters, once all earlier tree messages have been handled. The reading
/// itself sends the same messages every time: an `at` of a plain function to every other
/// place (no finish, no tree) and the drain's probes.
task<std::vector<snapshot>> read_all() {
  drain_module::current().drain_all();
  std::vector<snapshot> all(apgas::places());
  for (place_id p = 1; p < apgas::places(); ++p)
    all[p] = co_await apgas::at(p, [] { return read_here(); });
  all[0] = read_here();
  co_return all;
}

/// What a place sent during a workload (signed: a negative count is a bug, shown as such).
struct sent {
  std::int64_t activities = 0, at_replies = 0, reports = 0, asks = 0, cleanups = 0,
               holds_expired = 0, up = 0, entries_relayed = 0, down = 0, clock_reports = 0,
               clock_releases = 0;
};

/// The messages each place sent for `workload`: the counters before it, after it, and after
/// one more reading, whose cost (the same as the first's) is taken off.
template <class Workload>
std::vector<sent> measure(Workload workload) {
  const auto reads = g_rt->run([workload]() -> task<std::vector<std::vector<snapshot>>> {
    std::vector<std::vector<snapshot>> r;
    r.push_back(co_await read_all());
    co_await workload();
    r.push_back(co_await read_all());
    r.push_back(co_await read_all());
    co_return r;
  });
  std::vector<sent> out(reads[0].size());
  for (std::size_t p = 0; p < out.size(); ++p) {
    const auto delta = [&](auto field) {
      const auto v = [&](int i) { return static_cast<std::int64_t>(field(reads[i][p])); };
      return (v(1) - v(0)) - (v(2) - v(1));
    };
    sent& s = out[p];
    s.activities = delta([](const snapshot& x) { return x.m.activities_sent; });
    s.at_replies = delta([](const snapshot& x) { return x.m.at_replies_sent; });
    s.reports = delta([](const snapshot& x) { return x.m.finish_reports_sent; });
    s.asks = delta([](const snapshot& x) { return x.m.finish_asks_sent; });
    s.cleanups = delta([](const snapshot& x) { return x.m.finish_cleanups_sent; });
    s.holds_expired = delta([](const snapshot& x) { return x.m.finish_holds_expired; });
    s.up = delta([](const snapshot& x) { return x.up_sent; });
    s.entries_relayed = delta([](const snapshot& x) { return x.entries_relayed; });
    s.down = delta([](const snapshot& x) { return x.down_sent; });
    s.clock_reports = delta([](const snapshot& x) { return x.clock_reports_sent; });
    s.clock_releases = delta([](const snapshot& x) { return x.clock_releases_sent; });
  }
  return out;
}

/// The model's options: this run's.
model::config this_run() {
  model::config c;
  c.places = g_rt->places();
  c.arity = g_rt->opts().tree_arity;
  c.clock_all_to_all_places = g_rt->opts().clock_all_to_all_places;
  return c;
}

void expect_as_modelled(const std::vector<sent>& real, const model::result& expected) {
  ASSERT_EQ(real.size(), expected.places.size());
  for (std::size_t p = 0; p < real.size(); ++p) {
    const sent& r = real[p];
    const model::place_counts& e = expected.places[p];
    const auto i = [](std::uint64_t v) { return static_cast<std::int64_t>(v); };
    SCOPED_TRACE("place " + std::to_string(p));
    EXPECT_EQ(r.activities, i(e.activities_sent));
    EXPECT_EQ(r.at_replies, i(e.at_replies_sent));
    EXPECT_EQ(r.reports, i(e.finish_reports_sent));
    EXPECT_EQ(r.asks, i(e.finish_asks_sent));
    EXPECT_EQ(r.cleanups, i(e.finish_cleanups_sent));
    EXPECT_EQ(r.holds_expired, 0);
    EXPECT_EQ(r.clock_reports, i(e.clock_reports_sent));
    EXPECT_EQ(r.clock_releases, i(e.clock_releases_sent));
    EXPECT_EQ(r.entries_relayed, i(e.entries_relayed));
    EXPECT_EQ(r.down, i(e.down_sent));
    // Tree-up messages: its own entries, one each, and the relayed ones in as few as one
    // message or as many as one each (see the top of this file).
    const std::int64_t own = i(e.up_sent - e.up_relays_sent);
    EXPECT_GE(r.up, own + (e.entries_relayed > 0 ? 1 : 0));
    EXPECT_LE(r.up, own + i(e.entries_relayed));
  }
}

// ---- the workloads (as protocol_model.hpp models them) -----------------------------------------

TEST(scaling_counts, a_finish_with_one_activity_at_every_place) {
  const auto real = measure([]() -> task<> {
    co_await apgas::finish([]() -> task<> {
      for (place_id p = 0; p < apgas::places(); ++p) co_await apgas::async_at(p, [] {});
    });
  });
  if (g_rt->here() == 0) expect_as_modelled(real, model::dense_finish(this_run(), true));
}

TEST(scaling_counts, for_each_place) {
  const auto real = measure([]() -> task<> { co_await apgas::for_each_place([] {}); });
  if (g_rt->here() == 0) expect_as_modelled(real, model::for_each_place(this_run()));
}

TEST(scaling_counts, at_each_place) {
  const auto real = measure([]() -> task<> {
    // In a finish of its own: beyond the flat tree the gather's steps are activities of the
    // caller's finish, whose reports and cleanups must end before the next reading.
    co_await apgas::finish([]() -> task<> {
      const std::vector<place_id> ids = co_await apgas::at_each_place([] { return apgas::here(); });
      for (place_id p = 0; p < ids.size(); ++p)
        if (ids[p] != p) throw std::runtime_error("at_each_place: a value from the wrong place");
    });
  });
  if (g_rt->here() == 0) expect_as_modelled(real, model::at_each_place(this_run()));
}

TEST(scaling_counts, a_clock_phase_with_a_registrant_at_every_place) {
  const auto real = measure([]() -> task<> {
    co_await apgas::finish([]() -> task<> {
      apgas::clock c = co_await apgas::clock::make();
      for (place_id p = 1; p < apgas::places(); ++p)
        co_await apgas::async_at(p, apgas::clocked(c),
                                 [](apgas::clock mine) -> task<> { co_await mine.advance(); });
      co_await c.advance();
    }); // each registrant drops as its activity ends, the maker's as the body ends
  });
  if (g_rt->here() == 0) expect_as_modelled(real, model::clock_program(this_run()));
}

} // namespace

int main(int argc, char** argv) { return apgas_test::run_places_tests(argc, argv, g_rt); }
