// The reference model of X10's clocks on its own (no runtime): the rules of the X10
// specification on small programs, and its answers independent of the order it runs
// activities in.
#include "clock_model.hpp"
#include <gtest/gtest.h>

#include <vector>

namespace {

using namespace clock_model;

op resume(int c) { return op{op_kind::resume, static_cast<std::uint8_t>(c)}; }
op advance(int c) { return op{op_kind::advance, static_cast<std::uint8_t>(c)}; }
op advance_all() { return op{op_kind::advance_all}; }
op drop(int c) { return op{op_kind::drop, static_cast<std::uint8_t>(c)}; }
op reduce(int c, int v) {
  op o{op_kind::advance_reduce, static_cast<std::uint8_t>(c)};
  o.value = v;
  return o;
}
op spawn(std::uint32_t child, std::uint8_t mask, int remote_to = -1) {
  op o{op_kind::spawn};
  o.child = child;
  o.mask = mask;
  o.remote = remote_to >= 0 ? 1 : 0;
  o.place = remote_to >= 0 ? static_cast<std::uint32_t>(remote_to) : 0;
  return o;
}

/// The phase each operation leaves clock 0 in (the trace's last entry per operation, for a
/// program of one clock: phase * 2 + resumed).
std::vector<std::int64_t> states(const std::vector<std::int64_t>& trace,
                                 const std::vector<int>& entries_per_op) {
  std::vector<std::int64_t> out;
  std::size_t at = 0;
  for (int n : entries_per_op) {
    at += static_cast<std::size_t>(n);
    out.push_back(trace.at(at - 1));
  }
  return out;
}

TEST(clock_model, resume_then_advance_moves_exactly_one_phase) {
  // The program: the only registrant resumes, advances, advances all, advances.
  program p;
  p.clocks = 1;
  p.scripts = {{resume(0), advance(0), advance_all(), advance(0), advance(0)}};
  const outcome o = model::run(p, 0);
  ASSERT_FALSE(o.deadlock);
  // resume: 0 + state; advance: arrivals + state; advance_all: arrivals + state.
  EXPECT_EQ(states(*o.traces[0], {2, 2, 2, 2, 2}),
            (std::vector<std::int64_t>{1 * 2 + 1, 2 * 2, 3 * 2, 4 * 2, 5 * 2}));
}

TEST(clock_model, resume_is_idempotent_within_a_phase) {
  program p;
  p.clocks = 1;
  p.scripts = {{resume(0), resume(0), advance(0)}};
  const outcome o = model::run(p, 0);
  EXPECT_EQ(states(*o.traces[0], {2, 2, 2}), (std::vector<std::int64_t>{3, 3, 4}));
}

TEST(clock_model, advance_all_in_either_order_does_not_deadlock) {
  program p;
  p.clocks = 2;
  p.scripts = {{spawn(1, 3), spawn(2, 3), drop(0), drop(1)},
               {advance_all(), advance_all()},
               {advance_all(), advance_all()}};
  EXPECT_FALSE(model::run(p, 0).deadlock);
}

TEST(clock_model, a_child_of_a_resumed_activity_starts_resumed) {
  // X10 specification, "Registering new activities on clocks": a resumes, spawns b clocked;
  // b's advance cannot pass a's.
  program p;
  p.clocks = 1;
  p.scripts = {{resume(0), spawn(1, 1), advance(0)}, {advance(0)}};
  const outcome o = model::run(p, 0);
  ASSERT_FALSE(o.deadlock);
  EXPECT_EQ(o.traces[1]->back(), 2 * 2); // b in phase 2 after one advance
  EXPECT_EQ(o.traces[0]->back(), 2 * 2); // and a too
}

TEST(clock_model, a_resumed_activity_cannot_send_a_registration_to_a_place) {
  program p;
  p.clocks = 1;
  p.scripts = {{resume(0), spawn(1, 1, 0)}, {advance(0)}};
  const outcome o = model::run(p, 0);
  EXPECT_EQ(o.traces[0]->at(2), k_error);
  EXPECT_FALSE(o.traces[1].has_value()); // never started
}

TEST(clock_model, a_reduction_sums_every_contribution_of_its_phase) {
  program p;
  p.clocks = 1;
  // Phase 1's reduction (see reduction_of: clock 0, phase 1).
  p.scripts = {{spawn(1, 1), reduce(0, 5)}, {reduce(0, 7)}};
  const outcome o = model::run(p, 0);
  const std::int64_t expect = fold(reduction_of(0, 1), 5, 7);
  EXPECT_EQ(o.traces[0]->at(2), expect);
  EXPECT_EQ(o.traces[1]->at(0), expect);
  EXPECT_EQ(o.traces[1]->at(1), 2); // both arrived at place 0 in phase 1
}

TEST(clock_model, operations_on_a_dropped_clock_are_errors) {
  program p;
  p.clocks = 1;
  p.scripts = {{drop(0), resume(0), advance(0), drop(0)}};
  const outcome o = model::run(p, 0);
  EXPECT_EQ(*o.traces[0],
            (std::vector<std::int64_t>{0, -1, k_error, -1, k_error, -1, k_error, -1}));
}

TEST(clock_model, a_program_waiting_on_two_clocks_crosswise_deadlocks) {
  program p;
  p.clocks = 2;
  p.scripts = {{spawn(1, 3), advance(0), drop(0), drop(1)}, {advance(1)}};
  // The root waits on clock 0 for the child, the child on clock 1 for the root.
  EXPECT_TRUE(model::run(p, 0).deadlock);
}

TEST(clock_model, the_model_gives_the_same_traces_in_any_order) {
  shape sh;
  sh.places = 4;
  for (std::uint64_t seed = 1; seed <= 500; ++seed) {
    const program p = generate(seed, sh);
    const outcome first = model::run(p, 0);
    ASSERT_FALSE(first.deadlock);
    for (std::uint64_t order = 1; order <= 5; ++order)
      ASSERT_EQ(model::run(p, order), first) << "seed " << seed << " order " << order << "\n"
                                             << describe(p);
  }
}

TEST(clock_model, generated_programs_use_every_operation) {
  shape sh;
  sh.places = 2;
  std::array<int, 6> seen{};
  int errors = 0;
  for (std::uint64_t seed = 1; seed <= 200; ++seed) {
    const program p = generate(seed, sh);
    for (const auto& s : p.scripts)
      for (const op& o : s) ++seen[static_cast<std::size_t>(o.kind)];
    for (const auto& t : model::run(p, 0).traces)
      if (t)
        for (std::int64_t v : *t) errors += v == k_error ? 1 : 0;
  }
  for (int n : seen) EXPECT_GT(n, 50);
  EXPECT_GT(errors, 10); // misuse is exercised too
}

} // namespace
