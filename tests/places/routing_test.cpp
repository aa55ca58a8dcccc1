// Routed coalescing (places/src/transport/routing.hpp) on the in-process fake network, with
// routing forced (--route-above 0): at 4 places the grid is 2 x 2, and messages between 0 and
// 3 and between 1 and 2 go through an intermediate place. Under random schedules (which place
// polls, sends, flushes or runs an activity next, and in which order network messages from
// different sources arrive, all drawn from a seed that a failure prints):
//  - every message arrives exactly once, with its original source, in per-(source,
//    destination) order, whichever send path it took (send, send_merged, send_now);
//  - no place ever sends a network message to a place outside its row and column;
//  - a finish, counted with the distributed finish's own tallies (finish_tally.hpp) over routed
//    activities and routed reports, ends only once every activity ran, and then nothing is left
//    in flight;
//  - with each place on a thread of its own, forwarding races with sending to the same
//    intermediate's buffer and nothing is lost (run under TSan by its preset).
// No sleeps: one thread drives every place, or each place's thread polls until all arrived.
#include "apgas/detail/finish_tally.hpp"
#include "apgas/detail/transport.hpp"

#include "fake_transport.hpp"
#include "routing.hpp"
#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <deque>
#include <map>
#include <random>
#include <set>
#include <span>
#include <thread>
#include <vector>

