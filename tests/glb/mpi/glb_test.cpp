// GLB over real places, run by ctest under mpiexec -n 1, 2 and 4 (and with both policies). Every
// item of work has an id and the result counts how often each id was processed, so a lost or a
// duplicated item shows as a count other than one. Every place runs the same tests in the same
// order (runtime::run is collective).
#include <apgas/apgas.hpp>
#include <apgas/glb.hpp>

#include "../../places_test_main.hpp"
#include "../../stderr_pipe.hpp"
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

using apgas::place_id;
using apgas::task;

namespace {

apgas::runtime* g_rt = nullptr;

/// How the items of a test_bag are laid out and what processing one does.
struct workload {
  std::uint32_t total = 0;       ///< ids 0 .. total-1
  std::uint32_t spin = 200;      ///< busy work per item (loop iterations)
  std::uint32_t chain = 0;       ///< ids 0..chain-1 form a chain: each makes the next
  std::uint32_t burst_every = 0; ///< every so many chain ids make a burst of `burst` new ids
  std::uint32_t burst = 0;
  std::uint32_t throw_at = ~0U; ///< processing this id throws
};

/// Processed ids, counted: entry i is how often id i was processed.
using counts = std::vector<std::uint32_t>;

/// Items are ranges of ids; a chain id may add new ranges (work that appears late).
struct test_bag {
  using result_type = counts;

  workload w;
  std::vector<std::pair<std::uint32_t, std::uint32_t>> ranges; ///< [first, last) each

