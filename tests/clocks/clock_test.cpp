// Clocks at one and several places (run under mpiexec at 1, 2 and 4 places): phases in lock
// step, reductions, drops, misuse, many more activities than workers, lazy and eager alike.
#include <apgas/apgas.hpp>
#include <apgas/clock.hpp>
#include <apgas/detail/message_dispatcher.hpp>

#include "../places_test_main.hpp"
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

using apgas::clock;
using apgas::place_id;
using apgas::task;

apgas::runtime* g_rt = nullptr;

/// One phase of a clocked activity: the phase number it is in, checked against the reduction
/// of every activity's (min and max must both be this phase: nobody is behind or ahead).
task<bool> lock_step(clock& c, long step, long activities) {
  const long lo = co_await c.advance(apgas::min, step);
  const long hi = co_await c.advance(apgas::max, step);
  const long n = co_await c.advance(apgas::sum, 1L);
  co_return lo == step&& hi == step&& n == activities;
}

TEST(clock, a_local_clock_keeps_its_activities_in_lock_step) {
  constexpr int k_activities = 8;
  constexpr int k_steps = 50;
  const bool ok = g_rt->run([]() -> task<bool> {
    std::atomic<int> arrived[k_steps] = {};
    std::atomic<bool> ok{true};
    co_await apgas::finish([&]() -> task<> {
      clock c = co_await clock::make();
      for (int i = 0; i < k_activities; ++i)
        co_await apgas::async(apgas::clocked(c), [&](clock mine) -> task<> {
          for (int step = 0; step < k_steps; ++step) {
            arrived[step].fetch_add(1);
            co_await mine.advance();
            // Nobody passes a phase before every registered activity has arrived in it.
            if (arrived[step].load() != k_activities) ok = false;
          }
        });
      c.drop(); // the maker takes no part in the phases
    });
    co_return ok.load();
  });
  EXPECT_TRUE(ok);
}

TEST(clock, the_last_resume_ends_the_phase_and_reductions_are_exact) {
  const bool ok = g_rt->run([]() -> task<bool> {
    std::atomic<bool> ok{true};
    co_await apgas::finish([&]() -> task<> {
      clock c = co_await clock::make();
      for (long i = 0; i < 10; ++i)
        co_await apgas::async(apgas::clocked(c), [&, i](clock mine) -> task<> {
          for (long step = 1; step <= 20; ++step) {
            const long total = co_await mine.advance(apgas::sum, i * step);
            const long low = co_await mine.advance(apgas::min, i + step);
            const long high = co_await mine.advance(apgas::max, i + step);
            if (total != 45 * step || low != step || high != 9 + step) ok = false;
          }
        });
    }); // the maker's registration drops as the body ends
    co_return ok.load();
  });
  EXPECT_TRUE(ok);
}

TEST(clock, many_more_activities_than_workers_do_not_deadlock) {
  constexpr long k_activities = 1000;
  const long phases = g_rt->run([]() -> task<long> {
    std::atomic<long> passed{0};
    co_await apgas::finish([&]() -> task<> {
      clock c = co_await clock::make();
      for (long i = 0; i < k_activities; ++i)
        co_await apgas::async(apgas::clocked(c), [&](clock mine) -> task<> {
          for (int step = 0; step < 5; ++step) {
            const long n = co_await mine.advance(apgas::sum, 1L);
            if (n == k_activities) passed.fetch_add(1);
          }
        });
    });
    co_return passed.load();
  });
  EXPECT_EQ(phases, 5 * k_activities);
}

TEST(clock, lazy_and_eager_give_the_same_results) {
  for (const apgas::signal s : {apgas::signal::lazy, apgas::signal::eager}) {
    const long sum = g_rt->run([s]() -> task<long> {
      std::atomic<long> sum{0};
      co_await apgas::finish([&]() -> task<> {
        clock c = co_await clock::make(s);
        for (long i = 0; i < 4; ++i)
          co_await apgas::async(apgas::clocked(c), [&, i](clock mine) -> task<> {
            for (long step = 0; step < 100; ++step)
              sum.fetch_add(co_await mine.advance(apgas::sum, i + step));
          });
      });
      co_return sum.load();
    });
    long expect = 0;
    for (long step = 0; step < 100; ++step) expect += 4 * (6 + 4 * step);
    EXPECT_EQ(sum, expect) << (s == apgas::signal::lazy ? "lazy" : "eager");
  }
}

