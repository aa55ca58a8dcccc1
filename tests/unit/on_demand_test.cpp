// On-demand splitting (apgas/on_demand.hpp): every index and every item runs exactly once,
// whatever the steal timings; exceptions end the call, never hang it.
//
// Steal timings are randomized two ways: real thieves (2 and 4 workers, bodies of random
// length), and requests raised from inside the body at seeded random items
// (detail::ask_this_worker_for_work), which split the loop at those points even at one worker.
// Each case prints its seed on failure.
#include <apgas/on_demand.hpp>

#include "test_support.hpp"

#include <atomic>
#include <cstdint>
#include <exception>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

using apgas_test::k_sanitizer_slowdown;
using apgas_test::runtime_test;

/// A short busy wait of 0 to `max_spins` rounds, drawn from a per-item hash (no shared RNG).
void spin_for(std::uint64_t item, std::uint64_t seed, unsigned max_spins) {
  std::uint64_t h = (item + 1) * 0x9E3779B97F4A7C15ULL ^ seed;
  h ^= h >> 29;
  const unsigned spins = static_cast<unsigned>(h % (max_spins + 1));
  for (unsigned i = 0; i < spins; ++i) asm volatile("" ::: "memory"); // not optimised away
}

/// True for about one item in `every` (seeded): the body asks its worker for work there.
bool asks_here(std::uint64_t item, std::uint64_t seed, std::uint64_t every) {
  std::uint64_t h = (item + 7) * 0xD6E8FEB86659FD93ULL ^ (seed * 0x9E3779B97F4A7C15ULL);
  h ^= h >> 31;
  return h % every == 0;
}

/// A random tree of n nodes (node 0 the root; each other node's parent an earlier node), as
/// child lists.
std::vector<std::vector<std::uint32_t>> random_tree(std::uint32_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<std::vector<std::uint32_t>> children(n);
  for (std::uint32_t v = 1; v < n; ++v) {
    // Biased towards recent nodes sometimes (long paths), uniform otherwise (bushy parts).
    const std::uint32_t parent =
        rng() % 3 == 0 ? v - 1 - static_cast<std::uint32_t>(rng() % std::min<std::uint32_t>(v, 4))
                       : static_cast<std::uint32_t>(rng() % v);
    children[parent].push_back(v);
  }
  return children;
}

class on_demand_test : public runtime_test {};

TEST_P(on_demand_test, for_runs_every_index_once) {
  const std::int64_t n = 200000 / k_sanitizer_slowdown;
  for (std::uint64_t seed = 1; seed <= 4; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    auto runs = std::make_unique<std::atomic<std::uint32_t>[]>(static_cast<std::size_t>(n));
    const std::uint64_t every = 1 + seed * 97; // requests: from 1 in 98 to 1 in 389 items
    rt().run([&]() -> apgas::task<> {
      co_await apgas::for_on_demand(std::int64_t{0}, n, [&](std::int64_t i) {
        const auto u = static_cast<std::uint64_t>(i);
        // relaxed: counted, and read after the run (whose end orders every body before it).
        runs[static_cast<std::size_t>(i)].fetch_add(1, std::memory_order_relaxed);
        spin_for(u, seed, 64);
        if (asks_here(u, seed, every)) apgas::detail::ask_this_worker_for_work();
      });
    });
    std::int64_t wrong = 0;
    for (std::int64_t i = 0; i < n; ++i)
      if (runs[static_cast<std::size_t>(i)].load(std::memory_order_relaxed) != 1) ++wrong;
    EXPECT_EQ(wrong, 0) << "indices not run exactly once";
  }
}

TEST_P(on_demand_test, for_of_an_empty_range_runs_nothing) {
  std::atomic<int> runs{0};
  rt().run([&]() -> apgas::task<> {
    co_await apgas::for_on_demand(5, 5, [&](int) { runs.fetch_add(1); });
    co_await apgas::for_on_demand(7, 3, [&](int) { runs.fetch_add(1); });
  });
  EXPECT_EQ(runs.load(), 0);
}

