// Routed coalescing on real places, run by ctest under mpiexec -n 1, 2 and 4 with routing forced
// (--route-above 0; at 4 places a 2 x 2 grid: 0 <-> 3 goes through 1 or 2, 1 <-> 2 through 0
// or 3). Every update of an aggregator and every plain async_at arrives exactly once, counted
// per (source, destination); a finish waits for chains of activities that cross the grid's
// diagonals; and at 4 places some messages were forwarded. Aggregated updates for a place
// across the grid are relayed by an intermediate place: random streams of them arrive exactly
// once, also at 9 places (3 x 3), where an intermediate holds updates of two sources together.
#include <apgas/aggregator.hpp>
#include <apgas/apgas.hpp>
#include <apgas/message_counts.hpp>

#include "../../places_test_main.hpp"
#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <utility>
#include <vector>

using apgas::finish;
using apgas::global_ref;
using apgas::place_id;
using apgas::task;

namespace {

apgas::runtime* g_rt = nullptr;

constexpr place_id k_max_places = 9;
constexpr std::uint32_t k_per_pair = 20'000; ///< messages from each place to each place

/// At each place, per source: what arrived, and a bit per message (a second arrival shows).
struct arrivals {
  std::array<std::atomic<std::uint64_t>, k_max_places> count{};
  std::array<std::atomic<std::uint64_t>, k_max_places> twice{};
  std::vector<std::atomic<std::uint8_t>> seen =
      std::vector<std::atomic<std::uint8_t>>(k_max_places * k_per_pair);