TEST(clock, activities_that_drop_stop_holding_phases_back) {
  const bool ok = g_rt->run([]() -> task<bool> {
    std::atomic<bool> ok{true};
    co_await apgas::finish([&]() -> task<> {
      clock c = co_await clock::make();
      for (long i = 0; i < 6; ++i)
        co_await apgas::async(apgas::clocked(c), [&, i](clock mine) -> task<> {
          for (long step = 0; step < 30; ++step) {
            // Activity i (but 0) leaves at step 4 * i: the sum counts who is still registered.
            if (step == 4 * i && i != 0) {
              if (i % 2 == 0) mine.resume(); // resumed, then dropped: both paths
              mine.drop();
              co_return;
            }
            const long n = co_await mine.advance(apgas::sum, 1L);
            long still = 1; // activity 0 never drops
            for (long j = 1; j < 6; ++j)
              if (4 * j > step) ++still;
            if (n != still) ok = false;
          }
        });
    });
    co_return ok.load();
  });
  EXPECT_TRUE(ok);
}

TEST(clock, resume_then_advance_waits_only_for_the_others) {
  const long total = g_rt->run([]() -> task<long> {
    std::atomic<long> total{0};
    co_await apgas::finish([&]() -> task<> {
      clock c = co_await clock::make();
      for (long i = 0; i < 3; ++i)
        co_await apgas::async(apgas::clocked(c), [&](clock mine) -> task<> {
          for (int step = 0; step < 10; ++step) {
            mine.resume();
            mine.resume(); // a second resume in the same phase does nothing
            total.fetch_add(1);
            co_await mine.advance();
          }
        });
    });
    co_return total.load();
  });
  EXPECT_EQ(total, 30);
}

// ---- misuse ----------------------------------------------------------------------------------

template <class Body>
std::string clock_error_of(Body body) {
  return g_rt->run([body]() -> task<std::string> {
    try {
      co_await body();
    } catch (const apgas::clock_use_exception& e) {
      co_return e.what();
    } catch (const apgas::multiple_exceptions& e) {
      try {
        std::rethrow_exception(e.exceptions().front());
      } catch (const apgas::clock_use_exception& inner) {
        co_return inner.what();
      } catch (...) {
      }
    }
    co_return "";
  });
}

TEST(clock, operations_on_a_dropped_clock_throw) {
  EXPECT_NE(clock_error_of([]() -> task<> {
              clock c = co_await clock::make();
              c.drop();
              c.resume();
            }).find("resume() on a dropped clock"),
            std::string::npos);
  EXPECT_NE(clock_error_of([]() -> task<> {
              clock c = co_await clock::make();
              c.drop();
              co_await c.advance();
            }).find("advance() on a dropped clock"),
            std::string::npos);
  EXPECT_NE(clock_error_of([]() -> task<> {
              clock c;
              co_await apgas::finish(
                  [&]() -> task<> { co_await apgas::async(apgas::clocked(c), [](clock) {}); });
            }).find("a clocked async on a dropped clock"),
            std::string::npos);
}

TEST(clock, a_resumed_clock_cannot_be_sent_to_a_place) {
  // A registration crosses places only in a phase its spawner has not resumed (apgas's rule;
  // X10 allows it, see docs/reference/clocks.md). The same clocked async to this place, not by
  // async_at, starts the child resumed (X10's rule).
  EXPECT_NE(clock_error_of([]() -> task<> {
              co_await apgas::finish([&]() -> task<> {
                clock c = co_await clock::make();
                c.resume();
                co_await apgas::async_at(apgas::here(), apgas::clocked(c), [](clock) {});
              });
            }).find("a clocked async_at by an activity that has resumed"),
            std::string::npos);
}