TEST_P(on_demand_test, for_over_ranges_that_end_at_the_limits_of_their_type) {
  // Halves computed without overflow: a signed range across zero up to the type's maximum,
  // an unsigned one up to its maximum, requests at every index.
  std::atomic<int> signed_runs{0};
  std::atomic<int> unsigned_runs{0};
  constexpr std::int8_t lo = -128;
  constexpr std::int8_t hi = 127;
  rt().run([&]() -> apgas::task<> {
    co_await apgas::for_on_demand(lo, hi, [&](std::int8_t) {
      signed_runs.fetch_add(1);
      apgas::detail::ask_this_worker_for_work();
    });
    co_await apgas::for_on_demand(std::uint16_t{65000}, std::uint16_t{65535}, [&](std::uint16_t) {
      unsigned_runs.fetch_add(1);
      apgas::detail::ask_this_worker_for_work();
    });
  });
  EXPECT_EQ(signed_runs.load(), 255);
  EXPECT_EQ(unsigned_runs.load(), 535);
}

TEST_P(on_demand_test, for_in_one_part_runs_in_increasing_order) {
  // With nobody asking (one worker, no requests), the whole range is one part.
  if (threads() != 1) GTEST_SKIP() << "one part only at one worker";
  std::vector<int> order;
  rt().run([&]() -> apgas::task<> {
    co_await apgas::for_on_demand(0, 1000, [&](int i) { order.push_back(i); });
  });
  ASSERT_EQ(order.size(), 1000U);
  for (int i = 0; i < 1000; ++i) ASSERT_EQ(order[static_cast<std::size_t>(i)], i);
}

TEST_P(on_demand_test, a_request_splits_the_range_in_halves) {
  // One worker, work-first: a request raised at index 10 splits [11, 1000) at 505; the spawned
  // upper half runs at once, then the continuation runs the lower half.
  if (threads() != 1 || policy() != apgas::policy::work_first)
    GTEST_SKIP() << "a predictable order at one worker under work-first only";
  std::vector<int> order;
  rt().run([&]() -> apgas::task<> {
    co_await apgas::for_on_demand(0, 1000, [&](int i) {
      order.push_back(i);
      if (i == 10) apgas::detail::ask_this_worker_for_work();
    });
  });
  std::vector<int> expected;
  for (int i = 0; i <= 10; ++i) expected.push_back(i);
  for (int i = 505; i < 1000; ++i) expected.push_back(i);
  for (int i = 11; i < 505; ++i) expected.push_back(i);
  EXPECT_EQ(order, expected);
}

TEST_P(on_demand_test, a_request_hands_on_the_oldest_half_of_the_list) {
  // One worker, work-first: root 0 pushes 1..200 (200 on top); visiting 200 asks. The loop
  // looks at the flag every k_items_between_looks (64) items: after 0 and 200..138, it splits
  // the 137 items waiting (1..137), and the oldest half, 1..68, runs at once as a part of its
  // own, newest first; then the rest, 137..69.
  if (threads() != 1 || policy() != apgas::policy::work_first)
    GTEST_SKIP() << "a predictable order at one worker under work-first only";
  static_assert(apgas::detail::k_items_between_looks == 64, "the expected order assumes 64");
  std::vector<int> order;
  rt().run([&]() -> apgas::task<> {
    std::vector<int> roots(1, 0);
    co_await apgas::traverse_on_demand(std::move(roots), [&](int v, apgas::work_list<int>& more) {
      order.push_back(v);
      if (v == 0)
        for (int k = 1; k <= 200; ++k) more.push(k);
      if (v == 200) apgas::detail::ask_this_worker_for_work();
    });
  });
  std::vector<int> expected{0};
  for (int v = 200; v >= 138; --v) expected.push_back(v);
  for (int v = 68; v >= 1; --v) expected.push_back(v);
  for (int v = 137; v >= 69; --v) expected.push_back(v);
  EXPECT_EQ(order, expected);
}

