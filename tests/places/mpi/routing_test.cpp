// Routed coalescing on real places, run by ctest under mpiexec -n 1, 2 and 4 with routing forced
// (--route-above 0; at 4 places a 2 x 2 grid: 0 <-> 3 goes through 1 or 2, 1 <-> 2 through 0
// or 3). Every update of an aggregator and every plain async_at arrives exactly once, counted
// per (source, destination); a finish waits for chains of activities that cross the grid's
// diagonals; and at 4 places some messages were forwarded.
#include <apgas/aggregator.hpp>
#include <apgas/apgas.hpp>
#include <apgas/message_counts.hpp>

#include "../../places_test_main.hpp"
#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <vector>

using apgas::finish;
using apgas::global_ref;
using apgas::place_id;
using apgas::task;

namespace {

apgas::runtime* g_rt = nullptr;

constexpr place_id k_max_places = 8;
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
