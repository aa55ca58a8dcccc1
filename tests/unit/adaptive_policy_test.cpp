// The adaptive policy's space bound: a flat loop of asyncs holds at most about the deque bound
// of unstarted children under adaptive (as few as work-first), while help-first holds every
// child the loop has started (n of them on one worker). The loop's results are checked too.
#include "test_support.hpp"
#include <apgas_apps/flat_loop.hpp>

#include <cstdint>
#include <vector>

namespace {

using apgas_test::k_sanitizer_slowdown;

struct loop_outcome {
  std::uint64_t peak = 0;
  bool correct = false;
};

loop_outcome run_loop(apgas::policy p, unsigned workers, std::uint64_t n) {
  apgas::options o;
  o.default_policy = p;
  o.threads = workers;
  o.pin_workers = false;
  apgas::local_runtime rt(o);
  std::vector<std::uint32_t> out(n);
  apgas_apps::loop_frames frames;
  rt.run(apgas_apps::flat_loop(out.data(), n, &frames));
  std::vector<std::uint32_t> expected(n);
  apgas_apps::flat_loop_seq(expected.data(), n);
  return {frames.peak, out == expected};
}

// 10^7 asyncs under work-first and adaptive; help-first, which holds them all, gets 10^6.
constexpr std::uint64_t k_long_loop = 10'000'000 / k_sanitizer_slowdown;
constexpr std::uint64_t k_help_first_loop = 1'000'000 / k_sanitizer_slowdown;

TEST(adaptive_policy, a_flat_loop_holds_at_most_the_deque_bound_of_unstarted_children) {
  for (unsigned workers : {1U, 2U}) {
    const loop_outcome o = run_loop(apgas::policy::adaptive, workers, k_long_loop);
    EXPECT_TRUE(o.correct) << workers << " workers";
    // The deque bound, plus the children the other workers have taken and not yet begun.
    EXPECT_LE(o.peak, apgas::options{}.adaptive_bound + workers) << workers << " workers";
    EXPECT_GE(o.peak, 1U) << "adaptive queues children below the bound (help-first)";
  }
}

TEST(adaptive_policy, work_first_holds_next_to_none_and_help_first_holds_the_whole_loop) {
  for (unsigned workers : {1U, 2U}) {
    const loop_outcome wf = run_loop(apgas::policy::work_first, workers, k_long_loop);
    EXPECT_TRUE(wf.correct);
    EXPECT_LE(wf.peak, workers) << workers << " workers";
  }
  // One worker runs no child before the loop ends: every frame is alive at its end.
  const loop_outcome hf = run_loop(apgas::policy::help_first, 1, k_help_first_loop);
  EXPECT_TRUE(hf.correct);
  EXPECT_EQ(hf.peak, k_help_first_loop - 1);
}

TEST(adaptive_policy, a_finish_may_ask_for_it) {
  apgas::options o;
  o.threads = 2;
  o.pin_workers = false;
  apgas::local_runtime rt(o); // work-first by default
  std::vector<std::uint32_t> out(100'000);
  apgas_apps::loop_frames frames;
  rt.run(apgas_apps::flat_loop(out.data(), out.size(), &frames, apgas::policy::adaptive));
  std::vector<std::uint32_t> expected(out.size());
  apgas_apps::flat_loop_seq(expected.data(), expected.size());
  EXPECT_EQ(out, expected);
  EXPECT_GE(frames.peak, 1U);
  EXPECT_LE(frames.peak, apgas::options{}.adaptive_bound + 2U);
}

} // namespace
