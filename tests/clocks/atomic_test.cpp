// atomic and when at one place: exact counts under contention, a bounded buffer with more
// activities than workers, conditions made true by other whens' bodies, exceptions, and the
// state dump's list of suspended whens. Every test runs under both policies and on 1, 2 and
// 4 workers (4 oversubscribes this 2-core machine on purpose).
#include <apgas/apgas.hpp>
#include <apgas/detail/message_dispatcher.hpp>

#include "../stderr_pipe.hpp"
#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

namespace {

using apgas::async;
using apgas::atomic;
using apgas::finish;
using apgas::task;
using apgas::when;
using apgas::detail::g_when_queue;

#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
constexpr int k_sanitizer_slowdown = 4; // smaller sizes, the same code paths
#else
constexpr int k_sanitizer_slowdown = 1;
#endif

using config = std::tuple<apgas::policy, unsigned>;

apgas::options make_options(const config& c) {
  apgas::options o;
  o.default_policy = std::get<0>(c);
  o.threads = std::get<1>(c);
  o.pin_workers = false; // one runtime after another in this process
  return o;
}

class atomic_test : public testing::TestWithParam<config> {
protected:
  apgas::runtime& rt() { return m_rt; }
  unsigned threads() const { return std::get<1>(GetParam()); }

private:
  apgas::runtime m_rt{make_options(GetParam())};
};

/// Waits, in an activity, until `n` whens are suspended. Callers start those whens under a
/// work-first finish: each ran up to its suspension before its parent went on, or the
/// parent's continuation was stolen by another worker, so this spin never holds the only
/// worker that could run them.
void wait_until_suspended(std::size_t n) {
  while (g_when_queue.waiting() != n) std::this_thread::yield();
}

// ---- atomic ----------------------------------------------------------------------------

task<> add_many(long& counter, int blocks) {
  for (int i = 0; i < blocks; ++i) co_await atomic([&] { ++counter; });
}

TEST_P(atomic_test, atomic_blocks_from_many_activities_give_an_exact_count) {
  constexpr int k_activities = 200;
  const int blocks = 500 / k_sanitizer_slowdown;
  long counter = 0;
  rt().run([&]() -> task<> {
    co_await finish([&]() -> task<> {
      for (int a = 0; a < k_activities; ++a) co_await async(add_many(counter, blocks));
    });
  });
  EXPECT_EQ(counter, long{k_activities} * blocks);
  EXPECT_FALSE(g_when_queue.locked());
}

TEST_P(atomic_test, atomic_and_when_give_their_bodys_value_back) {
  const auto [a, b] = rt().run([]() -> task<std::tuple<int, std::string>> {
    int x = 41;
    const int a = co_await atomic([&] { return ++x; });
    std::string b = co_await when([&] { return x == 42; }, [] { return std::string("ready"); });
    co_return std::tuple{a, b};
  });
  EXPECT_EQ(a, 42);
  EXPECT_EQ(b, "ready");
}

// ---- when ------------------------------------------------------------------------------

/// A ring of k_capacity slots; touched only inside when conditions and bodies.
struct bounded_buffer {
  static constexpr std::size_t k_capacity = 4;
  std::array<int, k_capacity> slots{};
  std::size_t head = 0;
  std::size_t count = 0;
  void put(int v) {
    slots[(head + count) % k_capacity] = v;
    ++count;
  }
  int take() {
    const int v = slots[head];
    head = (head + 1) % k_capacity;
    --count;
    return v;
  }
};

task<> produce(bounded_buffer& buf, int first, int step, int end) {
  for (int v = first; v < end; v += step)
    co_await when([&] { return buf.count < bounded_buffer::k_capacity; }, [&] { buf.put(v); });
}

task<> consume(bounded_buffer& buf, int items, std::vector<std::atomic<int>>& received) {
  for (int i = 0; i < items; ++i) {
    const int v = co_await when([&] { return buf.count > 0; }, [&] { return buf.take(); });
    // relaxed: a tally read after the finish, which orders every activity's writes.
    received[static_cast<std::size_t>(v)].fetch_add(1, std::memory_order_relaxed);
  }
}

TEST_P(atomic_test, a_bounded_buffer_delivers_every_item_exactly_once) {
  constexpr int k_producers = 16;
  constexpr int k_consumers = 16;
  const int items = 100000 / k_sanitizer_slowdown / 16 * 16;
  bounded_buffer buf;
  std::vector<std::atomic<int>> received(static_cast<std::size_t>(items));
  rt().run([&]() -> task<> {
    co_await finish([&]() -> task<> {
      for (int c = 0; c < k_consumers; ++c)
        co_await async(consume(buf, items / k_consumers, received));
      for (int p = 0; p < k_producers; ++p) co_await async(produce(buf, p, k_producers, items));
    });
  });
  int wrong = 0;
  for (int v = 0; v < items; ++v)
    if (received[static_cast<std::size_t>(v)].load() != 1 && ++wrong <= 5)
      ADD_FAILURE() << "item " << v << " arrived " << received[static_cast<std::size_t>(v)]
                    << " times";
  EXPECT_EQ(wrong, 0);
  EXPECT_EQ(buf.count, 0U);
  EXPECT_EQ(g_when_queue.waiting(), 0U);
}

task<> step(int& stage, int from, std::vector<int>& order) {
  co_await when([&] { return stage == from; },
                [&] {
                  order.push_back(from);
                  stage = from + 1;
                });
}

// The last when's condition becomes true only through the body of the one before it, which
// itself waits for the atomic block: all three complete when that block ends.
TEST_P(atomic_test, a_when_whose_condition_only_another_whens_body_makes_true) {
  int stage = 0;
  std::vector<int> order;
  rt().run([&]() -> task<> {
    co_await finish(apgas::policy::work_first, [&]() -> task<> {
      // Queued in the order that makes one round of tests insufficient.
      co_await async(step(stage, 3, order));
      co_await async(step(stage, 2, order));
      co_await async(step(stage, 1, order));
      wait_until_suspended(3);
      co_await atomic([&] { stage = 1; });
    });
  });
  EXPECT_EQ(stage, 4);
  EXPECT_EQ(order, (std::vector<int>{1, 2, 3}));
}

// A when whose condition holds at once runs its body without suspending, and the end of that
// body re-tests the suspended ones.
TEST_P(atomic_test, the_body_of_a_when_that_did_not_wait_wakes_the_suspended_ones) {
  int stage = 0;
  std::vector<int> order;
  rt().run([&]() -> task<> {
    co_await finish(apgas::policy::work_first, [&]() -> task<> {
      co_await async(step(stage, 1, order));
      wait_until_suspended(1);
      co_await step(stage, 0, order); // stage is 0: runs at once
    });
  });
  EXPECT_EQ(stage, 2);
  EXPECT_EQ(order, (std::vector<int>{0, 1}));
}

// ---- exceptions ------------------------------------------------------------------------

struct failure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

TEST_P(atomic_test, exceptions_of_bodies_and_conditions_reach_the_finish_and_free_the_lock) {
  bool go = false;
  int ran = 0;
  std::size_t caught = 0;
  rt().run([&]() -> task<> {
    try {
      co_await finish(apgas::policy::work_first, [&]() -> task<> {
        co_await async(
            [&]() -> task<> { co_await atomic([]() -> int { throw failure("atomic"); }); });
        co_await async([&]() -> task<> {
          co_await when([] { return true; }, [] { throw failure("body, at once"); });
        });
        co_await async([&]() -> task<> {
          co_await when([]() -> bool { throw failure("condition, at once"); }, [] {});
        });
        // These two wait, and fail in the block that ends with `go` set, on this worker.
        co_await async([&]() -> task<> {
          co_await when([&] { return go; }, [] { throw failure("body, later"); });
        });
        co_await async([&]() -> task<> {
          co_await when([&]() -> bool { return go ? throw failure("condition, later") : false; },
                        [] {});
        });
        co_await async([&]() -> task<> { co_await when([&] { return go; }, [&] { ++ran; }); });
        wait_until_suspended(3);
        co_await atomic([&] { go = true; });
      });
    } catch (const apgas::multiple_exceptions& e) {
      caught = e.exceptions().size();
      for (const auto& error : e.exceptions()) {
        try {
          std::rethrow_exception(error);
        } catch (const failure&) {
        } catch (...) {
          ADD_FAILURE() << "an exception of another type";
        }
      }
    }
    // The lock is free: blocks and whens still work.
    co_await atomic([&] { ++ran; });
    co_await when([&] { return ran == 2; }, [&] { ++ran; });
  });
  EXPECT_EQ(caught, 5U);
  EXPECT_EQ(ran, 3);
  EXPECT_FALSE(g_when_queue.locked());
  EXPECT_EQ(g_when_queue.waiting(), 0U);
}

// ---- the state dump ----------------------------------------------------------------------

constexpr int k_gate_line = __LINE__ + 2; // the line of the when below
task<> wait_for_gate(const bool& go) {
  co_await when([&] { return go; }, [] {});
}

TEST_P(atomic_test, the_state_dump_lists_suspended_whens_with_their_call_site) {
  bool go = false;
  std::string dump;
  std::string after;
  rt().run([&]() -> task<> {
    co_await finish(apgas::policy::work_first, [&]() -> task<> {
      for (int i = 0; i < 2; ++i) co_await async(wait_for_gate(go));
      wait_until_suspended(2);
      dump = apgas::detail::message_dispatcher::current().describe_state();
      co_await atomic([&] { go = true; });
    });
    after = apgas::detail::message_dispatcher::current().describe_state();
  });
  EXPECT_NE(dump.find("suspended whens:\n    2 suspended, at 1 call site(s):\n"), std::string::npos)
      << dump;
  EXPECT_NE(
      dump.find("    2 at " + std::string(__FILE__) + ":" + std::to_string(k_gate_line) + " in "),
      std::string::npos)
      << dump;
  EXPECT_NE(after.find("suspended whens: none"), std::string::npos) << after;
}

TEST_P(atomic_test, sigusr1_prints_the_state_of_a_place_whose_workers_all_wait) {
  // A one-place run hung in a `when`: every worker parks without a watcher (there is no
  // network to poll). SIGUSR1 still gets the state printed, with the when's call site.
  bool go = false;
  std::string printed;
  bool dumped = false;
  std::thread helper([&] {
    while (g_when_queue.waiting() != 1 || rt().parked_workers() != threads())
      std::this_thread::yield();
    {
      apgas_test::stderr_pipe err;
      const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(30);
      while (!dumped && std::chrono::steady_clock::now() < give_up) {
        ::raise(SIGUSR1);
        for (int i = 0; i < 100 && !dumped; ++i) { // a worker wakes, polls and prints
          std::this_thread::sleep_for(std::chrono::milliseconds(1));
          err.read_into(printed);
          dumped = printed.find("suspended whens:") != std::string::npos &&
                   printed.find("\n", printed.find("suspended whens:") + 17) != std::string::npos;
        }
      }
    }
    // An atomic block from this thread (not an activity) releases the when.
    g_when_queue.begin();
    go = true;
    g_when_queue.end();
  });
  rt().run([&]() -> task<> { co_await wait_for_gate(go); });
  helper.join();
  EXPECT_TRUE(dumped) << printed;
  EXPECT_NE(printed.find("apgas: place 0: state"), std::string::npos) << printed;
  EXPECT_NE(printed.find(std::string(__FILE__) + ":" + std::to_string(k_gate_line)),
            std::string::npos)
      << printed;
}

INSTANTIATE_TEST_SUITE_P(policies, atomic_test,
                         testing::Combine(testing::Values(apgas::policy::work_first,
                                                          apgas::policy::help_first),
                                          testing::Values(1U, 2U, 4U)),
                         [](const testing::TestParamInfo<config>& info) {
                           const auto p = std::get<0>(info.param);
                           return std::string(p == apgas::policy::work_first ? "work_first"
                                                                             : "help_first") +
                                  "_" + std::to_string(std::get<1>(info.param)) + "_workers";
                         });

} // namespace