TEST_P(on_demand_test, alone_until_a_split_and_again_once_the_other_parts_end) {
  // One worker: the first part is alone; after a split (a request), the part that runs first
  // is not (the other half waits as a part of its own); once that one has ended, the
  // remaining part is alone again at its next look.
  if (threads() != 1 || policy() != apgas::policy::work_first)
    GTEST_SKIP() << "a predictable order at one worker under work-first only";
  std::vector<std::pair<int, bool>> seen; // (item, alone)
  rt().run([&]() -> apgas::task<> {
    std::vector<int> roots(1, 0);
    co_await apgas::traverse_on_demand(std::move(roots), [&](int v, apgas::work_list<int>& more) {
      seen.emplace_back(v, more.alone());
      if (v == 0)
        for (int k = 1; k <= 400; ++k) more.push(k);
      if (v == 400) apgas::detail::ask_this_worker_for_work();
    });
  });
  ASSERT_EQ(seen.size(), 401U);
  auto alone_at = [&](int v) {
    for (const auto& [item, alone] : seen)
      if (item == v) return alone;
    ADD_FAILURE() << "item " << v << " not visited";
    return false;
  };
  EXPECT_TRUE(alone_at(0));   // before any split
  EXPECT_TRUE(alone_at(338)); // 400..338: the first 64 items, before the split
  // The split at the look after 338 hands 1..168 on, run at once: not alone there.
  EXPECT_FALSE(alone_at(168));
  EXPECT_FALSE(alone_at(1));
  // Then 337..169, the rest of the first part: the other part has ended, so alone again
  // from its first look on.
  EXPECT_TRUE(alone_at(337));
}

TEST_P(on_demand_test, traverse_visits_every_node_of_random_trees_once) {
  const std::uint32_t n = 100000 / k_sanitizer_slowdown;
  for (std::uint64_t seed = 11; seed <= 14; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    const auto children = random_tree(n, seed);
    auto visits = std::make_unique<std::atomic<std::uint32_t>[]>(n);
    const std::uint64_t every = 13 + seed; // requests often: many splits of short lists
    rt().run([&]() -> apgas::task<> {
      // A named vector: GCC 12 miscompiles a braced list inside a co_await expression.
      std::vector<std::uint32_t> roots(1, 0);
      co_await apgas::traverse_on_demand(
          std::move(roots), [&](std::uint32_t v, apgas::work_list<std::uint32_t>& more) {
            // relaxed: counted, and read after the run.
            visits[v].fetch_add(1, std::memory_order_relaxed);
            spin_for(v, seed, 32);
            for (const std::uint32_t c : children[v]) more.push(c);
            if (asks_here(v, seed, every)) apgas::detail::ask_this_worker_for_work();
          });
    });
    std::uint32_t wrong = 0;
    for (std::uint32_t v = 0; v < n; ++v)
      if (visits[v].load(std::memory_order_relaxed) != 1) ++wrong;
    EXPECT_EQ(wrong, 0U) << "nodes not visited exactly once";
  }
}

TEST_P(on_demand_test, traverse_from_several_roots_and_from_none) {
  std::atomic<int> visits{0};
  rt().run([&]() -> apgas::task<> {
    co_await apgas::traverse_on_demand(std::vector<int>{},
                                       [&](int, apgas::work_list<int>&) { visits.fetch_add(1); });
  });
  EXPECT_EQ(visits.load(), 0);
  // Roots 0..99, each with children 100*r+100 .. 100*r+104 (leaves).
  auto seen = std::make_unique<std::atomic<int>[]>(10100);
  std::vector<int> roots(100);
  for (int r = 0; r < 100; ++r) roots[static_cast<std::size_t>(r)] = r;
  rt().run([&]() -> apgas::task<> {
    co_await apgas::traverse_on_demand(std::move(roots), [&](int v, apgas::work_list<int>& more) {
      seen[static_cast<std::size_t>(v)].fetch_add(1);
      if (v < 100)
        for (int k = 0; k < 5; ++k) more.emplace(100 * v + 100 + k);
      if (v % 7 == 0) apgas::detail::ask_this_worker_for_work();
    });
  });
  int wrong = 0;
  for (int v = 0; v < 10100; ++v) {
    const bool node = v < 100 || (v - 100) % 100 < 5;
    if (seen[static_cast<std::size_t>(v)].load() != (node ? 1 : 0)) ++wrong;
  }
  EXPECT_EQ(wrong, 0);
}

