// The distributed finish counting protocol against random schedules: random activity trees
// over P places, activities delivered in random order across sources (in order per source),
// reports in any order (even two of one place: the dispatcher takes them in order but may send
// them out of order), proxies reporting at once or later, activities ending at random times.
// A proxy holds every report after its first until the home asks for it, and its first too
// once it received `stream` activities, as the dispatcher does (with small values of `stream`
// here, 1 to 4, and one too big to matter): a held report is released by nothing else here,
// so a missing ask shows as a finish that never terminates. Termination must be declared exactly
// once, exactly when nothing is alive or in flight.
#include <apgas/detail/finish_tally.hpp>

#include <gtest/gtest.h>

#include <deque>
#include <map>
#include <random>
#include <set>
#include <tuple>
#include <variant>
#include <vector>

namespace {

using apgas::detail::finish_id;
using apgas::detail::finish_report;
using apgas::detail::home_tally;
using apgas::detail::place_id;
using apgas::detail::proxy_tally;

struct activity_msg {
  int budget; // how many more activities this one may spawn, transitively
};
struct ask_msg {}; // the home asks for a held report
using message = std::variant<activity_msg, finish_report, ask_msg>;

struct running {
  place_id where;
  int budget;
  bool is_home_body;
};

class simulation {
public:
  simulation(place_id places, std::uint64_t seed, std::uint64_t stream)
      : m_places(places), m_rng(seed), m_proxies(places), m_stream(stream), m_home(stream) {}

  /// Runs one finish to termination; returns the number of activities run.
  int run(int budget) {
    m_running.push_back({0, budget, true});
    m_home_local = 1; // the body
    for (;;) {
      const bool can_deliver = !m_channels.empty();
      const bool can_step = !m_running.empty();
      const bool can_report = deferred_count() > 0;
      if (!can_deliver && !can_step && !can_report) break;
      if (can_report && (!(can_deliver || can_step) || coin())) send_deferred_report();
      else if (can_step && (!can_deliver || coin())) step_activity();
      else deliver_one();
    }
    EXPECT_TRUE(m_terminated) << "the finish never terminated";
    return m_activities;
  }

private:
  bool coin() { return std::uniform_int_distribution<int>(0, 1)(m_rng) == 1; }
  place_id random_place() {
    return std::uniform_int_distribution<place_id>(0, m_places - 1)(m_rng);
  }

  void send(place_id from, place_id to, message m) {
    // Activities: FIFO per pair of places. Reports: a channel each, so any order.
    const std::uint64_t channel =
        std::holds_alternative<finish_report>(m) ? ++m_report_channels : 0;
    m_channels[{from, to, channel}].push_back(std::move(m));
  }

  int deferred_count() const {
    int n = 0;
    for (const proxy& p : m_proxies) n += p.deferred ? 1 : 0;
    return n;
  }

  void report(place_id where) {
    proxy& p = m_proxies[where];
    p.deferred = false;
    p.held = false;
    ++p.reports;
    finish_report r = p.tally.take_report(finish_id{0, 1}, where);
    if (where == 0) apply_report(r); // the home's own proxy reports directly
    else send(where, 0, std::move(r));
  }

  void send_deferred_report() {
    for (place_id where = 0; where < m_places; ++where) {
      // A deferred proxy that got busy again is left to the end of that strand.
      if (m_proxies[where].deferred && m_proxies[where].live == 0) {
        report(where);
        return;
      }
      m_proxies[where].deferred = false;
    }
  }

  void step_activity() {
    std::size_t i = std::uniform_int_distribution<std::size_t>(0, m_running.size() - 1)(m_rng);
    running& a = m_running[i];
    if (a.budget > 0 && coin()) { // spawn a child somewhere
      const int child_budget = std::uniform_int_distribution<int>(0, a.budget - 1)(m_rng);
      a.budget -= child_budget + 1;
      const place_id to = random_place();
      if (a.is_home_body) {
        if (m_home.on_send(to)) { // the remote part opens
          ++m_home_local;
          m_remote_open = true;
        }
      } else {
        m_proxies[a.where].tally.on_send(to);
      }
      send(a.where, to, activity_msg{child_budget});
      return;
    }
    const running done = a; // the activity ends
    m_running.erase(m_running.begin() + static_cast<std::ptrdiff_t>(i));
    if (done.is_home_body) {
      if (m_remote_open) send_asks(m_home.on_home_quiet()); // before its end is counted
      home_strand_ended();
      return;
    }
    proxy& p = m_proxies[done.where];
    if (--p.live == 0) quiet(done.where);
  }

  void quiet(place_id where) {
    proxy& p = m_proxies[where];
    const bool stream = p.tally.received_from_home() >= m_stream;
    if ((p.reports > 0 || stream) && !p.asked && where != 0) p.held = true; // until asked
    else if (coin()) report(where);
    else p.deferred = true; // reports later, if still quiet then
  }

  void send_asks(const std::vector<place_id>& places) {
    for (place_id p : places) {
      EXPECT_LT(m_asked_at.count(p), 1U) << "place " << p << " asked twice";
      m_asked_at.insert(p);
      if (p != 0) send(0, p, ask_msg{}); // the home's own proxy never holds a report
    }
  }

