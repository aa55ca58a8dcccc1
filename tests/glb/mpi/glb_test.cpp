// GLB over real places, run by ctest under mpiexec -n 1, 2 and 4 (and with both policies). Every
// item of work has an id and the result counts how often each id was processed, so a lost or a
// duplicated item shows as a count other than one. Every place runs the same tests in the same
// order (runtime::run is collective).
#include <apgas/apgas.hpp>
#include <apgas/glb.hpp>

#include "../../places_test_main.hpp"
#include "../../stderr_pipe.hpp"
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <filesystem>
#include <random>
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

/// Items this process still processes before one throws (a failure that is no item's own,
/// as a dying place: the item is not processed, and a resumed run processes it).
std::atomic<std::uint64_t> g_items_before_failure{~std::uint64_t{0}};

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
      // relaxed: a count of this process's own items; which item hits zero does not matter.
      if (g_items_before_failure.fetch_sub(1, std::memory_order_relaxed) == 1) {
        ranges.emplace_back(id, id + 1); // not processed: still in the bag
        throw std::runtime_error("the place fails");
      }
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
    if (apgas::here() + 1 != apgas::places()) return {};
    return {~std::uint64_t{0}, 1000}; // stalls for ever at the last place
  }
};

TEST(glb, a_bag_that_processes_nothing_while_not_empty_fails_the_run) {
  const std::string last = std::to_string(g_rt->places() - 1);
  std::string error;
  try {
    g_rt->run(apgas::glb::run(apgas::glb::default_parameters(), make_stalling_bag{}));
  } catch (const std::exception& e) {
    error = e.what();
  }
  EXPECT_NE(error.find("apgas: place " + last + ": glb: the process() of bag type"),
            std::string::npos)
      << error;
  EXPECT_NE(error.find("stalling_bag processed no item 100000 times in a row"), std::string::npos)
      << error;
  run_and_check(flat(10'000), layout::at_place_0); // the next run works
}

// ---- checkpoints -------------------------------------------------------------------------------

/// A directory for this test's checkpoints, named by place 0 (the same at every place: they
/// share the file system), empty.
std::string checkpoint_dir(const std::string& test) {
  return g_rt->run([test]() -> task<std::string> {
    const std::string dir = (std::filesystem::temp_directory_path() /
                             ("apgas-glb-" + test + "-" + std::to_string(::getpid())))
                                .string();
    std::filesystem::remove_all(dir);
    co_return dir;
  });
}

/// Removes a test's checkpoints (place 0: the places share the directory).
void remove_checkpoints(const std::string& dir) {
  std::error_code ignored;
  if (g_rt->here() == 0) std::filesystem::remove_all(dir, ignored);
}

/// Sets g_items_before_failure at every place: `n` at `place`, never elsewhere.
void fail_after(place_id place, std::uint64_t n) {
  g_rt->run(apgas::for_each_place(
      [](place_id p, std::uint64_t k) {
        g_items_before_failure.store(apgas::here() == p ? k : ~std::uint64_t{0});
      },
      place, n));
}

/// Every id below `total` processed once, none else.
void expect_each_once(const counts& seen, std::uint32_t total, std::uint64_t seed) {
  std::uint64_t wrong = 0;
  for (std::size_t i = 0; i < std::max<std::size_t>(seen.size(), total); ++i)
    if ((i < seen.size() ? seen[i] : 0U) != (i < total ? 1U : 0U)) ++wrong;
  EXPECT_EQ(wrong, 0U) << "ids processed other than once (seed " << seed << ")";
}

TEST(glb_checkpoint, checkpoints_change_nothing_in_the_result) {
  apgas::glb::parameters p = apgas::glb::default_parameters();
  p.checkpoint_dir = checkpoint_dir("unchanged");
  p.checkpoint_every = 0.002;
  workload w = flat(100'000, 400);
  const auto out = g_rt->run(apgas::glb::run_with_stats(p, make_bag{}, w, layout::at_place_0));
  expect_each_once(out.value, w.total, 0);
  EXPECT_GT(out.stats.checkpoints, 0U) << "the run was short: no checkpoint was taken";
  if (g_rt->here() == 0) { // before it removes them (the others may still look)
    EXPECT_TRUE(std::filesystem::exists(p.checkpoint_dir + "/ckpt-" +
                                        fmt::format("{:06}", out.stats.checkpoints)));
  }
  remove_checkpoints(p.checkpoint_dir);
}

// A run fails at a random moment (an item at a random place throws, as a dying place would
// end it), after checkpoints at random moments (the work's items take random times); the run
// resumed from the newest complete checkpoint processes every item exactly once, counting
// what the checkpoint's results hold.
TEST(glb_checkpoint, a_failed_run_resumes_with_every_item_processed_exactly_once) {
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
  const int rounds = 2; // slow there
#else
  const int rounds = 6;
#endif
  // A round whose failure came before the first checkpoint has nothing to resume: the rounds go
  // on until `rounds` of them resumed (or five times as many ran).
  int resumed = 0;
  for (int round = 0; resumed < rounds && round < 5 * rounds; ++round) {
    // GLB_CHECKPOINT_SEED=<a seed printed by a failure> runs that case again.
    const char* again = std::getenv("GLB_CHECKPOINT_SEED");
    const std::uint64_t s = g_rt->run([again]() -> task<std::uint64_t> {
      co_return again != nullptr ? std::strtoull(again, nullptr, 10) : std::random_device{}();
    });
    SCOPED_TRACE("seed " + std::to_string(s));
    std::mt19937_64 pick(s);
    const auto where = static_cast<layout>(pick() % 3);
    workload w;
    if (where == layout::at_place_0) { // work that appears late (a chain grows from place 0)
      w.chain = 200;
      w.burst_every = 20;
      w.burst = 4'000 + static_cast<std::uint32_t>(pick() % 8'000);
      w.total = w.chain + (w.chain / w.burst_every) * w.burst;
    } else { // all of it at the start, at one place or spread
      w.total = 40'000 + static_cast<std::uint32_t>(pick() % 80'000);
    }
    w.spin = 200 + static_cast<std::uint32_t>(pick() % 800);
    const auto failing = static_cast<place_id>(pick() % g_rt->places());
    apgas::glb::parameters p = apgas::glb::default_parameters();
    p.checkpoint_dir = checkpoint_dir("resume");
    p.checkpoint_every = 0.001 + 0.001 * static_cast<double>(pick() % 4);
    // At the failing place's share of the items (all workers' together), from a half to the whole.
    const std::uint64_t share = w.total / g_rt->places();
    fail_after(failing, share / 2 + pick() % (share / 2));
    bool failed = false;
    try {
      g_rt->run(apgas::glb::run(p, make_bag{}, w, where));
    } catch (const std::exception& e) {
      failed = true;
    }
    fail_after(failing, ~std::uint64_t{0});
    if (!failed) { // the failing place got too few items: nothing to resume
      remove_checkpoints(p.checkpoint_dir);
      continue;
    }
    apgas::glb::parameters q = apgas::glb::default_parameters();
    q.resume_from = p.checkpoint_dir;
    apgas::glb::outcome<counts> out;
    try {
      out = g_rt->run(apgas::glb::run_with_stats(q, make_bag{}, w, where));
    } catch (const apgas::checkpoint_error& e) { // it failed before the first checkpoint
      EXPECT_NE(std::string(e.what()).find("no complete checkpoint"), std::string::npos)
          << e.what();
      continue;
    } catch (const std::exception& e) {
      if (std::string(e.what()).find("no complete checkpoint") == std::string::npos)
        ADD_FAILURE() << "resume failed: " << e.what();
      continue;
    }
    expect_each_once(out.value, w.total, s);
    ++resumed;
    EXPECT_EQ(out.stats.resumed_from.rfind(p.checkpoint_dir, 0), 0U) << out.stats.resumed_from;
    EXPECT_LT(out.stats.total().items, w.total) << "the resume started from the beginning";
    remove_checkpoints(p.checkpoint_dir);
  }
  EXPECT_GT(resumed, 0) << "no round failed after a checkpoint: nothing was resumed";
}

TEST(glb_checkpoint, a_checkpoint_that_cannot_be_written_warns_and_the_run_goes_on) {
  apgas::glb::parameters p = apgas::glb::default_parameters();
  p.checkpoint_dir = "/proc/apgas-no-checkpoints-here"; // not even root may create it
  p.checkpoint_every = 0.001;
  const workload w = flat(100'000, 400);
  std::string printed;
  apgas::glb::outcome<counts> out;
  {
    apgas_test::stderr_pipe err;
    out = g_rt->run(apgas::glb::run_with_stats(p, make_bag{}, w, layout::at_place_0));
    err.read_into(printed);
  }
  expect_each_once(out.value, w.total, 0);
  EXPECT_EQ(out.stats.checkpoints, 0U);
  if (g_rt->here() == 0) {
    EXPECT_NE(printed.find("apgas: warning: a checkpoint into /proc/apgas-no-checkpoints-here "
                           "failed, the run goes on without checkpoints"),
              std::string::npos)
        << printed;
  }
}

TEST(glb_checkpoint, a_checkpoint_of_other_arguments_is_refused) {
  apgas::glb::parameters p = apgas::glb::default_parameters();
  p.checkpoint_dir = checkpoint_dir("refused");
  p.checkpoint_every = 0.001;
  const workload w = flat(50'000, 400);
  (void)g_rt->run(apgas::glb::run(p, make_bag{}, w, layout::spread));
  apgas::glb::parameters q = apgas::glb::default_parameters();
  q.resume_from = p.checkpoint_dir;
  std::string refusal;
  try {
    (void)g_rt->run(apgas::glb::run(q, make_bag{}, flat(50'001, 400), layout::spread));
  } catch (const std::exception& e) {
    refusal = e.what();
  }
  EXPECT_NE(refusal.find("is of this program with other parameters"), std::string::npos) << refusal;
  q.resume_from = p.checkpoint_dir + "/nothing-here";
  refusal.clear();
  try {
    (void)g_rt->run(apgas::glb::run(q, make_bag{}, w, layout::spread));
  } catch (const std::exception& e) {
    refusal = e.what();
  }
  EXPECT_NE(refusal.find("no such directory"), std::string::npos) << refusal;
  remove_checkpoints(p.checkpoint_dir);
}

} // namespace

int main(int argc, char** argv) { return apgas_test::run_places_tests(argc, argv, g_rt); }
