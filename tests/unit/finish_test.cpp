// async/finish semantics, each under both policies and 1, 2 and 4 workers.
#include "test_support.hpp"

#include <atomic>
#include <stdexcept>
#include <string>
#include <vector>

using apgas::async;
using apgas::finish;
using apgas::task;

namespace {

class finish_semantics : public apgas_test::runtime_test {};

task<> bump(std::atomic<int>& counter) {
  counter.fetch_add(1, std::memory_order_relaxed);
  co_return;
}

TEST_P(finish_semantics, waits_for_every_async_it_started) {
  std::atomic<int> counter{0};
  int after = -1;
  rt().run([&]() -> task<> {
    co_await finish([&]() -> task<> {
      for (int i = 0; i < 1000; ++i) co_await async(bump(counter));
    });
    after = counter.load(std::memory_order_relaxed);
  });
  EXPECT_EQ(after, 1000);
}

// A child that starts grandchildren and returns at once: they escape it, and the finish
// (not the parent) is their join point.
task<> spawn_and_return(std::atomic<int>& counter, int fanout) {
  for (int i = 0; i < fanout; ++i) co_await async(bump(counter));
  co_return;
}

TEST_P(finish_semantics, counts_escaping_asyncs_that_outlive_their_parent) {
  std::atomic<int> counter{0};
  int after = -1;
  rt().run([&]() -> task<> {
    co_await finish([&]() -> task<> {
      for (int i = 0; i < 50; ++i) co_await async(spawn_and_return(counter, 20));
    });
    after = counter.load(std::memory_order_relaxed);
  });
  EXPECT_EQ(after, 1000);
}

TEST_P(finish_semantics, nested_finishes_complete_inner_before_outer_continues) {
  std::atomic<int> inner_total{0};
  std::atomic<int> violations{0};
  rt().run([&]() -> task<> {
    co_await finish([&]() -> task<> {
      for (int i = 0; i < 20; ++i) {
        co_await async([&]() -> task<> {
          std::atomic<int> mine{0};
          co_await finish([&]() -> task<> {
            for (int j = 0; j < 25; ++j) co_await async(bump(mine));
          });
          // The inner finish is done: all 25 of its asyncs have run.
          if (mine.load() != 25) violations.fetch_add(1);
          inner_total.fetch_add(mine.load());
        });
      }
    });
  });
  EXPECT_EQ(violations.load(), 0);
  EXPECT_EQ(inner_total.load(), 500);
}

// A sequential call to a function that spawns: its asyncs belong to the caller's finish and
// may still run after the call returns; the enclosing finish waits for them.
task<> parallel_fill(std::vector<int>& v, std::size_t lo, std::size_t hi) {
  if (hi - lo <= 8) {
    for (std::size_t i = lo; i < hi; ++i) v[i] = static_cast<int>(i);
    co_return;
  }
  const std::size_t mid = lo + (hi - lo) / 2;
  co_await async(parallel_fill(v, lo, mid)); // escapes parallel_fill: no finish here
  co_await parallel_fill(v, mid, hi);
}

TEST_P(finish_semantics, sequential_call_to_a_parallel_function_joins_at_the_callers_finish) {
  std::vector<int> v(10000, -1);
  rt().run([&]() -> task<> {
    co_await finish([&]() -> task<> { co_await parallel_fill(v, 0, v.size()); });
    for (std::size_t i = 0; i < v.size(); ++i) EXPECT_EQ(v[i], static_cast<int>(i));
  });
}

TEST_P(finish_semantics, the_continuation_of_a_finish_runs_exactly_once) {
  std::atomic<int> continuations{0};
  std::atomic<int> leaves{0};
  rt().run([&]() -> task<> {
    co_await finish([&]() -> task<> {
      for (int i = 0; i < 200; ++i) {
        co_await async([&]() -> task<> {
          co_await finish([&]() -> task<> {
            for (int j = 0; j < 10; ++j) co_await async(bump(leaves));
          });
          continuations.fetch_add(1);
        });
      }
    });
  });
  EXPECT_EQ(continuations.load(), 200);
  EXPECT_EQ(leaves.load(), 2000);
}

TEST_P(finish_semantics, async_can_store_its_result_in_a_slot) {
  auto square = [](int x) -> task<long> { co_return static_cast<long>(x) * x; };
  std::vector<long> out(100, 0);
  rt().run([&]() -> task<> {
    co_await finish([&]() -> task<> {
      for (int i = 0; i < 100; ++i) co_await async(square(i), out[static_cast<std::size_t>(i)]);
    });
  });
  for (int i = 0; i < 100; ++i)
    EXPECT_EQ(out[static_cast<std::size_t>(i)], static_cast<long>(i) * i);
}

TEST_P(finish_semantics, plain_callables_run_as_activities) {
  std::atomic<int> counter{0};
  rt().run([&]() -> task<> {
    co_await finish([&] {
      // A finish body may be a plain callable too (it cannot spawn: it does not suspend).
      counter.fetch_add(1);
    });
    co_await finish([&]() -> task<> {
      for (int i = 0; i < 100; ++i) co_await async([&counter] { counter.fetch_add(1); });
    });
  });
  EXPECT_EQ(counter.load(), 101);
}

TEST_P(finish_semantics, a_finish_may_choose_another_policy) {
  for (const apgas::policy other :
       {apgas::policy::work_first, apgas::policy::help_first, apgas::policy::adaptive}) {
    if (other == policy()) continue;
    std::atomic<int> counter{0};
    rt().run([&]() -> task<> {
      co_await finish(other, [&]() -> task<> {
        for (int i = 0; i < 100; ++i) {
          co_await async([&]() -> task<> {
            co_await finish([&]() -> task<> { // back to the run's default
              for (int j = 0; j < 10; ++j) co_await async(bump(counter));
            });
          });
        }
      });
    });
    EXPECT_EQ(counter.load(), 1000) << apgas::to_string(other);
  }
}

task<long> fib(int n) {
  if (n < 2) co_return n;
  long a = 0;
  long b = 0;
  co_await finish([&]() -> task<> {
    co_await async(fib(n - 1), a);
    b = co_await fib(n - 2);
  });
  co_return a + b;
}

TEST_P(finish_semantics, fib_computes_the_right_value) { EXPECT_EQ(rt().run(fib(22)), 17711); }

/// A chain of sequential calls, each awaiting the next: `depth` coroutine frames alive at once.
task<long> call_chain(int depth) {
  if (depth == 0) co_return 0;
  co_return 1 + co_await call_chain(depth - 1);
}

TEST_P(finish_semantics, a_deep_chain_of_calls_does_not_overflow_the_stack) {
  // Where the compiler makes symmetric transfers plain calls (no optimisation, sanitizers),
  // every call and return of the chain nests on the native stack unless the worker bounces
  // transfers through its loop (worker::transfer): 100,000 levels would need tens of MiB.
  constexpr int k_depth = 100000 / apgas_test::k_sanitizer_slowdown;
  EXPECT_EQ(rt().run(call_chain(k_depth)), k_depth);
}

TEST_P(finish_semantics, run_returns_the_value_of_the_root_task_and_can_run_again) {
  EXPECT_EQ(rt().run(fib(10)), 55);
  EXPECT_EQ(rt().run([]() -> task<int> { co_return 7; }), 7);
  int side = 0;
  rt().run([&]() -> task<> {
    side = 1;
    co_return;
  });
  EXPECT_EQ(side, 1);
}

// Root-level escaping asyncs: run() waits for them too.
TEST_P(finish_semantics, run_waits_for_asyncs_that_escape_the_root) {
  std::atomic<int> counter{0};
  rt().run([&]() -> task<> {
    for (int i = 0; i < 100; ++i) co_await async(bump(counter));
  });
  EXPECT_EQ(counter.load(), 100);
}

task<long> fib_all(int n) {
  if (n < 2) co_return n;
  auto [a, b] = co_await apgas::finish_all(fib_all(n - 1), fib_all(n - 2));
  co_return a + b;
}

TEST_P(finish_semantics, finish_all_returns_every_result) {
  EXPECT_EQ(rt().run(fib_all(22)), 17711);
  auto three = [&]() -> task<> {
    std::atomic<int> hits{0};
    auto [x, nothing, y] =
        co_await apgas::finish_all([]() -> task<int> { co_return 1; }(), spawn_and_return(hits, 30),
                                   []() -> task<std::string> { co_return "two"; }());
    EXPECT_EQ(x, 1);
    EXPECT_EQ(y, "two");
    (void)nothing;
    EXPECT_EQ(hits.load(), 30); // escaping asyncs of a finish_all task are waited for too
  };
  rt().run(three);
}

// Help-first: a strand that ends and pops the next help-first strand of its finish hands its
// count over to it (no atomic operation), up to what a strand can carry (255 ends); then it
// counts its ends down. Long chains, with failures among them: every async counted, every
// exception gathered, and both seen only after the last one ended.
TEST_P(finish_semantics, help_first_hand_overs_longer_than_a_strand_can_carry) {
  constexpr int k_asyncs = 3 * 255 + 7;
  std::atomic<int> counter{0};
  int after = -1;
  std::size_t failures = 0;
  rt().run([&]() -> task<> {
    try {
      co_await finish(apgas::policy::help_first, [&]() -> task<> {
        for (int i = 0; i < k_asyncs; ++i) {
          co_await async([&counter, i]() -> task<> {
            counter.fetch_add(1, std::memory_order_relaxed);
            if (i % 100 == 99) throw std::runtime_error("async " + std::to_string(i));
            co_return;
          });
        }
      });
    } catch (const apgas::multiple_exceptions& e) {
      failures = e.exceptions().size();
    }
    after = counter.load(std::memory_order_relaxed);
  });
  EXPECT_EQ(after, k_asyncs);
  EXPECT_EQ(failures, static_cast<std::size_t>(k_asyncs / 100));
}

// A help-first async that took counts over keeps them while it waits for a nested finish
// (whose tasks other workers may steal, so that it resumes elsewhere) and gives them back
// when it ends, wherever that is; meanwhile it starts more asyncs of the outer finish.
task<> wait_then_spawn(std::atomic<int>& counter, int fanout) {
  co_await apgas::finish_all(bump(counter), spawn_and_return(counter, 3));
  for (int i = 0; i < fanout; ++i) co_await async(bump(counter)); // escape to the outer finish
}

TEST_P(finish_semantics, help_first_hand_overs_move_with_a_strand_that_waits) {
  constexpr int k_asyncs = 300;
  constexpr int k_fanout = 5;
  std::atomic<int> counter{0};
  int after = -1;
  rt().run([&]() -> task<> {
    co_await finish(apgas::policy::help_first, [&]() -> task<> {
      for (int i = 0; i < k_asyncs; ++i) co_await async(wait_then_spawn(counter, k_fanout));
    });
    after = counter.load(std::memory_order_relaxed);
  });
  EXPECT_EQ(after, k_asyncs * (1 + 3 + k_fanout));
}

APGAS_INSTANTIATE_CONFIGS(finish_semantics);

} // namespace