  void deliver_one() {
    auto it = m_channels.begin();
    std::advance(it, std::uniform_int_distribution<std::size_t>(0, m_channels.size() - 1)(m_rng));
    const place_id from = std::get<0>(it->first);
    const place_id to = std::get<1>(it->first);
    message m = std::move(it->second.front());
    it->second.pop_front();
    if (it->second.empty()) m_channels.erase(it);
    if (auto* a = std::get_if<activity_msg>(&m)) {
      ++m_activities;
      proxy& p = m_proxies[to];
      ++p.live;
      p.tally.on_arrivals(1, from == 0);
      m_running.push_back({to, a->budget, false});
    } else if (std::holds_alternative<ask_msg>(m)) {
      proxy& p = m_proxies[to];
      p.asked = true;
      if (p.held && p.live == 0) report(to);
    } else {
      apply_report(std::get<finish_report>(m));
    }
  }

  void apply_report(const finish_report& r) {
    std::vector<place_id> ask;
    const bool closed = m_home.on_report(r, &ask);
    send_asks(ask);
    if (closed) { // the remote part closed
      m_remote_open = false;
      home_strand_ended();
    }
  }

  void home_strand_ended() {
    ASSERT_GT(m_home_local, 0);
    if (--m_home_local > 0) return;
    ASSERT_FALSE(m_terminated) << "terminated twice";
    m_terminated = true;
    // Exactly when nothing is alive or in flight:
    EXPECT_TRUE(m_running.empty()) << m_running.size() << " activities still running";
    for (const auto& [key, q] : m_channels)
      for (const auto& msg : q)
        EXPECT_FALSE(std::holds_alternative<activity_msg>(msg)) << "an activity still in flight";
  }

  struct proxy {
    int live = 0;
    int reports = 0;
    bool deferred = false; // owes a report that leaves at a random later step
    bool held = false;     // owes a report that leaves when the home asks
    bool asked = false;
    proxy_tally tally;
  };