TEST(clock, a_clocked_async_inside_a_nested_finish_throws_instead_of_deadlocking) {
  EXPECT_NE(clock_error_of([]() -> task<> {
              clock c = co_await clock::make();
              co_await apgas::finish(
                  [&]() -> task<> { co_await apgas::async(apgas::clocked(c), [](clock) {}); });
            }).find("inside a finish nested"),
            std::string::npos);
}

TEST(clock, a_phase_whose_reductions_disagree_throws) {
  EXPECT_NE(clock_error_of([]() -> task<> {
              co_await apgas::finish([&]() -> task<> {
                clock c = co_await clock::make();
                co_await apgas::async(apgas::clocked(c), [](clock mine) -> task<> {
                  (void)co_await mine.advance(apgas::sum, 1L);
                });
                (void)co_await c.advance(apgas::max, 1L);
              });
            }).find("different operations or types"),
            std::string::npos);
}

// ---- across places ---------------------------------------------------------------------------

TEST(clock, activities_at_every_place_move_in_lock_step) {
  constexpr long k_per_place = 3;
  constexpr long k_steps = 40;
  const long passed = g_rt->run([]() -> task<long> {
    const long activities = k_per_place * apgas::places();
    std::vector<long> results;
    co_await apgas::finish([&]() -> task<> {
      clock c = co_await clock::make();
      for (place_id p = 0; p < apgas::places(); ++p)
        for (long i = 0; i < k_per_place; ++i)
          co_await apgas::async_at(
              p, apgas::clocked(c),
              [](clock mine, long n) -> task<> {
                long ok = 0;
                for (long step = 0; step < k_steps; ++step)
                  if (co_await lock_step(mine, step, n)) ++ok;
                const long all_ok = co_await mine.advance(apgas::sum, ok);
                if (all_ok != n * k_steps) throw std::runtime_error("phases out of step");
              },
              activities);
    });
    co_return activities;
  });
  EXPECT_EQ(passed, 3L * g_rt->places());
}

TEST(clock, a_clock_made_at_a_later_phase_numbers_its_phases_from_there) {
  // As a program resumed after phase 41 does: every activity, at every place, sees phases 42
  // on, and each phase's reduction is of that phase's contributions only.
  constexpr std::uint64_t k_first = 42;
  constexpr long k_steps = 6;
  const long sum = g_rt->run([]() -> task<long> {
    long total = 0;
    co_await apgas::finish([&]() -> task<> {
      clock c = co_await clock::make(apgas::signal::lazy, k_first);
      if (c.phase() != k_first) throw std::runtime_error("the maker is not in the first phase");
      for (place_id p = 0; p < apgas::places(); ++p)
        co_await apgas::async_at(p, apgas::clocked(c), [](clock mine) -> task<> {
          for (long step = 0; step < k_steps; ++step) {
            const std::uint64_t phase = mine.phase();
            if (phase != k_first + static_cast<std::uint64_t>(step))
              throw std::runtime_error("phase " + std::to_string(phase) + " at step " +
                                       std::to_string(step));
            const auto all = co_await mine.advance(apgas::sum, phase);
            if (all != phase * apgas::places()) throw std::runtime_error("a phase's sum is off");
          }
        });
      for (long step = 0; step < k_steps; ++step) {
        co_await c.advance();
        total += static_cast<long>(c.phase());
      }
    });
    co_return total;
  });
  // The maker's phases after each advance: 43 to 48.
  EXPECT_EQ(sum, 43L + 44 + 45 + 46 + 47 + 48);
}

/// A clocked stage as a free function: its registration first, then its arguments.
task<> clocked_stage(clock mine, long steps, long offset) {
  for (long step = 0; step < steps; ++step) {
    const long all = co_await mine.advance(apgas::sum, offset + step);
    if (all != apgas::places() * (offset + step))
      throw std::runtime_error("stage " + std::to_string(step) + ": sum " + std::to_string(all));
  }
}