namespace {

using namespace apgas::detail;

// ---- the grid -------------------------------------------------------------------------------

TEST(routing, a_message_takes_at_most_two_hops_through_this_places_row_and_column) {
  for (place_id places = 1; places <= 150; ++places) {
    const route_grid grid(places, 0);
    const place_id c = grid.columns();
    const auto peers = [&](place_id a, place_id b) { return a / c == b / c || a % c == b % c; };
    for (place_id s = 0; s < places; ++s) {
      std::set<place_id> hops;
      for (place_id d = 0; d < places; ++d) {
        const place_id m = grid.next_hop(s, d);
        ASSERT_LT(m, places) << s << " -> " << d << " of " << places;
        ASSERT_TRUE(m == d || peers(s, m)) << s << " -> " << d << " of " << places;
        ASSERT_EQ(grid.next_hop(m, d), d) << "a third hop: " << s << " -> " << m << " -> " << d;
        ASSERT_TRUE(m == d || peers(m, d));
        if (m != s) hops.insert(m);
      }
      // The places it keeps buffers for are exactly its row and its column.
      EXPECT_EQ(hops.size(), grid.peers(s)) << s << " of " << places;
    }
  }
}

TEST(routing, a_place_keeps_buffers_for_about_two_square_roots_of_the_places) {
  for (place_id places : {1'000u, 10'000u, 100'000u, 1'000'003u}) {
    const route_grid grid(places, 0);
    for (place_id s : {place_id{0}, places / 2, places - 1})
      EXPECT_LE(grid.peers(s), 2 * grid.columns()) << s << " of " << places;
  }
  const route_grid off(100'000, 100'000); // not beyond the threshold: direct
  EXPECT_FALSE(off.on());
  EXPECT_EQ(off.next_hop(0, 99'999), 99'999u);
  EXPECT_EQ(off.peers(0), 99'999u);
}

// ---- exactly once, in order -----------------------------------------------------------------

apgas::options routed_options(std::size_t coalesce_bytes) {
  apgas::options o;
  o.route_above = 0;
  o.coalesce_bytes = coalesce_bytes;
  o.flush_us = 10'000'000; // buffers leave when full or flushed: the schedule decides, not time
  o.max_outstanding_bytes = std::size_t{1} << 30; // one thread drives all: never wait for room
  o.max_outstanding_sends = 1U << 20;
  return o;
}

struct payload {
  place_id source;
  place_id destination;
  std::uint64_t seq;
};

/// The message of `p` whose body is written by a send_merged writer (no head bytes used).
void write_payload(std::byte* at, const void* context) noexcept {
  std::memcpy(at, context, sizeof(payload));
}

constexpr place_id k_places = 4;

TEST(routing, every_message_arrives_once_in_order_with_its_source_under_random_schedules) {
  for (std::uint64_t seed = 1; seed <= 60; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    std::mt19937_64 rng(seed);
    const std::size_t coalesce = 64 + rng() % 512; // a few messages per buffer
    fake_network net(k_places, routed_options(coalesce), seed, /*reorder=*/true);
    // next[s][d]: the sequence number the next message from s to d must carry.
    std::array<std::array<std::uint64_t, k_places>, k_places> sent{}, next{};
    for (place_id p = 0; p < k_places; ++p) {
      net.endpoint(p).set_handler([&, p](place_id from, std::span<const std::byte> m) {
        // A merged message is a 32-byte head (zero here) and the payloads merged into it.
        const std::size_t start = m.size() == sizeof(payload) ? 0 : sizeof(merge_head);
        ASSERT_EQ((m.size() - start) % sizeof(payload), 0u);
        for (std::size_t at = start; at < m.size(); at += sizeof(payload)) {
          payload got{};
          std::memcpy(&got, m.data() + at, sizeof got);
          ASSERT_EQ(got.destination, p);
          ASSERT_EQ(got.source, from) << "delivered with the intermediate as its source";
          ASSERT_EQ(got.seq, next[from][p]) << from << " -> " << p << ": lost, twice or reordered";
          ++next[from][p];
        }
      });
    }
    for (int step = 0; step < 4000; ++step) {
      const auto p = static_cast<place_id>(rng() % k_places);
      const auto d = static_cast<place_id>(rng() % k_places);
      switch (rng() % 8) {
      case 0:
        net.endpoint(p).flush();
        break;
      case 1:
      case 2:
        net.endpoint(p).poll();
        break;
      default: {
        const payload m{p, d, sent[p][d]++};
        const auto bytes = std::as_bytes(std::span(&m, 1));
        switch (rng() % 3) {
        case 0:
          net.endpoint(p).send(d, bytes);
          break;
        case 1:
          net.endpoint(p).send_merged(d, merge_head{}, sizeof m, write_payload, &m);
          break;
        default:
          net.endpoint(p).send_now(d, bytes);
        }
      }
      }
      if (testing::Test::HasFatalFailure()) return;
    }
    for (int round = 0; round < 100; ++round) { // drain: two hops need two rounds at least
      for (place_id p = 0; p < k_places; ++p) net.endpoint(p).flush();
      if (net.poll_all() == 0 && round > 4) break;
    }
    std::uint64_t forwarded = 0;
    for (place_id s = 0; s < k_places; ++s) {
      for (place_id d = 0; d < k_places; ++d) EXPECT_EQ(next[s][d], sent[s][d]) << s << " -> " << d;
      forwarded += net.endpoint(s).stats().forwarded_messages;
      EXPECT_TRUE(net.endpoint(s).quiescent());
    }
    EXPECT_GT(forwarded, 0u) << "nothing was routed";
    // The diagonals of the 2 x 2 grid never saw a network message: they went through 1 or 2.
    for (auto [s, d] : {std::pair{0u, 3u}, {3u, 0u}, {1u, 2u}, {2u, 1u}})
      EXPECT_EQ(net.peak_queued_messages(s, d), 0u) << s << " -> " << d;
    if (testing::Test::HasFailure()) return;
  }
}

TEST(routing, the_intermediate_holds_a_plain_message_but_passes_an_urgent_one_on_at_once) {
  fake_network net(k_places, routed_options(4096));
  std::vector<std::pair<place_id, std::uint64_t>> at_3; // (source, value) delivered at place 3
  for (place_id p = 0; p < k_places; ++p)
    net.endpoint(p).set_handler([&, p](place_id from, std::span<const std::byte> m) {
      ASSERT_EQ(p, 3u) << "delivered at the intermediate";
      std::uint64_t v;
      std::memcpy(&v, m.data(), sizeof v);
      at_3.emplace_back(from, v);
    });
  ASSERT_EQ(route_grid(k_places, 0).next_hop(0, 3), 1u); // 0 -> 3 goes through 1
  const auto message = [](const std::uint64_t& v) { return std::as_bytes(std::span(&v, 1)); };
  const std::uint64_t plain = 7;
  const std::uint64_t urgent = 8;

  // A plain message: the source's flush sends it to 1, which coalesces it with what it sends
  // to 3 and keeps it until its own flush (or its flush interval, 10 s here).
  net.endpoint(0).send(3, message(plain));
  net.endpoint(0).flush();
  net.endpoint(1).poll();
  net.endpoint(3).poll();
  EXPECT_TRUE(at_3.empty());
  EXPECT_EQ(net.endpoint(1).stats().forwarded_messages, 1u);
  net.endpoint(1).flush();
  net.endpoint(3).poll();
  ASSERT_EQ(at_3.size(), 1u);
  EXPECT_EQ(at_3[0], std::pair(place_id{0}, plain));

  // An urgent one (send_now: an `at`, a reply, a finish report) leaves 1 in the poll that
  // received it, without a flush there.
  net.endpoint(0).send_now(3, message(urgent));
  net.endpoint(1).poll();
  net.endpoint(3).poll();
  ASSERT_EQ(at_3.size(), 2u);
  EXPECT_EQ(at_3[1], std::pair(place_id{0}, urgent));
  EXPECT_EQ(net.endpoint(1).stats().forwarded_messages, 2u);
  // Neither counts as sent or received by the intermediate.
  EXPECT_EQ(net.endpoint(1).stats().logical_messages_sent, 0u);
  EXPECT_EQ(net.endpoint(1).stats().logical_messages_received, 0u);
  EXPECT_EQ(net.endpoint(0).stats().logical_messages_sent, 2u);
  EXPECT_EQ(net.endpoint(3).stats().logical_messages_received, 2u);
}

TEST(routing, places_on_their_own_threads_forward_while_they_send) {
  // Each place on a thread of its own sends, polls and forwards at once (TSan in its preset):
  // every message still arrives once, in order, with its source.
  constexpr std::uint64_t k_per_place = 20'000;
  fake_network net(k_places, routed_options(1024), 7, /*reorder=*/true);
  std::array<std::array<std::atomic<std::uint64_t>, k_places>, k_places> sent{};
  std::array<std::atomic<std::uint64_t>, k_places> received{};
  std::atomic<place_id> done_sending{0};
  std::atomic<bool> failed{false};
  std::array<std::array<std::uint64_t, k_places>, k_places> next{}; // next[d][s]: d's thread only
  for (place_id p = 0; p < k_places; ++p)
    net.endpoint(p).set_handler([&, p](place_id from, std::span<const std::byte> m) {
      const std::size_t start = m.size() == sizeof(payload) ? 0 : sizeof(merge_head);
      for (std::size_t at = start; at < m.size(); at += sizeof(payload)) {
        payload got{};
        std::memcpy(&got, m.data() + at, sizeof got);
        if (got.destination != p || got.source != from || got.seq != next[p][from]) failed = true;
        ++next[p][from];
        // relaxed: a count the other threads only compare with, to know when to stop.
        received[p].fetch_add(1, std::memory_order_relaxed);
      }
    });
  const auto total_sent = [&] {
    std::uint64_t n = 0;
    for (auto& row : sent)
      for (auto& c : row) n += c.load(std::memory_order_relaxed); // relaxed: see below
    return n;
  };
  const auto total_received = [&] {
    std::uint64_t n = 0;
    for (auto& c : received) n += c.load(std::memory_order_relaxed);
    return n;
  };
  std::vector<std::thread> threads;
  for (place_id p = 0; p < k_places; ++p) {
    threads.emplace_back([&, p] {
      transport& ep = net.endpoint(p);
      std::mt19937_64 rng(p + 1);
      for (std::uint64_t i = 0; i < k_per_place; ++i) {
        const auto d = static_cast<place_id>(rng() % k_places);
        // relaxed: only this thread writes sent[p][*]; the others read the totals once every
        // thread is done sending (done_sending, acq_rel below), to know what to wait for.
        const payload m{p, d, sent[p][d].load(std::memory_order_relaxed)};
        sent[p][d].store(m.seq + 1, std::memory_order_relaxed);
        const auto bytes = std::as_bytes(std::span(&m, 1));
        switch (rng() % 3) {
        case 0:
          ep.send(d, bytes);
          break;
        case 1:
          ep.send_merged(d, merge_head{}, sizeof m, write_payload, &m);
          break;
        default:
          ep.send_now(d, bytes);
        }
        if (i % 16 == 0) ep.poll();
      }
      // acq_rel: our sent counts happen-before the reads of whoever sees us done.
      done_sending.fetch_add(1, std::memory_order_acq_rel);
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
      // Every place keeps polling (and flushing what it forwards) until every message arrived:
      // an intermediate's work is not over when its own messages arrived.
      while (done_sending.load(std::memory_order_acquire) != k_places ||
             total_received() != total_sent()) {
        ep.flush();
        if (ep.poll() == 0) std::this_thread::yield();
        if (std::chrono::steady_clock::now() > deadline || failed) break;
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_FALSE(failed) << "a message arrived twice, out of order or with the wrong source";
  EXPECT_EQ(total_received(), total_sent());
  EXPECT_EQ(total_sent(), k_places * k_per_place);
  std::uint64_t forwarded = 0;
  for (place_id p = 0; p < k_places; ++p) forwarded += net.endpoint(p).stats().forwarded_messages;
  EXPECT_GT(forwarded, 0u);
}

// ---- a finish over routed activities --------------------------------------------------------

/// One finish, homed at place 0, over the routed fake network: activities are messages that
/// the destination queues and runs later (each may send more, to random places), and each
/// place reports to the home with the distributed finish's proxy_tally when its part is quiet;
/// the home applies the reports with home_tally. Reports are routed too (3 -> 0 goes via 2).
class routed_finish {
public:
  explicit routed_finish(std::uint64_t seed)
      : m_rng(seed), m_net(k_places, routed_options(64 + seed % 256), seed, true),
        m_places(k_places), m_home(1'000'000'000) /* never holds: no asks needed */ {
    for (place_id p = 0; p < k_places; ++p)
      m_net.endpoint(p).set_handler(
          [this, p](place_id from, std::span<const std::byte> m) { receive(p, from, m); });
  }

  /// Runs the finish: the home's body sends `roots` activities, then the schedule is random.
  void run(int roots, int budget) {
    for (int i = 0; i < roots; ++i) spawn(0, budget);
    m_home_body_done = true; // the home's remote part is open: its sends are pending
    for (long step = 0; !m_terminated; ++step) {
      ASSERT_LT(step, 1'000'000) << "the finish never ended; activities run " << m_ran << " of "
                                 << m_spawned;
      const auto p = static_cast<place_id>(m_rng() % k_places);
      switch (m_rng() % 4) {
      case 0:
        m_net.endpoint(p).flush();
        break;
      case 1:
        m_net.endpoint(p).poll();
        break;
      default:
        run_one(p);
      }
      if (testing::Test::HasFatalFailure()) return;
    }
    // Termination was declared: every activity ran, and none is still on its way (a later
    // delivery would be one the finish did not wait for).
    EXPECT_EQ(m_ran, m_spawned);
    for (int round = 0; round < 10; ++round) {
      for (place_id p = 0; p < k_places; ++p) m_net.endpoint(p).flush();
      m_net.poll_all();
    }
    EXPECT_EQ(m_arrived_after_end, 0u);
  }

  std::uint64_t forwarded() {
    std::uint64_t n = 0;
    for (place_id p = 0; p < k_places; ++p) n += m_net.endpoint(p).stats().forwarded_messages;
    return n;
  }
  std::uint64_t ran() const { return m_ran; }

private:
  enum class kind : std::uint8_t { activity, report };
  struct place_state {
    proxy_tally proxy;
    std::deque<int> queue;     ///< activities received, not yet run (their budgets)
    bool has_arrivals = false; ///< received activities since the last report
  };

  /// An activity of `budget` sent from `from` to a random place, counted as the runtime does:
  /// by the home's tally at the home, by the sender's proxy elsewhere, before it is sent.
  void spawn(place_id from, int budget) {
    const auto to = static_cast<place_id>(m_rng() % k_places);
    if (from == 0) m_home.on_send(to);
    else m_places[from].proxy.on_send(to);
    ++m_spawned;
    std::array<std::byte, 1 + sizeof(int)> m{};
    m[0] = static_cast<std::byte>(kind::activity);
    std::memcpy(m.data() + 1, &budget, sizeof budget);
    if (m_rng() % 2 == 0) m_net.endpoint(from).send(to, m);
    else m_net.endpoint(from).send_now(to, m);
  }

  void receive(place_id here, place_id from, std::span<const std::byte> m) {
    (void)from;
    if (m_terminated) ++m_arrived_after_end;
    if (static_cast<kind>(m[0]) == kind::activity) {
      int budget;
      std::memcpy(&budget, m.data() + 1, sizeof budget);
      place_state& s = m_places[here];
      s.proxy.on_arrivals(1, false);
      s.has_arrivals = true;
      s.queue.push_back(budget);
      return;
    }
    // A report, at the home.
    ASSERT_EQ(here, 0u);
    finish_report r{};
    std::size_t at = 1;
    const auto read = [&](auto& v) {
      std::memcpy(&v, m.data() + at, sizeof v);
      at += sizeof v;
    };
    read(r.from);
    read(r.seq);
    read(r.completed);
    std::uint64_t n;
    read(n);
    r.sent.resize(n);
    for (auto& [to, count] : r.sent) {
      read(to);
      read(count);
    }
    // Closed: every place's counts balance, sends and receipts (no report is held here).
    if (m_home.on_report(r) && m_home_body_done) {
      ASSERT_FALSE(m_terminated) << "the finish ended twice";
      m_terminated = true;
      EXPECT_EQ(m_ran, m_spawned) << "the finish ended before every routed activity ran";
      for (const place_state& s : m_places) EXPECT_TRUE(s.queue.empty());
    }
  }

  /// Runs one queued activity of `here`: it spawns up to two more while budget lasts. When the
  /// place's part goes quiet it reports (the home's own activities count at the home).
  void run_one(place_id here) {
    place_state& s = m_places[here];
    if (s.queue.empty()) return;
    const int budget = s.queue.front();
    s.queue.pop_front();
    ++m_ran;
    const int children = budget > 0 ? static_cast<int>(m_rng() % 3) : 0;
    for (int i = 0; i < children; ++i) spawn(here, budget - 1);
    if (s.queue.empty() && s.has_arrivals) report(here);
  }

  void report(place_id here) {
    place_state& s = m_places[here];
    s.has_arrivals = false;
    const finish_report r = s.proxy.take_report(finish_id{0, 1}, here);
    std::vector<std::byte> m(1);
    m[0] = static_cast<std::byte>(kind::report);
    const auto write = [&m](const auto& v) {
      const auto* b = reinterpret_cast<const std::byte*>(&v);
      m.insert(m.end(), b, b + sizeof v);
    };
    write(r.from);
    write(r.seq);
    write(r.completed);
    write(static_cast<std::uint64_t>(r.sent.size()));
    for (const auto& [to, count] : r.sent) {
      write(to);
      write(count);
    }
    m_net.endpoint(here).send(0, m); // routed from place 3 (via 2)
  }

  std::mt19937_64 m_rng;
  fake_network m_net;
  std::vector<place_state> m_places;
  home_tally m_home;
  bool m_home_body_done = false;
  bool m_terminated = false;
  std::uint64_t m_spawned = 0;
  std::uint64_t m_ran = 0;
  std::uint64_t m_arrived_after_end = 0;
};

TEST(routing, a_finish_ends_only_after_every_routed_activity_ran_under_random_schedules) {
  std::uint64_t forwarded = 0;
  std::uint64_t ran = 0;
  for (std::uint64_t seed = 1; seed <= 300; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    routed_finish f(seed);
    f.run(static_cast<int>(1 + seed % 5), static_cast<int>(3 + seed % 6));
    forwarded += f.forwarded();
    ran += f.ran();
    if (testing::Test::HasFailure()) return;
  }
  EXPECT_GT(forwarded, 0u) << "nothing was routed";
  std::printf("%llu activities over 300 seeds, %llu routed frames forwarded\n",
              static_cast<unsigned long long>(ran), static_cast<unsigned long long>(forwarded));
}

} // namespace