  place_id m_places;
  std::mt19937_64 m_rng;
  std::vector<proxy> m_proxies;
  std::uint64_t m_stream; // see k_stream_activities
  home_tally m_home;
  int m_home_local = 0; // the body, and the remote part while open
  bool m_remote_open = false;
  std::set<place_id> m_asked_at;
  bool m_terminated = false;
  int m_activities = 0;
  std::vector<running> m_running;
  std::uint64_t m_report_channels = 0;
  // (from, to, channel): FIFO per channel.
  std::map<std::tuple<place_id, place_id, std::uint64_t>, std::deque<message>> m_channels;
};

TEST(finish_protocol, terminates_exactly_when_nothing_is_alive_or_in_flight) {
  long total = 0;
  for (std::uint64_t seed = 1; seed <= 3000; ++seed) {
    const place_id places = 1 + static_cast<place_id>(seed % 6);
    const std::uint64_t stream = seed % 5 == 0 ? 1'000'000 : 1 + seed % 4;
    simulation sim(places, seed, stream);
    total += sim.run(static_cast<int>(5 + seed % 60));
    if (testing::Test::HasFailure()) FAIL() << "seed " << seed << ", " << places << " places";
  }
  EXPECT_GT(total, 5000); // the schedules did run many remote activities
}

TEST(finish_protocol, a_finish_that_stays_home_never_opens_its_remote_part) {
  home_tally home;
  EXPECT_TRUE(home.snapshot().empty());
  EXPECT_TRUE(home.on_send(3)); // opens
  EXPECT_FALSE(home.on_send(3));
  EXPECT_FALSE(home.on_report(finish_report{{}, 3, 0, 1, {}}));
  // place 3 done, but it sent one to place 2
  EXPECT_FALSE(home.on_report(finish_report{{}, 3, 1, 1, {{2, 1}}}));
  EXPECT_TRUE(home.on_report(finish_report{{}, 2, 0, 1, {}}));
}

TEST(finish_protocol, a_report_that_overtakes_an_earlier_one_of_its_place_waits_for_it) {
  // Home sent a to place 1; a sent b to place 2, b sent c to place 1, all ended. Place 1's
  // second report (c) overtakes its first (a, which sent b): applied at once it would close
  // the finish while place 2's report and place 1's first are still on their way.
  home_tally home;
  EXPECT_TRUE(home.on_send(1));
  EXPECT_FALSE(home.on_report(finish_report{{}, 1, 1, 1, {}})); // held back
  EXPECT_EQ(home.held_back(), 1U);
  EXPECT_FALSE(home.on_report(finish_report{{}, 2, 0, 1, {{1, 1}}}));
  EXPECT_TRUE(home.on_report(finish_report{{}, 1, 0, 1, {{2, 1}}})); // and the held-back one
  EXPECT_EQ(home.held_back(), 0U);
}

TEST(finish_protocol, a_quiet_home_asks_each_place_that_reported_and_is_pending_once) {
  home_tally home;
  EXPECT_TRUE(home.on_send(1));
  home.on_send(1);
  home.on_send(1);
  home.on_send(2); // place 2 never reports before the home is quiet
  std::vector<place_id> ask;
  EXPECT_FALSE(home.on_report(finish_report{{}, 1, 0, 1, {}}, &ask)); // 2 of 3 still pending
  EXPECT_TRUE(ask.empty()) << "the home is busy: nobody is asked";
  EXPECT_EQ(home.on_home_quiet(), (std::vector<place_id>{1}));
  EXPECT_FALSE(home.on_report(finish_report{{}, 1, 1, 1, {}}, &ask));
  EXPECT_TRUE(ask.empty()) << "place 1 was asked already";
  EXPECT_FALSE(home.on_report(finish_report{{}, 2, 0, 1, {}}, &ask));
  EXPECT_TRUE(ask.empty()) << "place 2 is done";
  EXPECT_TRUE(home.on_report(finish_report{{}, 1, 2, 1, {}}, &ask));
}

TEST(finish_protocol, a_report_that_makes_a_reported_place_pending_again_asks_it) {
  home_tally home;
  EXPECT_TRUE(home.on_send(1));
  home.on_send(2);
  std::vector<place_id> ask;
  EXPECT_FALSE(home.on_report(finish_report{{}, 1, 0, 1, {}}, &ask)); // place 1 is done
  EXPECT_TRUE(home.on_home_quiet().empty()) << "place 2 never reported: it reports at once";
  // Place 2 sent one more activity to place 1, which now holds the report of it.
  EXPECT_FALSE(home.on_report(finish_report{{}, 2, 0, 1, {{1, 1}}}, &ask));
  EXPECT_EQ(ask, (std::vector<place_id>{1}));
  ask.clear();
  EXPECT_TRUE(home.on_report(finish_report{{}, 1, 1, 1, {}}, &ask));
  EXPECT_TRUE(ask.empty());
}

TEST(finish_protocol, a_quiet_home_asks_a_place_sent_a_stream_even_before_its_first_report) {
  home_tally home(3); // a stream: 3 activities
  EXPECT_TRUE(home.on_send(1));
  home.on_send(1);
  home.on_send(1);
  home.on_send(2);
  home.on_send(2); // 2 to place 2: below a stream, its first report leaves unasked
  EXPECT_EQ(home.on_home_quiet(), (std::vector<place_id>{1}));
  std::vector<place_id> ask;
  EXPECT_FALSE(home.on_report(finish_report{{}, 2, 0, 2, {{1, 1}}}, &ask));
  EXPECT_TRUE(ask.empty()) << "place 1 was asked already";
  EXPECT_TRUE(home.on_report(finish_report{{}, 1, 0, 4, {}}, &ask));
}

TEST(finish_protocol, proxy_reports_reset_the_counts) {
  proxy_tally p;
  p.on_arrivals(2, false);
  p.on_send(4);
  p.on_send(4);
  p.on_send(1);
  finish_report r = p.take_report(finish_id{0, 7}, 2);
  EXPECT_EQ(r.completed, 2U);
  EXPECT_EQ(r.from, 2U);
  EXPECT_EQ(r.seq, 0U);
  ASSERT_EQ(r.sent.size(), 2U);
  EXPECT_EQ(r.sent[0], (std::pair<place_id, std::uint64_t>{4, 2}));
  finish_report again = p.take_report(finish_id{0, 7}, 2);
  EXPECT_EQ(again.completed, 0U);
  EXPECT_EQ(again.seq, 1U);
  EXPECT_TRUE(again.sent.empty());
}

TEST(finish_protocol, a_proxy_counts_sends_to_many_places_exactly) {
  // Random access at thousands of places: a proxy sends to every place, in no order. Runs to
  // one place, a few places (the scan) and many (the index), across two reports.
  proxy_tally p;
  for (int report = 0; report < 2; ++report) {
    std::map<place_id, std::uint64_t> expected;
    const auto send = [&](place_id to) {
      p.on_send(to);
      ++expected[to];
    };
    send(5);
    send(5);                                      // a run
    for (place_id i = 0; i < 6; ++i) send(i % 3); // a few places: scanned
    std::uint64_t x = 12345 + static_cast<std::uint64_t>(report);
    for (int i = 0; i < 20000; ++i) { // many: indexed
      x = x * 6364136223846793005ULL + 1442695040888963407ULL;
      const auto to = static_cast<place_id>((x >> 33) % 1000);
      send(to);
      if (i % 7 == 0) send(to); // runs in between
    }
    const finish_report r = p.take_report(finish_id{0, 1}, 1);
    const std::map<place_id, std::uint64_t> got(r.sent.begin(), r.sent.end());
    EXPECT_EQ(got.size(), r.sent.size()) << "one entry per place";
    EXPECT_EQ(got, expected) << "report " << report;
  }
  // After a report, the counts start again from nothing (the index too).
  p.on_send(999);
  p.on_send(3);
  p.on_send(999);
  const finish_report last = p.take_report(finish_id{0, 1}, 1);
  EXPECT_EQ(last.sent, (std::vector<std::pair<place_id, std::uint64_t>>{{999, 2}, {3, 1}}));
}

} // namespace