TEST(clock, a_clocked_async_at_of_a_free_function_runs_in_lock_step) {
  constexpr long k_steps = 5;
  const long sum = g_rt->run([]() -> task<long> {
    long total = 0;
    co_await apgas::finish([&]() -> task<> {
      clock c = co_await clock::make();
      for (place_id p = 0; p < apgas::places(); ++p)
        co_await apgas::async_at(p, apgas::clocked(c), clocked_stage, long{k_steps}, 10L);
      for (long step = 0; step < k_steps; ++step) {
        co_await c.advance();
        total += static_cast<long>(c.phase());
      }
    });
    co_return total;
  });
  EXPECT_EQ(sum, 2L + 3 + 4 + 5 + 6);
}

TEST(clock, a_first_phase_out_of_range_throws) {
  EXPECT_NE(clock_error_of([]() -> task<> {
              clock c = co_await clock::make(apgas::signal::eager, 0);
            }).find("first_phase 0: phases count from 1 to 2^63"),
            std::string::npos);
  EXPECT_NE(clock_error_of([]() -> task<> {
              clock c = co_await clock::make(apgas::signal::lazy, (std::uint64_t{1} << 63) + 1);
            }).find("phases count from 1 to 2^63"),
            std::string::npos);
}

TEST(clock, a_clock_whose_activities_live_only_away_from_its_home) {
  const long sum = g_rt->run([]() -> task<long> {
    const place_id n = apgas::places();
    std::atomic<long> seen{0};
    co_await apgas::finish([&]() -> task<> {
      clock c = co_await clock::make();
      for (place_id p = n > 1 ? 1 : 0; p < n; ++p)
        co_await apgas::async_at(p, apgas::clocked(c), [](clock mine) -> task<> {
          for (long step = 0; step < 20; ++step) (void)co_await mine.advance(apgas::sum, step);
        });
      c.drop(); // the home keeps no registrant
    });
    seen = n;
    co_return seen.load();
  });
  EXPECT_EQ(sum, static_cast<long>(g_rt->places()));
}

TEST(clock, remote_children_spawned_mid_run_join_the_current_phase) {
  const long total = g_rt->run([]() -> task<long> {
    long total = 0;
    co_await apgas::finish([&]() -> task<> {
      clock c = co_await clock::make();
      for (long step = 0; step < 10; ++step) {
        // Each phase, one more activity at the next place, which stays until the end.
        const place_id p = static_cast<place_id>(step % apgas::places());
        co_await apgas::async_at(
            p, apgas::clocked(c),
            [](clock mine, long from) -> task<> {
              for (long s = from; s < 10; ++s) (void)co_await mine.advance(apgas::sum, 1L);
            },
            step);
        total += co_await c.advance(apgas::sum, 1L);
      }
    });
    co_return total;
  });
  // Phase s counts the maker and the s + 1 activities started so far.
  long expect = 0;
  for (long s = 0; s < 10; ++s) expect += s + 2;
  EXPECT_EQ(total, expect);
}

TEST(clock, phases_stay_in_lock_step_under_random_delays) {
  const long activities = g_rt->run([]() -> task<long> {
    const long n = 4L * apgas::places();
    co_await apgas::finish([&]() -> task<> {
      clock c = co_await clock::make();
      for (place_id p = 0; p < apgas::places(); ++p)
        for (long i = 0; i < 4; ++i)
          co_await apgas::async_at(
              p, apgas::clocked(c),
              [](clock mine, long total, long seed) -> task<> {
                std::uint64_t x = static_cast<std::uint64_t>(seed) * 0x9E3779B97F4A7C15ULL + 1;
                for (long step = 0; step < 30; ++step) {
                  x ^= x << 13;
                  x ^= x >> 7;
                  x ^= x << 17;
                  volatile std::uint64_t sink = 0; // a random amount of work before the advance
                  for (std::uint64_t k = 0; k < x % 20000; ++k) sink = sink + k;
                  if (!co_await lock_step(mine, step, total))
                    throw std::runtime_error("phases out of step");
                }
              },
              n, static_cast<long>(p * 4 + i));
      c.drop();
    });
    co_return n;
  });
  EXPECT_EQ(activities, 4L * g_rt->places());
}

