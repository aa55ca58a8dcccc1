// apgas::aggregator across places, run by ctest under mpiexec -n 1, 2 and 4 (and 2 workers per
// place): every update runs once at its target's place under the owner's finish, whatever the
// buffer size and wherever it was pushed from; flush and destruction send what is left; a
// failing update fails alone; a null target is refused; batches, not updates, are the
// activities sent; the updates at one place run one at a time (a plain hash table needs no
// lock: TSan checks it).
#include <apgas/apgas.hpp>

#include "../../places_test_main.hpp"
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

using apgas::finish;
using apgas::global_ref;
using apgas::place_id;
using apgas::task;

namespace {

apgas::runtime* g_rt = nullptr;

/// What updates land on, one per place (per process), and a second one to check that updates
/// for two objects at one place do not mix.
struct sink {
  std::atomic<std::uint64_t> count{0}; ///< updates applied
  std::atomic<std::uint64_t> sum{0};   ///< of their values
};
sink g_sinks[2];

struct add_value {
  void operator()(sink& s, std::uint64_t v) const {
    s.count.fetch_add(1, std::memory_order_relaxed);
    s.sum.fetch_add(v, std::memory_order_relaxed);
  }
};

/// Two values per update: checks that several arguments travel in order.
struct add_product {
  void operator()(sink& s, std::uint32_t a, std::uint16_t b) const {
    s.count.fetch_add(1, std::memory_order_relaxed);
    s.sum.fetch_add(std::uint64_t{a} * b, std::memory_order_relaxed);
  }
};

/// The same as add_product, a batch at a time.
struct add_products {
  void operator()(sink& s, apgas::updates<std::uint32_t, std::uint16_t> batch) const {
    std::uint64_t sum = 0;
    for (const auto& [a, b] : batch) sum += std::uint64_t{a} * b;
    s.count.fetch_add(batch.size(), std::memory_order_relaxed);
    s.sum.fetch_add(sum, std::memory_order_relaxed);
  }
};

/// A batch at a time, failing the batch when it holds 1000.
struct add_all_or_fail {
  void operator()(sink& s, apgas::updates<std::uint64_t> batch) const {
    for (const std::uint64_t v : batch)
      if (v == 1000) throw std::domain_error("a batch with 1000 refused");
    for (const std::uint64_t v : batch) add_value{}(s, v);
  }
};

/// Fails for the values divisible by 1000, applies the others.
struct add_or_fail {
  void operator()(sink& s, std::uint64_t v) const {
    if (v % 1000 == 0) throw std::domain_error("value " + std::to_string(v) + " refused");
    add_value{}(s, v);
  }
};

/// References to sink `which` at every place.
task<std::vector<global_ref<sink>>> sinks(int which) {
  std::vector<global_ref<sink>> refs;
  for (place_id p = 0; p < apgas::places(); ++p)
    refs.push_back(co_await apgas::at(
        p, [](int w) { return global_ref<sink>(g_sinks[w]); }, which));
  co_return refs;
}

struct totals {
  std::uint64_t count = 0;
  std::uint64_t sum = 0;
};

/// Sums sink `which` over every place and resets it.
task<totals> collect(int which) {
  totals t;
  for (place_id p = 0; p < apgas::places(); ++p) {
    const auto got = co_await apgas::at(
        p,
        [](int w) {
          return std::pair{g_sinks[w].count.exchange(0), g_sinks[w].sum.exchange(0)};
        },
        which);
    t.count += got.first;
    t.sum += got.second;
  }
  co_return t;
}

/// Every place sends `per_place` updates (values 1..per_place) round-robin over all places,
/// through an aggregator with buffers of `bytes` bytes, and lets it go out of scope unflushed.
struct send_round_robin {
  task<> operator()(std::vector<global_ref<sink>> refs, std::uint64_t per_place,
                    std::size_t bytes) const {
    auto agg = co_await apgas::make_aggregator<add_value, sink, std::uint64_t>(bytes);
    for (std::uint64_t v = 1; v <= per_place; ++v)
      agg.push(refs[(v + apgas::here()) % refs.size()], v);
  }
};

std::uint64_t sum_to(std::uint64_t n) { return n * (n + 1) / 2; }

TEST(aggregator, every_update_runs_once_whatever_the_buffer_size) {
  for (const std::size_t bytes :
       {std::size_t{1}, std::size_t{64}, std::size_t{8192}, std::size_t{1} << 20}) {
    const totals t = g_rt->run([bytes]() -> task<totals> {
      const auto refs = co_await sinks(0);
      co_await finish([&]() -> task<> {
        for (place_id p = 0; p < apgas::places(); ++p)
          co_await apgas::async_at(p, send_round_robin{}, refs, std::uint64_t{10'000}, bytes);
      });
      co_return co_await collect(0);
    });
    EXPECT_EQ(t.count, 10'000 * g_rt->places()) << "buffer of " << bytes << " bytes";
    EXPECT_EQ(t.sum, sum_to(10'000) * g_rt->places()) << "buffer of " << bytes << " bytes";
  }
}

/// 1,000 updates (i, 3) round-robin over the places through an aggregator of F.
template <class F>
totals products_through() {
  return g_rt->run([]() -> task<totals> {
    const auto refs = co_await sinks(0);
    co_await finish([&]() -> task<> {
      auto agg = co_await apgas::make_aggregator<F, sink, std::uint32_t, std::uint16_t>(100);
      for (std::uint32_t i = 0; i < 1000; ++i)
        agg.push(refs[i % refs.size()], i, static_cast<std::uint16_t>(3));
    });
    co_return co_await collect(0);
  });
}

TEST(aggregator, several_arguments_travel_in_order) {
  const totals t = products_through<add_product>();
  EXPECT_EQ(t.count, 1000U);
  EXPECT_EQ(t.sum, 3 * sum_to(999));
}

TEST(aggregator, an_update_function_may_take_whole_batches) {
  const totals t = products_through<add_products>();
  EXPECT_EQ(t.count, 1000U);
  EXPECT_EQ(t.sum, 3 * sum_to(999));
}

/// True if place 0's updates for the last place go through an intermediate (routing forced
/// with --route-above, and the last place outside place 0's row and column of the grid).
bool last_place_is_relayed() {
  const place_id n = g_rt->places();
  place_id columns = 1;
  while (columns * columns < n) ++columns;
  return n > g_rt->opts().route_above && (n - 1) / columns != 0 && (n - 1) % columns != 0;
}

TEST(aggregator, what_a_batch_function_throws_fails_its_batch) {
  const auto o = g_rt->run([]() -> task<std::pair<std::string, totals>> {
    const auto refs = co_await sinks(0);
    std::string error;
    try {
      co_await finish([&]() -> task<> {
        // Batches of 100 updates: 901..1000 fail together, the other 900 run.
        auto agg = co_await apgas::make_aggregator<add_all_or_fail, sink, std::uint64_t>(800);
        for (std::uint64_t v = 1; v <= 1000; ++v) agg.push(refs.back(), v);
      });
    } catch (const apgas::multiple_exceptions& e) {
      error = e.what();
    }
    co_return std::pair{error, co_await collect(0)};
  });
  EXPECT_NE(o.first.find("a batch with 1000 refused"), std::string::npos) << o.first;
  if (!last_place_is_relayed()) {
    EXPECT_EQ(o.second.count, 900U);
    EXPECT_EQ(o.second.sum, sum_to(900));
    return;
  }
  // Relayed, the intermediate's batches hold at most 100 updates each, in order, and it may
  // send one early (it went idle): the last batch, with 1000, fails with what it holds.
  EXPECT_GE(o.second.count, 900U);
  EXPECT_LT(o.second.count, 1000U);
  EXPECT_EQ(o.second.sum, sum_to(o.second.count));
}

TEST(aggregator, updates_for_two_objects_at_one_place_do_not_mix) {
  const auto both = g_rt->run([]() -> task<std::pair<totals, totals>> {
    const auto first = co_await sinks(0);
    const auto second = co_await sinks(1);
    co_await finish([&]() -> task<> {
      auto agg = co_await apgas::make_aggregator<add_value, sink, std::uint64_t>(64);
      for (std::uint64_t v = 1; v <= 999; ++v) {
        const place_id p = v % first.size();
        agg.push(v % 3 == 0 ? second[p] : first[p], v);
      }
    });
    co_return std::pair{co_await collect(0), co_await collect(1)};
  });
  EXPECT_EQ(both.first.count, 666U);
  EXPECT_EQ(both.second.count, 333U);
  EXPECT_EQ(both.first.sum + both.second.sum, sum_to(999));
  EXPECT_EQ(both.second.sum, 3 * sum_to(333));
}

TEST(aggregator, flush_sends_what_is_buffered) {
  const auto seen = g_rt->run([]() -> task<std::vector<std::size_t>> {
    const auto refs = co_await sinks(0);
    std::vector<std::size_t> pending;
    co_await finish([&]() -> task<> {
      auto agg = co_await apgas::make_aggregator<add_value, sink, std::uint64_t>();
      for (std::uint64_t v = 1; v <= 10; ++v) agg.push(refs.back(), v);
      pending.push_back(agg.pending());
      agg.flush();
      pending.push_back(agg.pending());
    });
    const totals t = co_await collect(0);
    pending.push_back(t.count);
    co_return pending;
  });
  EXPECT_EQ(seen, (std::vector<std::size_t>{10, 0, 10}));
}

TEST(aggregator, batches_are_the_activities_sent) {
  const auto counts = g_rt->run([]() -> task<std::pair<apgas::message_counts, std::uint64_t>> {
    const auto refs = co_await sinks(0);
    const apgas::message_counts before = co_await apgas::total_message_counts();
    co_await finish([&]() -> task<> {
      // 1,000 updates of 8 bytes to the last place, in buffers of 800 bytes: 10 batches.
      auto agg = co_await apgas::make_aggregator<add_value, sink, std::uint64_t>(800);
      for (std::uint64_t v = 1; v <= 1000; ++v) agg.push(refs.back(), v);
    });
    const apgas::message_counts after = co_await apgas::total_message_counts();
    const totals t = co_await collect(0);
    co_return std::pair{after - before, t.count};
  });
  EXPECT_EQ(counts.second, 1000U);
  const std::uint64_t sent = counts.first.activities_sent;
  // Plus the `at`s of total_message_counts itself (one per place).
  const std::uint64_t reads = 2 * g_rt->places();
  if (!last_place_is_relayed()) {
    EXPECT_EQ(counts.first.updates_relayed, 0U);
    EXPECT_GE(sent, 10U);
    EXPECT_LE(sent, 10U + reads);
    return;
  }
  // Relayed: 16 relay batches of up to 66 updates (each with its target's 4-byte index) to
  // the intermediate, which sorts every update once into its batches for the last place: at
  // least 10 of 100 updates, at most 2 per relay batch (one fills, the next starts; the
  // intermediate also sends what it holds when it goes idle).
  EXPECT_EQ(counts.first.updates_relayed, 1000U);
  EXPECT_GE(sent, 16U + 10U);
  EXPECT_LE(sent, 16U + 32U + reads);
}

TEST(aggregator, a_failing_update_fails_alone) {
  const auto o = g_rt->run([]() -> task<std::pair<std::string, totals>> {
    const auto refs = co_await sinks(0);
    std::string error;
    try {
      co_await finish([&]() -> task<> {
        // One buffer holds them all: one batch.
        auto agg = co_await apgas::make_aggregator<add_or_fail, sink, std::uint64_t>(1 << 16);
        for (std::uint64_t v = 1; v <= 3000; ++v) agg.push(refs.back(), v);
      });
    } catch (const apgas::multiple_exceptions& e) {
      error = e.what();
    }
    co_return std::pair{error, co_await collect(0)};
  });
  // 1000, 2000 and 3000 fail, in one batch: the other 2,997 updates ran. (Relayed, they come
  // in the intermediate's batches instead, one error each.)
  EXPECT_EQ(o.second.count, 2997U);
  EXPECT_EQ(o.second.sum, sum_to(3000) - 6000);
  if (!last_place_is_relayed()) {
    EXPECT_NE(o.first.find("3 of 3000 aggregated updates failed"), std::string::npos) << o.first;
  }
  EXPECT_NE(o.first.find("value 1000 refused"), std::string::npos) << o.first;
}

TEST(aggregator, one_failing_update_is_its_own_exception) {
  const std::string error = g_rt->run([]() -> task<std::string> {
    const auto refs = co_await sinks(0);
    std::string text;
    try {
      co_await finish([&]() -> task<> {
        auto agg = co_await apgas::make_aggregator<add_or_fail, sink, std::uint64_t>();
        for (std::uint64_t v = 990; v <= 1010; ++v) agg.push(refs.back(), v);
      });
    } catch (const apgas::multiple_exceptions& e) {
      text = e.what();
    }
    (void)co_await collect(0);
    co_return text;
  });
  EXPECT_NE(error.find("std::domain_error: value 1000 refused"), std::string::npos) << error;
  EXPECT_EQ(error.find("aggregated updates failed"), std::string::npos) << error;
}

TEST(aggregator, updates_pushed_in_a_nested_finish_belong_to_the_owners_finish) {
  const totals t = g_rt->run([]() -> task<totals> {
    const auto refs = co_await sinks(0);
    co_await finish([&]() -> task<> {
      auto agg = co_await apgas::make_aggregator<add_value, sink, std::uint64_t>();
      agg.push(refs.back(), 1);
      co_await finish([&]() -> task<> {
        for (std::uint64_t v = 2; v <= 100; ++v) agg.push(refs[v % refs.size()], v);
        co_return;
      });
    }); // all 100 sent when agg goes out of scope, and waited for by this finish
    co_return co_await collect(0);
  });
  EXPECT_EQ(t.count, 100U);
  EXPECT_EQ(t.sum, sum_to(100));
}

/// A word count's table at one place: a plain hash table, with no lock and no atomics.
struct word_table {
  std::unordered_map<std::uint64_t, std::uint64_t> counts;
  std::atomic<int> running{0}; ///< count_word calls under way here: must never exceed 1
};
word_table g_words;

struct count_word {
  void operator()(word_table& t, std::uint64_t word) const {
    if (t.running.fetch_add(1, std::memory_order_relaxed) != 0)
      throw std::logic_error("two updates ran at once at one place");
    ++t.counts[word];
    t.running.fetch_sub(1, std::memory_order_relaxed);
  }
};

/// This place's table, emptied: its number of distinct words and the sum of their counts.
struct take_words {
  std::pair<std::uint64_t, std::uint64_t> operator()() const {
    std::uint64_t total = 0;
    for (const auto& [word, n] : g_words.counts) total += n;
    const std::uint64_t distinct = g_words.counts.size();
    g_words.counts.clear();
    return {distinct, total};
  }
};

TEST(aggregator, updates_at_one_place_run_one_at_a_time) {
  // Every place runs 8 activities, each with an aggregator of small buffers, counting words
  // 0..k_words-1 (word w belongs to place w % places) while the place's other activities run.
  constexpr std::uint64_t k_words = 5000;
  constexpr std::uint64_t k_per_activity = 20'000;
  constexpr int k_activities = 8;
  const auto [distinct, total] = g_rt->run([]() -> task<std::pair<std::uint64_t, std::uint64_t>> {
    std::vector<global_ref<word_table>> tables;
    for (place_id p = 0; p < apgas::places(); ++p)
      tables.push_back(co_await apgas::at(p, [] { return global_ref<word_table>(g_words); }));
    co_await apgas::for_each_place(
        [](std::vector<global_ref<word_table>> to) -> task<> {
          co_await apgas::finish([&]() -> task<> {
            for (int a = 0; a < k_activities; ++a)
              co_await apgas::async(
                  [](std::vector<global_ref<word_table>> refs, int seed) -> task<> {
                    auto agg =
                        co_await apgas::make_aggregator<count_word, word_table, std::uint64_t>(256);
                    std::uint64_t x = static_cast<std::uint64_t>(seed) * 2654435761ULL + 1;
                    for (std::uint64_t i = 0; i < k_per_activity; ++i) {
                      x = x * 6364136223846793005ULL + 1442695040888963407ULL;
                      const std::uint64_t word = (x >> 33) % k_words;
                      agg.push(refs[word % refs.size()], word);
                    }
                  }(to, static_cast<int>(apgas::here()) * k_activities + a));
          });
        },
        tables);
    std::uint64_t d = 0, t = 0;
    for (place_id p = 0; p < apgas::places(); ++p) {
      const auto [pd, pt] = co_await apgas::at(p, take_words{});
      d += pd;
      t += pt;
    }
    co_return std::pair{d, t};
  });
  EXPECT_EQ(total, k_per_activity * k_activities * g_rt->places());
  EXPECT_EQ(distinct, k_words); // 160,000 draws from 5,000 words reach them all
}

TEST(aggregator, a_null_target_is_refused) {
  const std::string error = g_rt->run([]() -> task<std::string> {
    auto agg = co_await apgas::make_aggregator<add_value, sink, std::uint64_t>();
    try {
      agg.push(global_ref<sink>{}, 1);
    } catch (const std::invalid_argument& e) {
      co_return std::string(e.what()) + "; pending " + std::to_string(agg.pending());
    }
    co_return "";
  });
  EXPECT_NE(error.find("null global_ref; pending 0"), std::string::npos) << error;
}

} // namespace

int main(int argc, char** argv) { return apgas_test::run_places_tests(argc, argv, g_rt); }