TEST_P(on_demand_test, a_throwing_body_ends_the_call_with_its_exception) {
  // The body throws at one index; with requests raised all along, other parts exist and run
  // to their end. The call throws the body's exception (or several: one per part that threw).
  for (std::uint64_t seed = 1; seed <= 3; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    const std::int64_t bad = static_cast<std::int64_t>(seed * 1237);
    bool caught = false;
    rt().run([&]() -> apgas::task<> {
      try {
        co_await apgas::for_on_demand(std::int64_t{0}, std::int64_t{20000}, [&](std::int64_t i) {
          if (asks_here(static_cast<std::uint64_t>(i), seed, 50))
            apgas::detail::ask_this_worker_for_work();
          if (i == bad) throw std::runtime_error("index " + std::to_string(i));
        });
      } catch (const std::runtime_error& e) {
        caught = std::string(e.what()) == "index " + std::to_string(bad);
      }
    });
    EXPECT_TRUE(caught);
  }
  bool caught = false;
  const auto children = random_tree(5000, 3);
  rt().run([&]() -> apgas::task<> {
    std::vector<std::uint32_t> roots(1, 0);
    try {
      co_await apgas::traverse_on_demand(
          std::move(roots), [&](std::uint32_t v, apgas::work_list<std::uint32_t>& more) {
            for (const std::uint32_t c : children[v]) more.push(c);
            if (v % 5 == 0) apgas::detail::ask_this_worker_for_work();
            if (v == 4321) throw std::logic_error("node 4321");
          });
    } catch (const std::logic_error& e) {
      caught = std::string(e.what()) == "node 4321";
    }
  });
  EXPECT_TRUE(caught);
}

TEST_P(on_demand_test, parts_that_throw_end_alone) {
  // Indices from 32 on throw; a request at every index splits the range again and again. The
  // parts holding only indices below 32 run to their end, and every exception reported comes
  // from a throwing index (one exception, or multiple_exceptions holding one per part).
  std::vector<std::atomic<int>> runs(64);
  std::vector<std::exception_ptr> errors;
  rt().run([&]() -> apgas::task<> {
    try {
      co_await apgas::for_on_demand(0, 64, [&](int i) {
        runs[static_cast<std::size_t>(i)].fetch_add(1);
        apgas::detail::ask_this_worker_for_work();
        if (i >= 32) throw std::runtime_error(std::to_string(i));
      });
    } catch (const apgas::multiple_exceptions& e) {
      errors = e.exceptions();
    } catch (...) {
      errors.push_back(std::current_exception());
    }
  });
  for (int i = 0; i < 32; ++i) EXPECT_EQ(runs[static_cast<std::size_t>(i)].load(), 1) << i;
  ASSERT_FALSE(errors.empty());
  for (const std::exception_ptr& e : errors) {
    try {
      std::rethrow_exception(e);
    } catch (const std::runtime_error& r) {
      EXPECT_GE(std::stoi(r.what()), 32);
    }
  }
}

APGAS_INSTANTIATE_CONFIGS(on_demand_test);

TEST(on_demand, outside_a_worker_nothing_is_split) {
  // A thread that is no worker reads a flag nobody raises.
  EXPECT_FALSE(apgas::detail::wanted_flag_here().load());
  apgas::detail::ask_this_worker_for_work(); // no effect, no crash
  EXPECT_FALSE(apgas::detail::wanted_flag_here().load());
}

} // namespace