  std::size_t process(std::size_t n, counts& seen) {
    if (seen.size() < w.total) seen.resize(w.total);
    std::size_t done = 0;
    while (done < n && !ranges.empty()) {
      const std::uint32_t id = ranges.back().first++;
      if (ranges.back().first == ranges.back().second) ranges.pop_back();
      if (id == w.throw_at) throw std::runtime_error("item " + std::to_string(id) + " failed");
      spin(id);
      ++seen[id];
      ++done;
      if (id < w.chain) {
        if (id + 1 < w.chain) ranges.emplace_back(id + 1, id + 2);
        if (w.burst_every != 0 && id % w.burst_every == w.burst_every - 1) {
          const std::uint32_t first = w.chain + (id / w.burst_every) * w.burst;
          ranges.emplace_back(first, first + w.burst);
        }
      }
    }
    return done;
  }
  test_bag split() {
    test_bag loot{w, {}};
    for (auto& r : ranges) {
      const std::uint32_t half = (r.second - r.first) / 2;
      if (half == 0) continue;
      loot.ranges.emplace_back(r.second - half, r.second);
      r.second -= half;
    }
    return loot;
  }
  void merge(test_bag&& other) {
    ranges.insert(ranges.end(), other.ranges.begin(), other.ranges.end());
    other.ranges.clear();
  }
  bool empty() const { return ranges.empty(); }
  std::size_t size() const {
    std::size_t n = 0;
    for (const auto& r : ranges) n += r.second - r.first;
    return n;
  }
  static void reduce(counts& into, const counts& from) {
    if (into.size() < from.size()) into.resize(from.size());
    for (std::size_t i = 0; i < from.size(); ++i) into[i] += from[i];
  }
  template <class A>
  void serialize(A& a) {
    a& w& ranges;
  }

private:
  void spin(std::uint32_t id) const {
    volatile std::uint32_t x = id;
    for (std::uint32_t i = 0; i < w.spin; ++i) x = x * 1664525U + 1013904223U;
  }
};

/// Where the initial work is.
enum class layout : std::uint8_t { at_place_0, at_last_place, spread, nowhere };

struct make_bag {
  test_bag operator()(workload w, layout where) const {
    test_bag b{w, {}};
    const place_id h = apgas::here();
    const place_id p = apgas::places();
    switch (where) {
    case layout::at_place_0:
      if (h == 0) b.ranges.emplace_back(0, w.chain > 0 ? 1 : w.total); // a chain grows from 0
      break;
    case layout::at_last_place:
      if (h == p - 1) b.ranges.emplace_back(0, w.total);
      break;
    case layout::spread: {
      const std::uint32_t lo = static_cast<std::uint32_t>(std::uint64_t{w.total} * h / p);
      const std::uint32_t hi = static_cast<std::uint32_t>(std::uint64_t{w.total} * (h + 1) / p);
      if (hi > lo) b.ranges.emplace_back(lo, hi);
      break;
    }
    case layout::nowhere:
      break;
    }
    return b;
  }
};

/// Runs GLB on `w` laid out as `where` and checks that every id was processed exactly once
/// and that the statistics add up. @return the statistics.
apgas::glb::run_stats
run_and_check(const workload& w, layout where,
              apgas::glb::parameters params = apgas::glb::default_parameters()) {
  const auto out = g_rt->run(apgas::glb::run_with_stats(params, make_bag{}, w, where));
  const std::uint32_t expected_total = where == layout::nowhere ? 0 : w.total;
  std::uint64_t processed = 0;
  std::uint64_t wrong = 0;
  for (std::size_t i = 0; i < out.value.size(); ++i) {
    processed += out.value[i];
    if (out.value[i] != (i < expected_total ? 1U : 0U)) ++wrong;
  }
  EXPECT_EQ(wrong, 0U) << "ids processed other than once";
  EXPECT_EQ(processed, expected_total);
  const apgas::glb::run_stats& s = out.stats;
  EXPECT_EQ(s.places.size(), g_rt->places());
  for (place_id p = 0; p < s.places.size(); ++p) EXPECT_EQ(s.places[p].place, p);
  const apgas::glb::place_stats t = s.total();
  EXPECT_EQ(t.items, expected_total);
  EXPECT_EQ(t.steals_attempted, t.steals_received) << "every steal request reaches its victim";
  EXPECT_EQ(t.steals_successful, t.steals_served);
  EXPECT_LE(t.steals_successful, t.steals_attempted);
  EXPECT_EQ(t.lifeline_loot_sent, t.lifeline_activations);
  EXPECT_EQ(t.loot_sent_items, t.loot_received_items);
  EXPECT_EQ(t.loot_sent_bytes, t.loot_received_bytes);
  if (g_rt->places() == 1) {
    EXPECT_EQ(t.steals_attempted + t.lifeline_requests_sent, 0U);
  }
  return s;
}

workload flat(std::uint32_t total, std::uint32_t spin = 200) {
  workload w;
  w.total = total;
  w.spin = spin;
  return w;
}

TEST(glb, every_item_of_work_at_place_0_is_processed_once) {
  const auto s = run_and_check(flat(200'000), layout::at_place_0);
  if (g_rt->places() > 1) {
    std::uint32_t fed = 0;
    for (const auto& p : s.places) fed += p.items > 0 ? 1 : 0;
    EXPECT_GT(fed, 1U) << "the work stayed at place 0";
  }
}

TEST(glb, a_bag_empty_everywhere_but_at_the_last_place) {
  run_and_check(flat(100'000), layout::at_last_place);
}

TEST(glb, work_spread_over_every_place) { run_and_check(flat(100'000), layout::spread); }

TEST(glb, work_that_appears_late_reaches_quiet_places) {
  workload w;
  w.chain = 400;
  w.burst_every = 100;
  w.burst = 20'000;
  w.total = w.chain + (w.chain / w.burst_every) * w.burst;
  w.spin = 100;
  const auto s = run_and_check(w, layout::at_place_0);
  if (g_rt->places() > 1) {
    const auto t = s.total();
    EXPECT_GT(t.lifeline_activations + t.steals_successful, 0U) << "no place helped";
  }
}

TEST(glb, places_that_never_get_work_end_the_run_too) {
  const auto s = run_and_check(flat(1), layout::at_place_0);
  EXPECT_EQ(s.places[0].items, 1U);
}

TEST(glb, a_run_without_any_work_ends) { run_and_check(flat(0), layout::nowhere); }

TEST(glb, runs_in_a_row_ignore_each_others_late_messages) {
  for (int i = 0; i < 30; ++i) run_and_check(flat(2'000 + 100 * i, 50), layout::at_place_0);
}

TEST(glb, fine_grained_batches_and_other_graphs) {
  apgas::glb::parameters p = apgas::glb::default_parameters();
  p.items_per_batch = 1;
  p.lifeline_base = 2; // a hypercube
  p.random_steals = 3;
  p.tree = false;
  run_and_check(flat(20'000), layout::at_place_0, p);
  p.items_per_batch = 64;
  p.lifeline_count = 1; // one lifeline each: a ring
  p.random_victims = 1;
  run_and_check(flat(20'000), layout::at_last_place, p);
}

TEST(glb, a_bag_that_throws_fails_the_run_and_the_next_run_works) {
  workload w = flat(50'000);
  w.throw_at = 30'000;
  bool failed = false;
  try {
    g_rt->run(apgas::glb::run(make_bag{}, w, layout::at_place_0));
  } catch (const std::exception& e) {
    // Place 0 has the error itself; the others its text, from place 0.
    failed = std::string(e.what()).find("item 30000 failed") != std::string::npos;
    if (!failed) ADD_FAILURE() << "unexpected error: " << e.what();
  }
  EXPECT_TRUE(failed);
  run_and_check(flat(10'000), layout::at_place_0);
}

TEST(glb, a_run_from_a_place_other_than_0) {
  const place_id from = g_rt->places() - 1;
  const std::uint64_t total = g_rt->run([from]() -> task<std::uint64_t> {
    co_return co_await apgas::at(from, []() -> task<std::uint64_t> {
      const counts seen = co_await apgas::glb::run(make_bag{}, flat(10'000), layout::spread);
      std::uint64_t n = 0;
      for (std::uint32_t c : seen) n += c == 1 ? 1 : 1000; // a duplicate counts heavily
      co_return n;
    });
  });
  EXPECT_EQ(total, 10'000U);
}

/// A bag that says it has work but whose process() does nothing for a while (a bug a user
/// could write): the place warns once, then the bag works and the run ends.
struct stalling_bag {
  using result_type = std::uint64_t;
  std::uint64_t stalls = 0; ///< calls of process() left that do nothing
  std::uint64_t items = 0;
  std::size_t process(std::size_t n, std::uint64_t& sum) {
    if (stalls > 0) {
      --stalls;
      return 0;
    }
    const std::size_t k = std::min<std::size_t>(n, items);
    items -= k;
    sum += k;
    return k;
  }
  stalling_bag split() { return {}; } // keeps it in one activity
  void merge(stalling_bag&& other) { items += std::exchange(other.items, 0); }
  bool empty() const { return items == 0; }
  static void reduce(std::uint64_t& into, const std::uint64_t& from) { into += from; }
  template <class A>
  void serialize(A& a) {
    a& stalls& items;
  }
};

struct make_stalling_bag {
  stalling_bag operator()() const {
    if (apgas::here() != 0) return {};
    return {apgas::detail::glb::k_no_progress_rounds + 10, 1000};
  }
};

TEST(glb, a_bag_that_processes_nothing_while_not_empty_gets_a_warning) {
  std::string printed;
  std::uint64_t total = 0;
  {
    apgas_test::stderr_pipe err;
    total = g_rt->run(apgas::glb::run(apgas::glb::default_parameters(), make_stalling_bag{}));
    err.read_into(printed);
  }
  EXPECT_EQ(total, 1000U);
  if (g_rt->here() == 0) {
    EXPECT_NE(printed.find("apgas: place 0: glb: a bag's process() did nothing"), std::string::npos)
        << printed;
  } else {
    EXPECT_EQ(printed.find("did nothing"), std::string::npos) << printed;
  }
}

} // namespace

int main(int argc, char** argv) { return apgas_test::run_places_tests(argc, argv, g_rt); }
