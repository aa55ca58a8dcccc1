// Random trees of async, finish and sequential calls; every node counted exactly once, and
// every finish sees exactly its subtree when it completes.
#include "test_support.hpp"

#include <atomic>
#include <cstdint>

using apgas::async;
using apgas::finish;
using apgas::task;

namespace {

std::uint64_t mix(std::uint64_t x) { // splitmix64
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

enum class shape { escaping_asyncs, finish_of_asyncs, sequential_calls, finish_all_pairs };

struct node_plan {
  int children;
  shape kind;
};

node_plan plan(std::uint64_t seed) {
  const std::uint64_t r = mix(seed);
  return {static_cast<int>(r % 5), static_cast<shape>((r >> 8) % 4)};
}

std::uint64_t child_seed(std::uint64_t seed, int i) { return mix(seed ^ (0x1000U + i)); }

long expected_nodes(std::uint64_t seed, int depth) {
  long n = 1;
  if (depth == 0) return n;
  const node_plan p = plan(seed);
  for (int i = 0; i < p.children; ++i) n += expected_nodes(child_seed(seed, i), depth - 1);
  return n;
}

task<> node(std::uint64_t seed, int depth, std::atomic<long>& count, std::atomic<int>& errors) {
  count.fetch_add(1, std::memory_order_relaxed);
  if (depth == 0) co_return;
  const node_plan p = plan(seed);
  switch (p.kind) {
  case shape::escaping_asyncs:
    for (int i = 0; i < p.children; ++i)
      co_await async(node(child_seed(seed, i), depth - 1, count, errors));
    break;
  case shape::finish_of_asyncs: {
    std::atomic<long> local{0};
    co_await finish([&]() -> task<> {
      for (int i = 0; i < p.children; ++i)
        co_await async(node(child_seed(seed, i), depth - 1, local, errors));
    });
    long want = 0;
    for (int i = 0; i < p.children; ++i) want += expected_nodes(child_seed(seed, i), depth - 1);
    if (local.load() != want) errors.fetch_add(1);
    count.fetch_add(local.load(), std::memory_order_relaxed);
    break;
  }
  case shape::sequential_calls:
    for (int i = 0; i < p.children; ++i)
      co_await node(child_seed(seed, i), depth - 1, count, errors);
    break;
  case shape::finish_all_pairs: // children in pairs (and a lone last one) through finish_all
    for (int i = 0; i < p.children; i += 2) {
      if (i + 1 < p.children) {
        co_await apgas::finish_all(node(child_seed(seed, i), depth - 1, count, errors),
                                   node(child_seed(seed, i + 1), depth - 1, count, errors));
      } else {
        co_await apgas::finish_all(node(child_seed(seed, i), depth - 1, count, errors));
      }
    }
    break;
  }
}

class random_trees : public apgas_test::runtime_test {};

TEST_P(random_trees, count_every_node_exactly_once) {
  for (std::uint64_t seed = 1; seed <= 60 / apgas_test::k_sanitizer_slowdown; ++seed) {
    constexpr int k_depth = 12;
    std::atomic<long> count{0};
    std::atomic<int> errors{0};
    long at_end = -1;
    rt().run([&]() -> task<> {
      co_await finish([&]() -> task<> { co_await node(seed, k_depth, count, errors); });
      at_end = count.load();
    });
    ASSERT_EQ(errors.load(), 0) << "seed " << seed;
    ASSERT_EQ(at_end, expected_nodes(seed, k_depth)) << "seed " << seed;
  }
}

APGAS_INSTANTIATE_CONFIGS(random_trees);

// Adaptive with tiny bounds: spawns switch between help-first and work-first all the time,
// inside one finish and one frame (see adaptive_runs_child_first in worker.hpp).
TEST(random_trees_adaptive, count_every_node_exactly_once_at_tiny_bounds) {
  for (unsigned bound : {1U, 2U, 3U}) {
    for (unsigned workers : {1U, 2U, 4U}) {
      apgas::options o;
      o.default_policy = apgas::policy::adaptive;
      o.adaptive_bound = bound;
      o.threads = workers;
      o.pin_workers = false;
      apgas::local_runtime rt(o);
      for (std::uint64_t seed = 1; seed <= 30 / apgas_test::k_sanitizer_slowdown; ++seed) {
        constexpr int k_depth = 12;
        std::atomic<long> count{0};
        std::atomic<int> errors{0};
        long at_end = -1;
        rt.run([&]() -> task<> {
          co_await finish([&]() -> task<> { co_await node(seed, k_depth, count, errors); });
          at_end = count.load();
        });
        ASSERT_EQ(errors.load(), 0) << "seed " << seed << " bound " << bound;
        ASSERT_EQ(at_end, expected_nodes(seed, k_depth))
            << "seed " << seed << " bound " << bound << " workers " << workers;
      }
    }
  }
}

} // namespace