  void arrive(std::uint32_t source, std::uint32_t i) {
    // relaxed: counts read after the finish that waited for every arrival (its end orders them).
    count[source].fetch_add(1, std::memory_order_relaxed);
    if (seen[source * k_per_pair + i].exchange(1, std::memory_order_relaxed) != 0)
      twice[source].fetch_add(1, std::memory_order_relaxed);
  }
  /// Per source: (arrived, arrived twice); resets.
  std::array<std::uint64_t, 2 * k_max_places> take() {
    std::array<std::uint64_t, 2 * k_max_places> out{};
    for (place_id s = 0; s < k_max_places; ++s) {
      out[2 * s] = count[s].exchange(0, std::memory_order_relaxed);
      out[2 * s + 1] = twice[s].exchange(0, std::memory_order_relaxed);
    }
    for (auto& b : seen) b.store(0, std::memory_order_relaxed);
    return out;
  }
};
arrivals g_arrivals;
/// A second object at each place: updates for two targets of one place must not mix.
arrivals g_arrivals_b;

/// A plain function object (not a coroutine): its asyncs are run from the received bytes.
struct arrive {
  void operator()(std::uint32_t source, std::uint32_t i) const { g_arrivals.arrive(source, i); }
};

struct arrive_update {
  void operator()(arrivals& a, std::uint32_t source, std::uint32_t i) const { a.arrive(source, i); }
};

/// Checks that every place got exactly k_per_pair messages from every place, none twice.
task<> expect_exactly_once() {
  for (place_id d = 0; d < apgas::places(); ++d) {
    const auto got = co_await apgas::at(d, [] { return g_arrivals.take(); });
    for (place_id s = 0; s < apgas::places(); ++s) {
      EXPECT_EQ(got[2 * s], k_per_pair) << s << " -> " << d;
      EXPECT_EQ(got[2 * s + 1], 0u) << s << " -> " << d << ": arrived twice";
    }
  }
}

TEST(routing, every_plain_async_arrives_once_per_source_and_destination) {
  ASSERT_LE(g_rt->places(), k_max_places);
  g_rt->run([]() -> task<> {
    co_await finish([]() -> task<> {
      for (place_id p = 0; p < apgas::places(); ++p) {
        co_await apgas::async_at(p, []() -> task<> {
          // From every place a stream to every place, interleaved (coalesced and merged).
          const auto me = static_cast<std::uint32_t>(apgas::here());
          for (std::uint32_t i = 0; i < k_per_pair; ++i)
            for (place_id d = 0; d < apgas::places(); ++d)
              co_await apgas::async_at(d, arrive{}, me, i);
        });
      }
    });
    co_await expect_exactly_once();
  });
}

TEST(routing, every_aggregated_update_arrives_once_per_source_and_destination) {
  g_rt->run([]() -> task<> {
    co_await finish([]() -> task<> {
      for (place_id p = 0; p < apgas::places(); ++p) {
        co_await apgas::async_at(p, []() -> task<> {
          std::vector<global_ref<arrivals>> refs;
          for (place_id d = 0; d < apgas::places(); ++d)
            refs.push_back(co_await apgas::at(d, [] { return global_ref<arrivals>(g_arrivals); }));
          auto agg = co_await apgas::make_aggregator<arrive_update, arrivals, std::uint32_t,
                                                     std::uint32_t>(512);
          const auto me = static_cast<std::uint32_t>(apgas::here());
          for (std::uint32_t i = 0; i < k_per_pair; ++i)
            for (place_id d = 0; d < apgas::places(); ++d) agg.push(refs[d], me, i);
        });
      }
    });
    co_await expect_exactly_once();
  });
}

/// splitmix64: the random streams below, replayed by the checker.
std::uint64_t mix(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

/// Update i of place `source`'s stream in round `seed`: its destination, which of the two
/// objects there, and whether the sender flushes after it.
struct random_update {
  place_id destination;
  bool second_object;
  bool flush_after;
};
random_update draw(std::uint64_t seed, place_id source, std::uint32_t i, place_id places) {
  const std::uint64_t r = mix(seed * 1'000'003 + source * std::uint64_t{k_per_pair} + i);
  return {static_cast<place_id>(r % places), ((r >> 32) & 1) != 0, (r >> 40) % 997 == 0};
}

TEST(routing, random_aggregated_streams_arrive_exactly_once) {
  // Each round: every place pushes k_per_pair updates to random places and objects, through an
  // aggregator with buffers of a random size, flushing now and then. Routed, the updates for
  // a place across the grid go through an intermediate, which holds them in batches with
  // those of the other places of its row.
  for (std::uint64_t seed = 1; seed <= 6; ++seed) {
    g_rt->run([seed]() -> task<> {
      co_await finish([seed]() -> task<> {
        for (place_id p = 0; p < apgas::places(); ++p) {
          co_await apgas::async_at(
              p,
              [](std::uint64_t round) -> task<> {
                std::vector<global_ref<arrivals>> first, second;
                for (place_id d = 0; d < apgas::places(); ++d) {
                  first.push_back(
                      co_await apgas::at(d, [] { return global_ref<arrivals>(g_arrivals); }));
                  second.push_back(
                      co_await apgas::at(d, [] { return global_ref<arrivals>(g_arrivals_b); }));
                }
                constexpr std::size_t k_sizes[] = {8, 64, 512, 8192};
                auto agg = co_await apgas::make_aggregator<arrive_update, arrivals, std::uint32_t,
                                                           std::uint32_t>(
                    k_sizes[mix(round + apgas::here()) % 4]);
                const auto me = static_cast<std::uint32_t>(apgas::here());
                for (std::uint32_t i = 0; i < k_per_pair; ++i) {
                  const random_update u = draw(round, me, i, apgas::places());
                  agg.push(u.second_object ? second[u.destination] : first[u.destination], me, i);
                  if (u.flush_after) agg.flush();
                }
              },
              seed);
        }
      });
      // Read right after the finish: an update it did not wait for would be missing here.
      const place_id n = apgas::places();
      for (place_id d = 0; d < n; ++d) {
        const auto got = co_await apgas::at(d, [] {
          return std::pair{g_arrivals.take(), g_arrivals_b.take()};
        });
        for (place_id s = 0; s < n; ++s) {
          std::uint64_t want[2] = {0, 0};
          for (std::uint32_t i = 0; i < k_per_pair; ++i) {
            const random_update u = draw(seed, s, i, n);
            if (u.destination == d) ++want[u.second_object ? 1 : 0];
          }
          EXPECT_EQ(got.first[2 * s], want[0]) << "seed " << seed << ": " << s << " -> " << d;
          EXPECT_EQ(got.second[2 * s], want[1]) << "seed " << seed << ": " << s << " -> " << d;
          EXPECT_EQ(got.first[2 * s + 1] + got.second[2 * s + 1], 0u)
              << "seed " << seed << ": " << s << " -> " << d << ": arrived twice";
        }
      }
    });
  }
}

TEST(routing, aggregated_updates_across_the_grid_are_relayed) {
  const std::uint64_t relayed = g_rt->run([]() -> task<std::uint64_t> {
    const std::uint64_t before = (co_await apgas::total_message_counts()).updates_relayed;
    const auto last =
        co_await apgas::at(apgas::places() - 1, [] { return global_ref<arrivals>(g_arrivals); });
    co_await finish([&]() -> task<> {
      auto agg =
          co_await apgas::make_aggregator<arrive_update, arrivals, std::uint32_t, std::uint32_t>();
      for (std::uint32_t i = 0; i < 1000; ++i) agg.push(last, 0, i);
    });
    (void)g_arrivals.take();
    co_return (co_await apgas::total_message_counts()).updates_relayed - before;
  });
  // From place 0 to the last place: across the grid at 4 and 9 places (2 x 2, 3 x 3).
  const place_id n = g_rt->places();
  EXPECT_EQ(relayed, n == 4 || n == 9 ? 1000u : 0u);
}

std::atomic<std::uint64_t> g_ran{0};

/// An activity that hops `hops` more times, each time to the place across the grid's diagonal
/// (p ^ 3 at 4 places: routed) and, every third hop, also to a neighbour (direct).
struct hop {
  task<> operator()(int hops) const {
    g_ran.fetch_add(1, std::memory_order_relaxed); // relaxed: read after the finish
    if (hops == 0) co_return;
    const place_id n = apgas::places();
    co_await apgas::async_at((apgas::here() ^ 3U) % n, hop{}, hops - 1);
    if (hops % 3 == 0) co_await apgas::async_at((apgas::here() + 1) % n, hop{}, hops - 1);
  }
};

TEST(routing, a_finish_waits_for_chains_of_routed_activities) {
  for (int round = 0; round < 20; ++round) {
    const int hops = 3 + round % 7;
    const std::uint64_t ran = g_rt->run([hops]() -> task<std::uint64_t> {
      for (place_id p = 0; p < apgas::places(); ++p)
        (void)co_await apgas::at(p, [] { return g_ran.exchange(0, std::memory_order_relaxed); });
      co_await finish([hops]() -> task<> {
        for (place_id p = 0; p < apgas::places(); ++p) co_await apgas::async_at(p, hop{}, hops);
      });
      // Read right after the finish: anything it did not wait for would be missing here.
      std::uint64_t total = 0;
      for (place_id p = 0; p < apgas::places(); ++p)
        total += co_await apgas::at(p, [] { return g_ran.load(std::memory_order_relaxed); });
      co_return total;
    });
    // Activities of a chain of `hops` hops from one place: a(h) = 1 + a(h - 1) (+ a(h - 1)
    // every third hop).
    std::uint64_t a = 1;
    for (int h = 1; h <= hops; ++h) a = 1 + (h % 3 == 0 ? 2 : 1) * a;
    EXPECT_EQ(ran, a * g_rt->places()) << hops << " hops";
  }
}

TEST(routing, at_four_places_the_diagonals_go_through_a_third_place) {
  const std::uint64_t forwarded = g_rt->run([]() -> task<std::uint64_t> {
    const std::uint64_t before = (co_await apgas::total_message_counts()).messages_forwarded;
    co_await finish([]() -> task<> {
      for (place_id p = 0; p < apgas::places(); ++p)
        co_await apgas::async_at(p, [] { g_ran.fetch_add(1, std::memory_order_relaxed); });
    });
    co_return (co_await apgas::total_message_counts()).messages_forwarded - before;
  });
  if (g_rt->places() == 4) EXPECT_GT(forwarded, 0u); // 0 -> 3, and the finish's reports
  else EXPECT_EQ(forwarded, 0u);                     // every pair shares a row or a column
}

} // namespace

int main(int argc, char** argv) { return apgas_test::run_places_tests(argc, argv, g_rt); }
