// Multi-place semantics, run by ctest under mpiexec -n 1, 2 and 4. Every place runs the same
// tests in the same order (runtime::run is collective); assertions may fail at any place.
#include <apgas/apgas.hpp>

#include "../../places_test_main.hpp"
#include "test_arguments.hpp"
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

using apgas::async_at;
using apgas::at;
using apgas::finish;
using apgas::place_id;
using apgas::task;

namespace {

apgas::runtime* g_rt = nullptr;
std::atomic<long> g_counter{0}; // one per place (per process)

/// Resets g_counter at every place and returns the sum it had over all places.
task<long> collect_counters() {
  long sum = 0;
  for (place_id p = 0; p < apgas::places(); ++p)
    sum += co_await at(p, [] { return g_counter.exchange(0); });
  co_return sum;
}

TEST(places, here_and_places_are_consistent) {
  const place_id n = g_rt->places();
  const auto ids = g_rt->run([n]() -> task<std::vector<place_id>> {
    std::vector<place_id> seen;
    for (place_id p = 0; p < n; ++p) seen.push_back(co_await at(p, [] { return apgas::here(); }));
    co_return seen;
  });
  ASSERT_EQ(ids.size(), n);
  for (place_id p = 0; p < n; ++p) EXPECT_EQ(ids[p], p);
}

TEST(places, a_bad_place_id_throws_at_the_caller) {
  const bool thrown = g_rt->run([]() -> task<bool> {
    try {
      co_await async_at(apgas::places(), [] {});
    } catch (const apgas::bad_place& e) {
      co_return std::string(e.what()).find("does not exist") != std::string::npos;
    }
    co_return false;
  });
  EXPECT_TRUE(thrown);
}

TEST(places, finish_counts_every_remote_async) {
  const long total = g_rt->run([]() -> task<long> {
    co_await finish([]() -> task<> {
      for (place_id p = 0; p < apgas::places(); ++p)
        for (int i = 0; i < 100; ++i)
          co_await async_at(
              p, [](int k) { g_counter += k; }, 1);
    });
    co_return co_await collect_counters();
  });
  EXPECT_EQ(total, 100L * g_rt->places());
}

/// A plain struct: bitwise, so a plain async carrying it is written straight into the
/// coalescing buffer (see message_dispatcher::send_plain_async_written).
struct mixed_fields {
  char tag;
  double weight;
  std::int16_t small;
};
static_assert(apgas::detail::is_bitwise_v<mixed_fields>, "the test wants the in-place path");

TEST(places, plain_asyncs_with_bitwise_and_other_arguments_arrive_intact) {
  // Bitwise arguments of odd sizes (written in place, unaligned) next to a string (serialized
  // the usual way): every value must arrive as sent, in both kinds of message.
  const long total = g_rt->run([]() -> task<long> {
    co_await finish([]() -> task<> {
      for (place_id p = 0; p < apgas::places(); ++p)
        for (int i = 0; i < 50; ++i) {
          const mixed_fields m{'x', 0.5 * i, static_cast<std::int16_t>(-i)};
          co_await async_at(
              p,
              [](char c, mixed_fields f, std::uint64_t big, int k) {
                if (c == 'c' && f.tag == 'x' && f.weight == 0.5 * k && f.small == -k &&
                    big == 0x0102030405060708ULL + static_cast<std::uint64_t>(k))
                  g_counter += 1;
              },
              'c', m, std::uint64_t{0x0102030405060708ULL} + static_cast<std::uint64_t>(i), i);
          co_await async_at(
              p,
              [](std::string text, int k) {
                if (text == "value " + std::to_string(k)) g_counter += 1;
              },
              "value " + std::to_string(i), i);
        }
    });
    co_return co_await collect_counters();
  });
  EXPECT_EQ(total, 100L * g_rt->places());
}

/// Three bytes, no padding: bodies of merged messages are not aligned.
struct odd_sized {
  std::uint8_t a;
  std::uint16_t b;
} __attribute__((packed));
static_assert(sizeof(odd_sized) == 3 && apgas::detail::is_bitwise_v<odd_sized>);

TEST(places, streams_of_plain_asyncs_travel_merged_and_arrive_split_right) {
  // Runs of one function with 8-byte arguments and another with 3-byte ones, to one place:
  // each run travels as one merged message (msg_kind::plain_run). The runs are broken by the
  // other function, by an async with a string, and by an inner finish (another head): every
  // async must run once with its own arguments.
  const long total = g_rt->run([]() -> task<long> {
    const place_id to = 1 % apgas::places();
    co_await finish([to]() -> task<> {
      for (int round = 0; round < 30; ++round) {
        for (std::uint64_t i = 0; i < 100; ++i)
          co_await async_at(
              to,
              [](std::uint64_t v, int r) {
                if (v == 1000 * static_cast<std::uint64_t>(r) + 7) g_counter += 1;
              },
              1000 * static_cast<std::uint64_t>(round) + 7, round);
        for (int i = 0; i < 50; ++i)
          co_await async_at(
              to,
              [](odd_sized o) {
                if (o.a == static_cast<std::uint8_t>(o.b % 251)) g_counter += 1;
              },
              odd_sized{static_cast<std::uint8_t>((round * 50 + i) % 251),
                        static_cast<std::uint16_t>(round * 50 + i)});
        if (round % 3 == 0)
          co_await async_at(
              to,
              [](std::string s, int r) {
                if (s == "round " + std::to_string(r)) g_counter += 1;
              },
              "round " + std::to_string(round), round);
        if (round % 5 == 0)
          co_await finish([to]() -> task<> {
            for (int i = 0; i < 20; ++i)
              co_await async_at(
                  to,
                  [](std::uint64_t v) {
                    if (v == 3) g_counter += 1;
                  },
                  std::uint64_t{3});
          });
      }
    });
    co_return co_await collect_counters();
  });
  EXPECT_EQ(total, 30L * 150 + 10 + 6 * 20);
}

std::atomic<std::uint64_t> g_sum{0}; // one per place (per process)

TEST(places, a_delivery_of_more_plain_asyncs_than_a_block_holds_is_counted_whole) {
  // 300,000 asyncs of 8-byte arguments to this place and the next: merged 8,192 to a
  // message, a poll delivers megabytes of them, more than one block of plain asyncs
  // (message_dispatcher: k_max_plain_block_bytes) holds, so blocks are counted and made runnable
  // in the middle of a delivery. Every async must run once, and the finish wait for all.
  constexpr std::uint64_t k_asyncs = 300000;
  const long ran = g_rt->run([]() -> task<long> {
    g_sum = 0;
    co_await finish([]() -> task<> {
      const place_id here = apgas::here();
      const place_id next = (here + 1) % apgas::places();
      for (std::uint64_t i = 1; i <= k_asyncs; ++i)
        co_await async_at(
            i % 2 == 0 ? here : next,
            [](std::uint64_t v) {
              g_counter += 1;
              g_sum += v;
            },
            i);
    });
    std::uint64_t sum = 0;
    for (place_id p = 0; p < apgas::places(); ++p)
      sum += co_await at(p, [] { return g_sum.exchange(0); });
    if (sum != k_asyncs * (k_asyncs + 1) / 2) co_return -1;
    co_return co_await collect_counters();
  });
  EXPECT_EQ(ran, static_cast<long>(k_asyncs));
}

TEST(places, escaping_remote_asyncs_that_hop_further_are_governed_by_the_finish) {
  const long total = g_rt->run([]() -> task<long> {
    co_await finish([]() -> task<> {
      for (place_id p = 0; p < apgas::places(); ++p) {
        co_await async_at(p, []() -> task<> {
          // An activity at p starts more at q, and does not wait for them.
          for (place_id q = 0; q < apgas::places(); ++q)
            co_await async_at(q, [] { g_counter += 1; });
        });
      }
    });
    co_return co_await collect_counters();
  });
  EXPECT_EQ(total, static_cast<long>(g_rt->places()) * g_rt->places());
}

std::atomic<long> g_by_origin[64]; // at each place: asyncs received, by the place that sent them

TEST(places, nested_remote_finishes_complete_inside_out) {
  if (g_rt->places() > 64) GTEST_SKIP();
  const long complete = g_rt->run([]() -> task<long> {
    co_await finish([]() -> task<> {
      for (place_id p = 0; p < apgas::places(); ++p) {
        co_await async_at(p, []() -> task<> {
          const place_id origin = apgas::here();
          co_await finish([origin]() -> task<> {
            for (place_id q = 0; q < apgas::places(); ++q)
              for (int i = 0; i < 10; ++i)
                co_await async_at(
                    q, [](place_id o) { g_by_origin[o] += 1; }, origin);
          });
          // The inner finish ended: every one of its asyncs has run, at every place.
          long seen = 0;
          for (place_id q = 0; q < apgas::places(); ++q)
            seen += co_await at(
                q, [](place_id o) { return g_by_origin[o].exchange(0); }, origin);
          if (seen == 10L * apgas::places()) g_counter += 1;
        });
      }
    });
    co_return co_await collect_counters();
  });
  EXPECT_EQ(complete, static_cast<long>(g_rt->places()));
}

TEST(places, at_returns_values_and_rethrows_remote_exceptions_as_their_type) {
  const std::string text = g_rt->run([]() -> task<std::string> {
    const place_id last = apgas::places() - 1;
    // (Built before the co_await: GCC 12 cannot keep an initializer_list across one.)
    const std::vector<int> input{1, 2, 3};
    std::vector<int> v = co_await at(
        last,
        [](std::vector<int> in) {
          for (int& x : in) x *= 2;
          return in;
        },
        input);
    if (v != std::vector<int>{2, 4, 6}) co_return "wrong vector";
    try {
      co_await at(last, []() -> int { throw std::invalid_argument("bad input at the far end"); });
    } catch (const std::invalid_argument& e) {
      const apgas::remote_origin* origin = apgas::origin_of(e);
      if (origin == nullptr || origin->place() != last) co_return "wrong place";
      co_return origin->type_name() + ": " + e.what();
    }
    co_return "no exception";
  });
  EXPECT_EQ(text, "std::invalid_argument: bad input at the far end");
}

TEST(places, an_at_moves_big_arguments_and_values_intact_both_ways) {
  // Sizes around the transport's thresholds: copied into a pooled buffer (3 KiB), sent from
  // the caller's own vector (from 4 KiB), announced as a big network message (200 KiB), and
  // too big to keep for reuse (2 MiB). Each size twice, so that a recycled vector is reused;
  // to every place, this one included; with remote asyncs buffered in between, so that some
  // messages leave behind a buffer and not alone.
  const std::string outcome = g_rt->run([]() -> task<std::string> {
    for (const std::size_t bytes : {3u << 10, 4u << 10, 64u << 10, 200u << 10, 2u << 20}) {
      for (int round = 0; round < 2; ++round) {
        for (place_id p = 0; p < apgas::places(); ++p) {
          std::vector<std::uint64_t> sent(bytes / 8);
          for (std::size_t i = 0; i < sent.size(); ++i) sent[i] = i * 31 + bytes + p + round;
          co_await finish([&]() -> task<> {
            if (round == 1)
              co_await async_at(
                  p, [](int k) { g_counter += k; }, 1);
            const std::vector<std::uint64_t> back = co_await at(
                p,
                [](std::vector<std::uint64_t> v) {
                  for (std::uint64_t& x : v) x = ~x;
                  return v;
                },
                sent);
            bool same = back.size() == sent.size();
            for (std::size_t i = 0; same && i < sent.size(); ++i) same = back[i] == ~sent[i];
            if (!same)
              throw std::runtime_error("wrong value of " + std::to_string(bytes) +
                                       " bytes from place " + std::to_string(p));
          });
        }
      }
    }
    co_return "ok";
  });
  EXPECT_EQ(outcome, "ok");
  EXPECT_EQ(g_rt->run([]() -> task<long> { co_return co_await collect_counters(); }),
            5 * static_cast<long>(g_rt->places()));
}

TEST(places, an_argument_that_fails_to_serialize_throws_at_the_caller_and_sends_nothing) {
  const std::string outcome = g_rt->run([]() -> task<std::string> {
    const place_id last = apgas::places() - 1;
    std::string seen;
    // The finish must still complete: the failed async_at was never counted as sent.
    co_await finish([&seen, last]() -> task<> {
      try {
        co_await async_at(
            last, [](refuses_to_travel) {}, refuses_to_travel{});
        seen += "async_at sent;";
      } catch (const std::runtime_error& e) {
        seen += std::string("async_at: ") + e.what() + ";";
      }
      co_await async_at(
          last, [](int k) { g_counter += k; }, 1);
    });
    try {
      co_await at(
          last, [](refuses_to_travel r) { return r.value; }, refuses_to_travel{});
      seen += "at sent;";
    } catch (const std::runtime_error& e) {
      seen += std::string("at: ") + e.what() + ";";
    }
    seen += "counter " + std::to_string(co_await collect_counters());
    co_return seen;
  });
  EXPECT_EQ(outcome, "async_at: refuses to travel;at: refuses to travel;counter 1");
}

TEST(places, exceptions_of_remote_asyncs_reach_the_governing_finish) {
  const std::size_t caught = g_rt->run([]() -> task<std::size_t> {
    try {
      co_await finish([]() -> task<> {
        for (place_id p = 0; p < apgas::places(); ++p)
          co_await async_at(p, [] { throw std::runtime_error("remote failure"); });
      });
    } catch (const apgas::multiple_exceptions& e) {
      co_return e.exceptions().size();
    }
    co_return 0;
  });
  EXPECT_EQ(caught, g_rt->places());
}

TEST(places, plain_remote_asyncs_that_arrive_together_fail_one_by_one) {
  // Plain-function asyncs that arrive in one network message run in batches at their place:
  // each is still an activity of its own. Every 10th throws; the others all run, and the
  // finish gathers exactly one exception per failure, after all of them ended.
  constexpr int k_per_place = 1000;
  const auto [failures, total] = g_rt->run([]() -> task<std::pair<std::size_t, long>> {
    std::size_t failures = 0;
    try {
      co_await finish([]() -> task<> {
        for (place_id p = 0; p < apgas::places(); ++p)
          for (int i = 0; i < k_per_place; ++i)
            co_await async_at(
                p,
                [](int k) {
                  if (k % 10 == 0) throw std::runtime_error("every tenth fails");
                  g_counter += 1;
                },
                i);
      });
    } catch (const apgas::multiple_exceptions& e) {
      failures = e.exceptions().size();
    }
    co_return std::pair(failures, co_await collect_counters());
  });
  const long places = g_rt->places();
  EXPECT_EQ(failures, static_cast<std::size_t>(places * k_per_place / 10));
  EXPECT_EQ(total, places * k_per_place * 9 / 10);
}

/// Times each update of a_stream_of_plain_asyncs_runs_each_exactly_once_around_failures ran at
/// this place, by index.
constexpr std::uint32_t k_stream_updates = 20000;
std::atomic<std::uint32_t> g_seen[k_stream_updates];

TEST(places, a_stream_of_plain_asyncs_runs_each_exactly_once_around_failures) {
  // Place 0 sends every place a stream of plain asyncs with bitwise arguments (they travel
  // merged, and arrive as runs run in slices), two functions interleaved in stretches so that
  // runs of each alternate, every 997th failing. Each of the others must run exactly once, and
  // the finish must gather exactly one exception per failure.
  const auto [failures, wrong] = g_rt->run([]() -> task<std::pair<std::size_t, std::uint32_t>> {
    // Cleared inside the run, at every place: a place may still be leaving the previous test
    // when place 0's first updates reach it.
    co_await apgas::for_each_place([] {
      for (auto& s : g_seen) s.store(0);
    });
    std::size_t failures = 0;
    try {
      co_await finish([]() -> task<> {
        for (std::uint32_t i = 0; i < k_stream_updates; ++i)
          for (place_id p = 0; p < apgas::places(); ++p) {
            if ((i / 100) % 2 == 0)
              co_await async_at(
                  p,
                  [](std::uint32_t k) {
                    if (k % 997 == 0) throw std::runtime_error("every 997th fails");
                    g_seen[k].fetch_add(1);
                  },
                  i);
            else
              co_await async_at(
                  p,
                  [](std::uint32_t k, std::uint64_t twice) {
                    if (twice != 2 * std::uint64_t{k}) throw std::logic_error("argument mixed up");
                    if (k % 997 == 0) throw std::runtime_error("every 997th fails");
                    g_seen[k].fetch_add(1);
                  },
                  i, 2 * std::uint64_t{i});
          }
      });
    } catch (const apgas::multiple_exceptions& e) {
      failures = e.exceptions().size();
      for (const auto& x : e.exceptions()) {
        try {
          std::rethrow_exception(x);
        } catch (const std::runtime_error&) {
        } catch (...) {
          failures += 1000000; // not one of ours: counted apart
        }
      }
    }
    std::uint32_t wrong = 0; // indices not run exactly once, over all places
    for (place_id p = 0; p < apgas::places(); ++p)
      wrong += co_await at(p, [] {
        std::uint32_t bad = 0;
        for (std::uint32_t k = 0; k < k_stream_updates; ++k)
          bad += g_seen[k].load() != (k % 997 == 0 ? 0U : 1U);
        return bad;
      });
    co_return std::pair(failures, wrong);
  });
  const std::size_t places = g_rt->places();
  const std::size_t failing = (k_stream_updates + 996) / 997; // k = 0, 997, ...
  EXPECT_EQ(failures, places * failing);
  EXPECT_EQ(wrong, 0u);
}

TEST(places, an_argument_that_cannot_be_read_at_the_destination_fails_that_activity_only) {
  // Plain functions (read when their batch runs) and coroutines (read when they arrive) alike.
  const auto [failures, total] = g_rt->run([]() -> task<std::pair<std::size_t, long>> {
    std::size_t failures = 0;
    try {
      co_await finish([]() -> task<> {
        for (place_id p = 0; p < apgas::places(); ++p)
          for (int i = -2; i < 3; ++i) {
            co_await async_at(
                p, [](unreadable_if_negative) { g_counter += 1; }, unreadable_if_negative{i});
            co_await async_at(
                p,
                [](unreadable_if_negative) -> task<> {
                  g_counter += 1;
                  co_return;
                },
                unreadable_if_negative{i});
          }
      });
    } catch (const apgas::multiple_exceptions& e) {
      failures = e.exceptions().size();
    }
    co_return std::pair(failures, co_await collect_counters());
  });
  EXPECT_EQ(failures, 4u * g_rt->places());
  EXPECT_EQ(total, 6L * g_rt->places());
}

std::atomic<int> g_started{0};

TEST(places, plain_asyncs_that_arrive_together_still_spread_over_the_workers) {
  // Two plain asyncs sent back to back (one network message): each waits until the other has
  // started, so they pass only if two workers of the place run them at once, not one batch.
  if (g_rt->places() < 2 || g_rt->threads() < 2) GTEST_SKIP() << "needs two places of 2 workers";
  const std::string outcome = g_rt->run([]() -> task<std::string> {
    g_started = 0;
    std::string outcome = "both met";
    try {
      co_await finish([]() -> task<> {
        for (int i = 0; i < 2; ++i)
          co_await async_at(1, [] {
            ++g_started;
            // A deadline, not a sleep: the test fails (instead of hanging) if they never meet.
            const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
            while (g_started.load() < 2)
              if (std::chrono::steady_clock::now() > deadline)
                throw std::runtime_error("ran one after the other");
          });
      });
    } catch (const apgas::multiple_exceptions& e) {
      outcome = e.what();
    }
    co_return outcome;
  });
  EXPECT_EQ(outcome, "both met");
}

std::atomic<int> g_flag{0};

TEST(places, a_plain_async_staged_by_a_busy_worker_still_leaves) {
  // A worker stages a plain async with an argument (to its own place: the path is the same)
  // and then stays busy in the same activity until the async has run. Only another worker's
  // poll can send it meanwhile (once it has waited --flush-us): the test hangs without that,
  // and fails at its deadline instead.
  if (g_rt->threads() < 2) GTEST_SKIP() << "needs 2 workers";
  const std::string outcome = g_rt->run([]() -> task<std::string> {
    g_flag = 0;
    std::string outcome = "ran";
    try {
      co_await finish([]() -> task<> {
        co_await async_at(
            apgas::here(), [](int v) { g_flag = v; }, 1);
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
        while (g_flag.load() == 0)
          if (std::chrono::steady_clock::now() > deadline)
            throw std::runtime_error("the staged async never left");
      });
    } catch (const apgas::multiple_exceptions& e) {
      outcome = e.what();
    }
    co_return outcome;
  });
  EXPECT_EQ(outcome, "ran");
}

/// One run: a finish of `k` small asyncs from place 0 to place 1; returns how many ran.
long small_asyncs_to_place_1(long k) {
  return g_rt->run([k]() -> task<long> {
    co_await finish([k]() -> task<> {
      for (long i = 0; i < k; ++i) co_await async_at(1, [] { g_counter += 1; });
    });
    co_return co_await collect_counters();
  });
}

TEST(places, many_small_remote_asyncs_are_coalesced) {
  if (g_rt->places() < 2) GTEST_SKIP() << "needs two places";
  constexpr long k_asyncs = 100000;
  const auto before = g_rt->mpi_messages_sent();
  const long total = small_asyncs_to_place_1(k_asyncs);
  EXPECT_EQ(total, k_asyncs);
  const auto sent = g_rt->mpi_messages_sent() - before;
  if (g_rt->here() == 0) {
    EXPECT_LT(sent, k_asyncs / 20) << sent << " MPI messages";
  }
}

/// Finish reports sent so far by all places, read at each place (inside a run: a place's
/// main thread may enter a run after place 0 has gone on to the next one, whose reports its
/// workers already sent).
task<std::uint64_t> reports_everywhere() {
  std::uint64_t sum = 0;
  for (place_id p = 0; p < apgas::places(); ++p)
    sum += co_await at(p, [] { return apgas::local_message_counts().finish_reports_sent; });
  co_return sum;
}

TEST(places, an_at_of_a_plain_function_sends_no_finish_control_message) {
  // It is a remote procedure call: its place runs it in its message handler, as no activity
  // of any finish, so the caller's finish stays local (no report, no cleanup).
  if (g_rt->places() < 2) GTEST_SKIP() << "needs two places";
  const auto [sum, reports] = g_rt->run([]() -> task<std::pair<int, std::uint64_t>> {
    const std::uint64_t before = co_await reports_everywhere();
    int total = 0;
    co_await finish([&total]() -> task<> {
      for (int i = 0; i < 100; ++i)
        total += co_await at(
            1, [](int k) { return k; }, 1);
    });
    co_return std::pair{total, co_await reports_everywhere() - before};
  });
  EXPECT_EQ(sum, 100);
  EXPECT_EQ(reports, 0U);
}

std::atomic<bool> g_holding{false};
std::atomic<bool> g_strand_ended{false};
std::atomic<std::thread::id> g_holder{};

TEST(places, a_plain_at_never_runs_inside_another_activity_on_its_thread) {
  // Place 1 runs a long strand that spawns (a busy worker polls the network from inside its
  // pushes) while place 0 sends `at`s there. Their bodies run in the message handler, but not
  // in one run by a worker inside a strand: the body could wait for what that strand holds,
  // on the same thread. Here the body waits while the strand "holds" on the body's own thread;
  // inside the strand that would never end, so it gives up after a deadline and fails.
  if (g_rt->places() < 2) GTEST_SKIP() << "needs two places";
  const std::string outcome = g_rt->run([]() -> task<std::string> {
    g_holding = false;
    g_strand_ended = false;
    std::string outcome = "ok";
    try {
      co_await finish([]() -> task<> {
        co_await async_at(1, []() -> task<> {
          g_holder = std::this_thread::get_id();
          g_holding = true;
          for (int i = 0; i < 200000; ++i) {
            co_await apgas::async([] {});
            g_holder = std::this_thread::get_id(); // the strand may have moved
          }
          g_holding = false;
          g_strand_ended = true;
        });
        for (bool ended = false; !ended;)
          ended = co_await at(1, [] {
            const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
            while (g_holding.load() && g_holder.load() == std::this_thread::get_id())
              if (std::chrono::steady_clock::now() > deadline)
                throw std::runtime_error("ran inside another activity's strand");
            return g_strand_ended.load();
          });
      });
    } catch (const std::exception& e) {
      outcome = e.what();
    }
    co_return outcome;
  });
  EXPECT_EQ(outcome, "ok");
}

// A quiet place wakes up to poll less and less often: 1 ms at most between polls for the
// first 16 ms, then at most 1/16 of the quiet so far, up to 8 ms. Between two runs every
// place is quiet: each checks its own watcher (no message, which would end the quiet). The
// old design never went past 1 ms; the deadline ends the wait then.
TEST(places, a_quiet_place_wakes_up_less_and_less) {
  const auto& sched = apgas::local_runtime::current()->sched();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (sched.watcher_park_limit() < std::chrono::milliseconds(8) &&
         std::chrono::steady_clock::now() < deadline)
    std::this_thread::yield();
  EXPECT_EQ(sched.watcher_park_limit(), std::chrono::milliseconds(8));
  g_rt->run([]() -> task<> { co_return; }); // the places go on together
}

TEST(places, coalescing_switches_off_and_on_between_runs) {
  // runtime::set_coalescing at every place (each runs this test body): off, every remote async
  // is an MPI message of its own; on again, they share messages. All run in both cases.
  if (g_rt->places() < 2) GTEST_SKIP() << "needs two places";
  constexpr long k_asyncs = 1000;
  g_rt->set_coalescing(false);
  const auto before_off = g_rt->mpi_messages_sent();
  const long total_off = small_asyncs_to_place_1(k_asyncs);
  const auto sent_off = g_rt->mpi_messages_sent() - before_off;
  g_rt->set_coalescing(true);
  const auto before_on = g_rt->mpi_messages_sent();
  const long total_on = small_asyncs_to_place_1(k_asyncs);
  const auto sent_on = g_rt->mpi_messages_sent() - before_on;
  g_rt->set_coalescing(g_rt->opts().coalesce);
  EXPECT_EQ(total_off, k_asyncs);
  EXPECT_EQ(total_on, k_asyncs);
  if (g_rt->here() == 0 && g_rt->opts().coalesce) {
    EXPECT_GE(sent_off, static_cast<std::uint64_t>(k_asyncs)) << "coalescing off";
    EXPECT_LT(sent_on, static_cast<std::uint64_t>(k_asyncs / 10)) << "coalescing on again";
  }
}

/// What a_proxy_that_goes_quiet_again_and_again_reports_twice measures.
struct quiet_outcome {
  int sum = 0;
  int slow = 0;              ///< round trips long enough for a held report to leave unasked
  std::uint64_t reports = 0; ///< sent by place 1 for the finish
  std::uint64_t asks = 0;    ///< sent by place 0 for the finish
  template <class A>
  void serialize(A& a) {
    a& sum& slow& reports& asks;
  }
};

TEST(places, a_proxy_that_goes_quiet_again_and_again_reports_twice) {
  // 1000 `at`s in sequence, in one finish: place 1's part of the finish goes quiet after each
  // one. Its first report leaves at once; it holds later ones until the home asks, which it
  // does once, when the body (the loop) ends: two reports and one ask. A held report also
  // leaves unasked after --report-delay-us (a safeguard): the test counts the round trips at
  // least half that long and allows one more report for each, so that a loaded machine
  // loosens the bound instead of failing it. Reporting every quiet spell sends 1000.
  if (g_rt->places() < 2) GTEST_SKIP() << "needs two places";
  constexpr int k_rounds = 1000;
  const auto hold = std::chrono::microseconds(g_rt->opts().report_delay_us);
  const quiet_outcome out = g_rt->run([hold]() -> task<quiet_outcome> {
    using clock = std::chrono::steady_clock;
    // Place 1's report count, read at place 1 just before and just after the finish: place 1's
    // main thread may enter this run only after the finish (it serves messages meanwhile), so
    // counts read there around run() could miss its reports.
    constexpr auto reports_at_1 = []() {
      return apgas::local_message_counts().finish_reports_sent;
    };
    // A coroutine body: an activity of the finish at place 1 (a plain function would be a
    // remote procedure call, no activity of any finish, and place 1 would report nothing).
    constexpr auto echo = [](int k) -> task<int> { co_return k; };
    quiet_outcome result;
    const std::uint64_t before = co_await at(1, reports_at_1);
    const std::uint64_t asks_before = g_rt->asks_sent();
    co_await finish([&]() -> task<> {
      for (int i = 0; i < k_rounds; ++i) {
        const auto t0 = clock::now();
        result.sum += co_await at(1, echo, 1);
        if ((clock::now() - t0) * 2 >= hold) ++result.slow;
      }
    });
    // The finish ended once place 1's last report arrived, so place 1 counted it before this.
    result.reports = co_await at(1, reports_at_1) - before;
    result.asks = g_rt->asks_sent() - asks_before;
    co_return result;
  });
  EXPECT_EQ(out.sum, k_rounds);
  EXPECT_GE(out.reports, 1U);
  EXPECT_LE(out.asks, 1U);
  EXPECT_LE(out.reports, static_cast<std::uint64_t>(out.slow) + 2)
      << out.slow << " slow round trips";
  if (out.slow == 0) {
    EXPECT_EQ(out.reports, 2U);
    EXPECT_EQ(out.asks, 1U);
  }
}

/// What a_stream_from_the_home_costs_one_ask_and_at_most_two_reports_per_place measures.
struct stream_outcome {
  std::uint64_t reports = 0; ///< sent by the other places for the finish
  std::uint64_t expired = 0; ///< reports of theirs that left unasked (hold expired)
  std::uint64_t asks = 0;    ///< sent by place 0 for the finish
  long ran = 0;              ///< asyncs run
  template <class A>
  void serialize(A& a) {
    a& reports& expired& asks& ran;
  }
};

TEST(places, a_stream_from_the_home_costs_one_ask_and_at_most_two_reports_per_place) {
  // 20,000 plain asyncs from place 0, round-robin over the other places. Each place holds its
  // reports (its first too, once 256 came from the home) until the home asks, once, when the
  // loop ends: one report, or two if its first network message held fewer than 256, or three
  // when the ask overtakes the last buffer of asyncs (it comes down the tree through other
  // places while the buffer comes straight from the home: the place reports at the ask and again
  // once those have run). A held report also leaves unasked after --report-delay-us (10 s under
  // ctest): that means an ask was missing, or the machine stalled for that long.
  if (g_rt->places() < 2) GTEST_SKIP() << "needs two places";
  constexpr int k_asyncs = 20'000;
  const place_id others = g_rt->places() - 1;
  const stream_outcome out = g_rt->run([others]() -> task<stream_outcome> {
    const auto counts_elsewhere = []() -> task<std::pair<std::uint64_t, std::uint64_t>> {
      std::pair<std::uint64_t, std::uint64_t> sum;
      for (place_id p = 1; p < apgas::places(); ++p) {
        const auto [reports, expired] = co_await at(p, [] {
          // (not g_rt: a place's main may not have set it yet when this arrives)
          const apgas::message_counts c = apgas::local_message_counts();
          return std::pair{c.finish_reports_sent, c.finish_holds_expired};
        });
        sum.first += reports;
        sum.second += expired;
      }
      co_return sum;
    };
    (void)co_await collect_counters();
    const auto before = co_await counts_elsewhere();
    const std::uint64_t asks_before = g_rt->asks_sent();
    co_await finish([others]() -> task<> {
      for (int i = 0; i < k_asyncs; ++i)
        co_await async_at(1 + static_cast<place_id>(i) % others, [] { g_counter += 1; });
    });
    const auto after = co_await counts_elsewhere();
    co_return stream_outcome{after.first - before.first, after.second - before.second,
                             g_rt->asks_sent() - asks_before, co_await collect_counters()};
  });
  EXPECT_EQ(out.ran, k_asyncs);
  EXPECT_EQ(out.expired, 0U) << "held reports left unasked after --report-delay-us "
                             << g_rt->opts().report_delay_us << " us";
  EXPECT_EQ(out.asks, others);
  EXPECT_GE(out.reports, others);
  EXPECT_LE(out.reports, 3U * others);
}

// Random trees of async, async_at and finish across places, with exact counts.
std::uint64_t mix(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

long expected_nodes(std::uint64_t seed, int depth) {
  long n = 1;
  if (depth == 0) return n;
  const int children = static_cast<int>(mix(seed) % 4);
  for (int i = 0; i < children; ++i) n += expected_nodes(mix(seed + 1 + i), depth - 1);
  return n;
}

task<> tree_node(std::uint64_t seed, int depth) {
  g_counter += 1;
  if (depth == 0) co_return;
  const std::uint64_t r = mix(seed);
  const int children = static_cast<int>(r % 4);
  const bool wrap_in_finish = ((r >> 8) & 1) != 0;
  auto spawn_all = [seed, depth, children, r]() -> task<> {
    for (int i = 0; i < children; ++i) {
      const std::uint64_t child = mix(seed + 1 + i);
      if (((r >> (16 + i)) & 1) != 0) {
        const auto p = static_cast<place_id>((r >> 24) % apgas::places());
        co_await async_at(
            p, [](std::uint64_t s, int d) { return tree_node(s, d); }, child, depth - 1);
      } else {
        co_await apgas::async(tree_node(child, depth - 1));
      }
    }
  };
  if (wrap_in_finish) co_await finish(spawn_all);
  else co_await spawn_all();
}

TEST(places, random_trees_across_places_count_every_node_once) {
  for (std::uint64_t seed = 1; seed <= 12; ++seed) {
    const long total = g_rt->run([seed]() -> task<long> {
      co_await finish([seed]() -> task<> { co_await tree_node(seed, 9); });
      co_return co_await collect_counters();
    });
    ASSERT_EQ(total, expected_nodes(seed, 9)) << "seed " << seed;
  }
}

TEST(places, run_waits_for_remote_work_escaping_the_root) {
  const long total = g_rt->run([]() -> task<long> {
    co_await apgas::finish([]() -> task<> {
      co_await async_at(apgas::places() - 1, []() -> task<> {
        for (int i = 0; i < 1000; ++i) co_await apgas::async([] { g_counter += 1; });
      });
    });
    co_return co_await collect_counters();
  });
  EXPECT_EQ(total, 1000);
  // Escaping the root itself: run() returns only when they are done.
  g_rt->run([]() -> task<> {
    for (place_id p = 0; p < apgas::places(); ++p) co_await async_at(p, [] { g_counter += 1; });
  });
  EXPECT_EQ(g_rt->run(collect_counters()), static_cast<long>(g_rt->places()));
}

TEST(places, global_refs_and_place_local_handles_cross_places) {
  const long sum = g_rt->run([]() -> task<long> {
    auto handle = co_await apgas::place_local<long>::make([](place_id p) { return 100L + p; });
    long total = 0;
    for (place_id p = 0; p < apgas::places(); ++p)
      total += co_await at(
          p, [](apgas::place_local<long> h) { return h.get(); }, handle);
    long home_value = 7;
    apgas::global_ref<long> ref(home_value);
    const place_id last = apgas::places() - 1;
    const place_id home = co_await at(
        last, [](apgas::global_ref<long> r) { return r.home(); }, ref);
    co_await handle.destroy();
    co_return total + (home == 0 ? 0 : 1000000) + *ref;
  });
  const long n = g_rt->places();
  EXPECT_EQ(sum, 100 * n + n * (n - 1) / 2 + 7);
}

TEST(places, spmd_finishes_need_no_cleanup_messages_and_refuse_broken_promises) {
  const auto cleanups_before = g_rt->cleanups_sent();
  const long total = g_rt->run([]() -> task<long> {
    co_await finish(apgas::finish_pattern::spmd, []() -> task<> {
      for (place_id p = 0; p < apgas::places(); ++p) {
        co_await async_at(p, []() -> task<> { // local asyncs inside are fine
          for (int i = 0; i < 10; ++i) co_await apgas::async([] { g_counter += 1; });
        });
      }
    });
    co_return co_await collect_counters();
  });
  EXPECT_EQ(total, 10L * g_rt->places());
  EXPECT_EQ(g_rt->cleanups_sent(), cleanups_before);
  const std::string refused = g_rt->run([]() -> task<std::string> {
    try {
      co_await finish(apgas::finish_pattern::spmd, []() -> task<> {
        co_await async_at(0, [] {});
        co_await async_at(0, [] {}); // a second activity at place 0 breaks the promise
      });
    } catch (const apgas::multiple_exceptions& e) { // the body failed: its finish says why
      co_return e.what();
    }
    co_return "accepted";
  });
  EXPECT_NE(refused.find("second activity"), std::string::npos) << refused;
}

// for_each_place is a broadcast under an SPMD finish, chosen by the runtime, up to
// --tree-arity + 1 places: every place runs f once (here a coroutine with local asyncs), and
// no cleanup message is sent. A broken promise (a remote activity governed by it) fails the
// call; exceptions come back. Beyond, the call spreads along a tree (its steps start remote
// activities themselves, so its finish is a general one, and the promise is not checked).
TEST(places, for_each_place_runs_f_once_everywhere_with_an_spmd_finish) {
  const bool flat = g_rt->places() <= g_rt->opts().tree_arity + 1;
  const auto cleanups_before = g_rt->cleanups_sent();
  const long total = g_rt->run([]() -> task<long> {
    co_await apgas::for_each_place(
        [](int k) -> task<> {
          for (int i = 0; i < k; ++i) co_await apgas::async([] { g_counter += 1; });
        },
        3);
    co_await apgas::for_each_place([] { g_counter += 100; }); // a plain function too
    // From another place: its SPMD finish lives there.
    co_await at(apgas::places() - 1, []() -> task<int> {
      co_await apgas::for_each_place([] { g_counter += 1000; });
      co_return 0;
    });
    co_return co_await collect_counters();
  });
  EXPECT_EQ(total, 1103L * g_rt->places());
  if (flat) {
    EXPECT_EQ(g_rt->cleanups_sent(), cleanups_before) << "for_each_place sent cleanup messages";
  }

  const std::string outcome = g_rt->run([]() -> task<std::string> {
    std::string seen;
    try {
      co_await apgas::for_each_place([] {
        if (apgas::here() == apgas::places() - 1) throw std::runtime_error("boom at the last");
      });
      seen = "no exception;";
    } catch (const apgas::multiple_exceptions& e) {
      seen = std::string(e.what()).find("boom at the last") != std::string::npos
                 ? "caught;"
                 : "wrong exception: " + std::string(e.what()) + ";";
    }
    try {
      co_await apgas::for_each_place([]() -> task<> { // hops further: not SPMD any more
        co_await async_at(0, [] {});
      });
      seen += " broken promise accepted";
    } catch (const apgas::multiple_exceptions& e) {
      seen += std::string(e.what()).find("spmd") != std::string::npos ? " refused" : e.what();
    }
    try { // the same with an argument: the inline send path of a proxy (and of the home)
      co_await apgas::for_each_place([]() -> task<> {
        co_await async_at(
            0, [](int) {}, 7);
      });
      seen += " broken promise with an argument accepted";
    } catch (const apgas::multiple_exceptions& e) {
      seen += std::string(e.what()).find("spmd") != std::string::npos ? " refused" : e.what();
    }
    co_return seen;
  });
  EXPECT_EQ(outcome, flat ? "caught; refused refused"
                          : "caught; broken promise accepted broken promise with an argument "
                            "accepted");
}

// A run that fails at the last place: every place gets the finish's multiple_exceptions, its
// failure named with the last place (where it was) and of its own type, once, however many
// finishes it passed through.
TEST(places, a_failed_run_names_the_place_where_it_failed_at_every_place) {
  const place_id last = g_rt->places() - 1;
  try {
    g_rt->run([]() -> task<> {
      co_await finish([]() -> task<> {
        co_await apgas::async([]() -> task<> {
          co_await finish([]() -> task<> {
            co_await async_at(apgas::places() - 1, [] { throw std::runtime_error("far failure"); });
          });
        });
      });
    });
    ADD_FAILURE() << "the run did not fail";
  } catch (const apgas::multiple_exceptions& e) {
    // (At one place too: async_at(0) from place 0 takes the same path as to another place.)
    EXPECT_EQ(std::string(e.what()), "1 activity failed: at place " + std::to_string(last) +
                                         ": std::runtime_error: far failure");
    const auto failures = e.flattened();
    ASSERT_EQ(failures.size(), 1U);
    ASSERT_NE(apgas::origin_of(failures[0]), nullptr);
    EXPECT_EQ(apgas::origin_of(failures[0])->place(), last);
    EXPECT_THROW(std::rethrow_exception(failures[0]), std::runtime_error);
  }
  // Two failures at place 0 itself: every place hears of both.
  try {
    g_rt->run([]() -> task<> {
      co_await finish([]() -> task<> {
        co_await async_at(0, [] { throw std::logic_error("first"); });
        co_await async_at(0, [] { throw std::logic_error("second"); });
      });
    });
    ADD_FAILURE() << "the run did not fail";
  } catch (const apgas::multiple_exceptions& e) {
    EXPECT_EQ(std::string(e.what()).rfind("2 activities failed; first: at place 0: ", 0), 0U)
        << e.what();
    EXPECT_EQ(e.flattened().size(), 2U);
  }
}

// at_each_place gathers one value per place, in place order, with every request in flight at
// once; a failure at one place fails the call.
TEST(places, at_each_place_gathers_a_value_from_every_place_in_order) {
  const auto values = g_rt->run([]() -> task<std::vector<std::string>> {
    co_return co_await apgas::at_each_place(
        [](const std::string& prefix) { return prefix + std::to_string(apgas::here()); },
        std::string("place "));
  });
  ASSERT_EQ(values.size(), g_rt->places());
  for (place_id p = 0; p < g_rt->places(); ++p) EXPECT_EQ(values[p], "place " + std::to_string(p));
  const bool failed = g_rt->run([]() -> task<bool> {
    try {
      (void)co_await apgas::at_each_place([]() -> int {
        if (apgas::here() == 0) throw std::runtime_error("no value here");
        return 1;
      });
    } catch (const apgas::multiple_exceptions& e) {
      co_return std::string(e.what()).find("no value here") != std::string::npos;
    }
    co_return false;
  });
  EXPECT_TRUE(failed);
}

} // namespace

int main(int argc, char** argv) { return apgas_test::run_places_tests(argc, argv, g_rt); }