TEST(clock, a_place_whose_activities_wait_on_a_phase_still_serves_messages) {
  const long answered = g_rt->run([]() -> task<long> {
    const place_id last = apgas::places() - 1;
    long answers = 0;
    co_await apgas::finish([&]() -> task<> {
      clock c = co_await clock::make();
      // The last place's activities advance at once: they wait for this activity's resume.
      for (int i = 0; i < 4; ++i)
        co_await apgas::async_at(last, apgas::clocked(c),
                                 [](clock mine) -> task<> { co_await mine.advance(); });
      // Meanwhile that place answers requests (its workers are free: nobody blocks on a phase).
      for (int i = 0; i < 20; ++i)
        answers += co_await apgas::at(
                       last, [](int x) { return x + 1; }, i) -
                   i;
      co_await c.advance();
    });
    co_return answers;
  });
  EXPECT_EQ(answered, 20);
}

TEST(clock, a_place_whose_activities_all_drop_leaves_the_others_going) {
  const long total = g_rt->run([]() -> task<long> {
    std::atomic<long> total{0};
    co_await apgas::finish([&]() -> task<> {
      clock c = co_await clock::make();
      const place_id n = apgas::places();
      for (place_id p = 0; p < n; ++p)
        co_await apgas::async_at(
            p, apgas::clocked(c),
            [](clock mine, place_id places) -> task<> {
              // Activities at the last place drop after 5 phases; the others go on to 20.
              const bool leaves = apgas::here() == places - 1 && places > 1;
              for (long step = 0; step < 20; ++step) {
                if (leaves && step == 5) co_return; // drops as it ends
                const long n = co_await mine.advance(apgas::sum, 1L);
                const long expect = static_cast<long>(places) - (places > 1 && step >= 5 ? 1 : 0);
                if (n != expect) throw std::runtime_error("a dropped place still counted");
              }
            },
            n);
      c.drop();
    });
    co_return total.load();
  });
  EXPECT_EQ(total, 0);
}

TEST(clock, a_clocked_remote_child_slower_than_its_parents_resume_still_counts) {
  // The child travels with a megabyte of arguments to the last place; the parent resumes as
  // soon as it is sent, so the parent's report can reach the other places first. The phase
  // must still wait for the child: the sum counts both.
  const long counted = g_rt->run([]() -> task<long> {
    long counted = 0;
    co_await apgas::finish([&]() -> task<> {
      clock c = co_await clock::make();
      std::vector<long> payload(1 << 17, 1);
      co_await apgas::async_at(
          apgas::places() - 1, apgas::clocked(c),
          [](clock mine, std::vector<long> data) -> task<> {
            (void)co_await mine.advance(apgas::sum, data.empty() ? 0L : 1L);
          },
          payload);
      counted = co_await c.advance(apgas::sum, 1L); // resumes at once, as the child leaves
    });
    co_return counted;
  });
  EXPECT_EQ(counted, 2);
}

TEST(clock, the_state_dump_lists_a_clock_and_what_its_phase_waits_for) {
  const std::string dump = g_rt->run([]() -> task<std::string> {
    std::string dump;
    co_await apgas::finish([&]() -> task<> {
      clock c = co_await clock::make();
      co_await apgas::async(apgas::clocked(c), [](clock mine) -> task<> {
        co_await mine.advance(); // waits for the maker
      });
      dump = apgas::detail::message_dispatcher::current().describe_state();
      co_await c.advance();
    });
    co_return dump;
  });
  EXPECT_NE(dump.find("clocks:"), std::string::npos) << dump;
  EXPECT_NE(dump.find("phase 1 (local): 2 registrant(s) here"), std::string::npos) << dump;
}

} // namespace

int main(int argc, char** argv) { return apgas_test::run_places_tests(argc, argv, g_rt); }
