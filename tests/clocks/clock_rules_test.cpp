// X10's clock rules, one test each (X10 language specification, chapter "Clocks"; the table in
// docs/reference/clocks.md names these tests), and every misuse an exception at the misusing
// activity: never an abort, a hang or a lost block. Run under mpiexec at 1, 2 and 4 places.
#include <apgas/apgas.hpp>
#include <apgas/atomic.hpp>
#include <apgas/clock.hpp>
#include <apgas/detail/message_dispatcher.hpp>

#include "../places_test_main.hpp"
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace {

using apgas::clock;
using apgas::place_id;
using apgas::task;

apgas::runtime* g_rt = nullptr;

/// The what() of the clock_use_exception `body` throws, directly or through a finish ("" if
/// none).
template <class Body>
std::string clock_error_of(Body body) {
  return g_rt->run([body]() -> task<std::string> {
    try {
      co_await body();
    } catch (const apgas::clock_use_exception& e) {
      co_return e.what();
    } catch (const apgas::multiple_exceptions& e) {
      for (const auto& inner : e.flattened()) {
        try {
          std::rethrow_exception(inner);
        } catch (const apgas::clock_use_exception& ce) {
          co_return ce.what();
        } catch (const std::exception& other) {
          co_return std::string("unexpected: ") + other.what();
        }
      }
    }
    co_return "";
  });
}

// ---- phases -----------------------------------------------------------------------------------

TEST(clock_rules, each_advance_moves_exactly_one_phase_after_resume_too) {
  // The program of the issue: the only registrant resumes, then advances (X10: phase 2), then
  // advances all (3), advances (4), advances (5).
  const std::vector<std::uint64_t> phases = g_rt->run([]() -> task<std::vector<std::uint64_t>> {
    std::vector<std::uint64_t> seen;
    clock c = co_await clock::make();
    seen.push_back(c.phase());
    c.resume();
    seen.push_back(c.phase());
    co_await c.advance();
    seen.push_back(c.phase());
    co_await apgas::advance_all(c);
    seen.push_back(c.phase());
    co_await c.advance();
    seen.push_back(c.phase());
    co_await c.advance();
    seen.push_back(c.phase());
    co_return seen;
  });
  EXPECT_EQ(phases, (std::vector<std::uint64_t>{1, 1, 2, 3, 4, 5}));
}

TEST(clock_rules, resume_is_idempotent_and_the_activity_stays_in_its_phase) {
  const bool ok = g_rt->run([]() -> task<bool> {
    clock c = co_await clock::make();
    c.resume(); // the phase ends at once (the only registrant)
    c.resume(); // a second resume in the same phase does nothing
    const bool stayed = c.phase() == 1 && c.resumed();
    co_await c.advance(); // waits for nothing more: phase 1 has ended
    co_return stayed&& c.phase() == 2 && !c.resumed();
  });
  EXPECT_TRUE(ok);
}

TEST(clock_rules, advance_after_resume_waits_only_for_the_phase_it_resumed) {
  // B does not end phase 2 until A has left its advance: if A's advance waited for phase 2
  // (one phase too many), both would wait forever.
  for (int round = 0; round < 50; ++round) {
    const std::uint64_t phase = g_rt->run([]() -> task<std::uint64_t> {
      bool a_passed = false; // under the place's atomic lock
      std::uint64_t a_phase = 0;
      co_await apgas::finish([&]() -> task<> {
        clock c = co_await clock::make();
        co_await apgas::async(apgas::clocked(c), [&](clock b) -> task<> {
          co_await b.advance(); // phase 1 ends (with A's resume)
          co_await apgas::when([&] { return a_passed; }, [] {});
          co_await b.advance();
        });
        c.resume();
        co_await c.advance(); // phase 2: must not wait for B's part of it
        co_await apgas::atomic([&] { a_passed = true; });
        a_phase = c.phase();
      });
      co_return a_phase;
    });
    ASSERT_EQ(phase, 2U) << "round " << round;
  }
}

TEST(clock_rules, advance_all_in_either_order_completes_every_time) {
  // X10's advanceAll is deadlock-free in any order: two activities at two places (or one),
  // advance_all(a, b) against advance_all(b, a), 1,000 runs in a row.
  for (int run = 0; run < 1000; ++run) {
    const bool ok = g_rt->run([]() -> task<bool> {
      std::atomic<int> wrong{0};
      const place_id far = apgas::places() - 1;
      co_await apgas::finish([&]() -> task<> {
        clock a = co_await clock::make();
        clock b = co_await clock::make();
        co_await apgas::async_at(far, apgas::clocked(a, b), [](clock x, clock y) -> task<> {
          for (std::uint64_t step = 1; step <= 3; ++step) {
            co_await apgas::advance_all(y, x);
            if (x.phase() != step + 1 || y.phase() != step + 1)
              throw std::runtime_error("a phase skipped");
          }
        });
        for (std::uint64_t step = 1; step <= 3; ++step) {
          co_await apgas::advance_all(a, b);
          if (a.phase() != step + 1 || b.phase() != step + 1) ++wrong;
        }
      });
      co_return wrong.load() == 0;
    });
    ASSERT_TRUE(ok) << "run " << run;
  }
}

TEST(clock_rules, a_child_of_a_resumed_activity_starts_resumed_and_the_parent_stays) {
  // X10 specification, "Registering new activities on clocks": a resumes, then starts b on
  // the clock; b starts resumed, so b's advance cannot pass a's next resume (b would else race
  // ahead to phase 2 while a is still in phase 1).
  for (int round = 0; round < 50; ++round) {
    const bool ok = g_rt->run([]() -> task<bool> {
      std::atomic<int> a_in_phase{1};
      bool ok = true;
      co_await apgas::finish([&]() -> task<> {
        clock c = co_await clock::make();
        co_await apgas::async(apgas::clocked(c), [&](clock other) -> task<> {
          co_await other.advance(); // a third registrant that keeps phase 2 open
          co_await other.advance();
        });
        c.resume();
        co_await apgas::async(apgas::clocked(c), [&](clock b) -> task<> {
          if (!b.resumed() || b.phase() != 1) ok = false;
          co_await b.advance(); // phase 1: ends with the others' resumes (a's is done)
          co_await b.advance(); // phase 2: needs a's resume in phase 2
          if (a_in_phase.load() < 2) ok = false;
        });
        if (c.phase() != 1 || !c.resumed()) ok = false; // the spawn did not move a
        co_await c.advance();
        a_in_phase = 2;
        co_await c.advance();
      });
      co_return ok;
    });
    ASSERT_TRUE(ok) << "round " << round;
  }
}

TEST(clock_rules, a_child_spawned_after_the_resumed_phase_ended_starts_in_the_next) {
  const bool ok = g_rt->run([]() -> task<bool> {
    bool ok = true;
    co_await apgas::finish([&]() -> task<> {
      clock c = co_await clock::make();
      c.resume(); // the only registrant: phase 1 ends now
      co_await apgas::async(apgas::clocked(c), [&](clock b) -> task<> {
        co_await b.advance(); // phase 1 has ended: b is in phase 2 at once
        if (b.phase() != 2) ok = false;
      });
      if (c.phase() != 1) ok = false;
      co_await c.advance();
      if (c.phase() != 2) ok = false;
    });
    co_return ok;
  });
  EXPECT_TRUE(ok);
}

TEST(clock_rules, a_pipeline_written_with_resume_computes_the_right_values) {
  // A producer writes slot k % 2 in phase k, resumes, prepares the next value, advances; the
  // consumer reads slot k % 2 in phase k + 1. If the producer skipped a phase it would
  // overwrite a slot before the consumer read it.
  constexpr int k_steps = 200;
  const int errors = g_rt->run([]() -> task<int> {
    long slots[2] = {0, 0};
    int errors = 0;
    co_await apgas::finish([&]() -> task<> {
      clock c = co_await clock::make();
      co_await apgas::async(apgas::clocked(c), [&](clock consumer) -> task<> {
        co_await consumer.advance();
        for (long k = 0; k < k_steps; ++k) {
          if (slots[k % 2] != k * k) ++errors;
          co_await consumer.advance();
        }
      });
      for (long k = 0; k < k_steps; ++k) {
        slots[k % 2] = k * k;
        c.resume();
        volatile long next = (k + 1) * (k + 1); // work overlapped with the phase's end
        (void)next;
        co_await c.advance();
      }
    });
    co_return errors;
  });
  EXPECT_EQ(errors, 0);
}

TEST(clock_rules, clocked_finish_with_activities_at_every_place_keeps_them_in_step) {
  for (int round = 0; round < 100; ++round) {
    const long total = g_rt->run([]() -> task<long> {
      long total = 0;
      co_await apgas::clocked_finish([&](clock& c) -> task<> {
        for (place_id p = 0; p < apgas::places(); ++p)
          co_await apgas::async_at(p, apgas::clocked(c), [](clock mine) -> task<> {
            for (long step = 1; step <= 5; ++step) {
              const long n = co_await mine.advance(apgas::sum, 1L);
              if (n != static_cast<long>(apgas::places()))
                throw std::runtime_error("a phase counted " + std::to_string(n));
            }
          });
        total = apgas::places();
        co_return;
      });
      co_return total;
    });
    ASSERT_EQ(total, static_cast<long>(g_rt->places())) << "round " << round;
  }
}

TEST(clock_rules, drop_and_the_end_of_an_activity_release_only_their_own_registration) {
  const bool ok = g_rt->run([]() -> task<bool> {
    bool ok = true;
    co_await apgas::finish([&]() -> task<> {
      clock c = co_await clock::make();
      clock d = co_await clock::make();
      co_await apgas::async(apgas::clocked(c, d), [&](clock mc, clock md) -> task<> {
        md.drop(); // leaves d; still on c
        const long n = co_await mc.advance(apgas::sum, 1L);
        if (n != 2) ok = false;
      }); // mc drops here
      const long n = co_await c.advance(apgas::sum, 1L);
      const long m = co_await d.advance(apgas::sum, 1L); // alone on d
      if (n != 2 || m != 1) ok = false;
      const long alone = co_await c.advance(apgas::sum, 1L);
      if (alone != 1) ok = false;
    });
    co_return ok;
  });
  EXPECT_TRUE(ok);
}

TEST(clock_rules, a_clock_whose_registrations_are_all_gone_is_freed) {
  // Local clocks whose activities resumed before they dropped, and distributed ones: none is
  // left in the place's table once the run is over.
  g_rt->run([]() -> task<> {
    for (int i = 0; i < 100; ++i) {
      co_await apgas::finish([&]() -> task<> {
        clock c = co_await clock::make();
        co_await apgas::async(apgas::clocked(c), [](clock mine) { mine.resume(); });
        if (i % 2 == 0)
          co_await apgas::async_at(apgas::places() - 1, apgas::clocked(c),
                                   [](clock mine) -> task<> { co_await mine.advance(); });
        c.resume();
      });
    }
  });
  // A last report may still be on its way here when the run ends (it raced the run's end):
  // the place's watcher delivers it.
  std::string dump;
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  do {
    dump = apgas::detail::message_dispatcher::current().describe_state();
    if (dump.find("clocks: none") != std::string::npos) break;
    std::this_thread::yield();
  } while (std::chrono::steady_clock::now() < give_up);
  EXPECT_NE(dump.find("clocks: none"), std::string::npos) << dump;
}

// ---- misuse: an exception at the misusing activity --------------------------------------------

TEST(clock_rules, operations_on_a_dropped_clock_throw) {
  EXPECT_NE(clock_error_of([]() -> task<> {
              clock c = co_await clock::make();
              c.drop();
              c.drop();
            }).find("drop() on a dropped clock"),
            std::string::npos);
  EXPECT_NE(clock_error_of([]() -> task<> {
              clock c = co_await clock::make();
              c.drop();
              (void)c.phase();
            }).find("phase() on a dropped clock"),
            std::string::npos);
}

TEST(clock_rules, a_plain_child_that_advances_its_parents_clock_throws_and_never_hangs) {
  for (int round = 0; round < 50; ++round) {
    const std::string error = clock_error_of([]() -> task<> {
      clock c = co_await clock::make(); // outlives the child, which holds a reference
      co_await apgas::finish([&]() -> task<> {
        co_await apgas::async([&c]() -> task<> { co_await c.advance(); });
        co_await c.advance();
        co_await c.advance();
      });
    });
    ASSERT_NE(error.find("not registered on the clock"), std::string::npos)
        << "round " << round << ": " << error;
  }
}

TEST(clock_rules, a_clocked_async_by_a_plain_child_with_its_parents_clock_throws) {
  EXPECT_NE(clock_error_of([]() -> task<> {
              clock c = co_await clock::make();
              co_await apgas::finish([&]() -> task<> {
                co_await apgas::async(
                    [&c]() -> task<> { co_await apgas::async(apgas::clocked(c), [](clock) {}); });
              });
            }).find("not registered on the clock"),
            std::string::npos);
}

TEST(clock_rules, advance_inside_a_finish_body_is_the_activitys_own) {
  // A finish's body is part of the activity that awaits the finish: it may advance the
  // activity's clocks (only clocked asyncs inside it are refused).
  const std::uint64_t phase = g_rt->run([]() -> task<std::uint64_t> {
    clock c = co_await clock::make();
    co_await apgas::finish([&]() -> task<> { co_await c.advance(); });
    co_return c.phase();
  });
  EXPECT_EQ(phase, 2U);
}

TEST(clock_rules, clock_operations_inside_atomic_or_when_throw) {
  EXPECT_NE(clock_error_of([]() -> task<> {
              clock c = co_await clock::make();
              co_await apgas::atomic([&] { c.resume(); });
            }).find("resume() inside an atomic block"),
            std::string::npos);
  EXPECT_NE(clock_error_of([]() -> task<> {
              clock c = co_await clock::make();
              co_await apgas::when([] { return true; }, [&] { c.drop(); });
            }).find("drop() inside an atomic block"),
            std::string::npos);
  // The clock is untouched: the activity goes on with it.
  const std::uint64_t phase = g_rt->run([]() -> task<std::uint64_t> {
    clock c = co_await clock::make();
    try {
      co_await apgas::atomic([&] { c.resume(); });
    } catch (const apgas::clock_use_exception&) {
    }
    co_await c.advance();
    co_return c.phase();
  });
  EXPECT_EQ(phase, 2U);
}

TEST(clock_rules, an_atomic_block_inside_an_atomic_block_runs_as_part_of_it) {
  // X10 allows nested atomic blocks. The enclosing body is a plain callable (it cannot
  // co_await), so the inner block runs where it is called.
  const int count = g_rt->run([]() -> task<int> {
    int count = 0;
    co_await apgas::atomic([&] {
      ++count;
      (void)apgas::atomic([&] { ++count; }); // written as X10 code reads
      (void)apgas::atomic([&] { (void)apgas::atomic([&] { count += 40; }); }); // deeper
    });
    co_return count;
  });
  EXPECT_EQ(count, 42);
}

TEST(clock_rules, when_inside_an_atomic_block_throws) {
  const std::string what = g_rt->run([]() -> task<std::string> {
    try {
      co_await apgas::atomic([&] { (void)apgas::when([] { return true; }, [] {}); });
    } catch (const std::logic_error& e) {
      co_return e.what();
    }
    co_return "";
  });
  EXPECT_NE(what.find("when inside an atomic block"), std::string::npos) << what;
}

// ---- reductions that fail -------------------------------------------------------------------

/// An operation that throws when the sum would pass 100.
struct bounded_sum {
  long operator()(long a, long b) const {
    if (a + b > 100) throw std::overflow_error("bounded_sum: over 100");
    return a + b;
  }
};

TEST(clock_rules, reductions_that_disagree_across_places_fail_every_contributor) {
  // Half the places sum, the other half take the maximum: every contributor, at every place,
  // gets clock_use_exception (the job goes on), and the next phase works.
  const long after = g_rt->run([]() -> task<long> {
    std::atomic<long> after{0};
    try {
      co_await apgas::clocked_finish([&](clock& c) -> task<> {
        for (place_id p = 0; p < apgas::places(); ++p)
          co_await apgas::async_at(
              p, apgas::clocked(c),
              [](clock mine, place_id q) -> task<> {
                bool failed = false;
                try {
                  if (q % 2 == 0) (void)co_await mine.advance(apgas::sum, 1L);
                  else (void)co_await mine.advance(apgas::max, 1L);
                } catch (const apgas::clock_use_exception&) {
                  failed = true;
                }
                const long n = co_await mine.advance(apgas::sum, 1L);
                if (!failed && apgas::places() > 1) throw std::runtime_error("no failure seen");
                if (n != static_cast<long>(apgas::places())) throw std::runtime_error("next phase");
              },
              p);
        co_return;
      });
      after = 1;
    } catch (const std::exception& e) {
      ADD_FAILURE() << e.what();
    }
    co_return after.load();
  });
  EXPECT_EQ(after, 1);
}

TEST(clock_rules, a_reduction_operation_that_throws_fails_every_contributor) {
  // 60 from each of two activities (at two places when there are two): the sum passes 100 and
  // the operation throws; both contributors get its exception, as its own type at every
  // place, and the run's caller can catch it (every place: rt.run throws what place 0 did).
  int failures = 0;
  try {
    g_rt->run([]() -> task<> {
      co_await apgas::clocked_finish([&](clock& c) -> task<> {
        for (place_id p : {place_id{0}, apgas::places() - 1})
          co_await apgas::async_at(p, apgas::clocked(c), [](clock mine) -> task<> {
            (void)co_await mine.advance(bounded_sum{}, 60L);
          });
        co_return;
      });
    });
  } catch (const apgas::multiple_exceptions& e) {
    for (const auto& inner : e.flattened()) {
      try {
        std::rethrow_exception(inner);
      } catch (const std::overflow_error& x) {
        if (std::string(x.what()).find("bounded_sum: over 100") != std::string::npos) ++failures;
      } catch (...) {
      }
    }
  }
  EXPECT_EQ(failures, 2);
}

} // namespace

int main(int argc, char** argv) { return apgas_test::run_places_tests(argc, argv, g_rt); }
