// atomic and when across places, run by ctest under mpiexec -n 1, 2 and 4: every place has its
// own lock and its own queue of whens, and activities that arrive from other places (async_at,
// at) take part in them like local ones. Every place runs the same tests in the same order.
#include <apgas/apgas.hpp>

#include "../places_test_main.hpp"
#include <gtest/gtest.h>

#include <array>
#include <cstddef>
#include <utility>
#include <vector>

namespace {

using apgas::async;
using apgas::async_at;
using apgas::at;
using apgas::atomic;
using apgas::finish;
using apgas::place_id;
using apgas::task;
using apgas::when;

apgas::runtime* g_rt = nullptr;

// Per place (per process), touched only inside atomic blocks and whens.
long g_count = 0;
bool g_open = false;

TEST(atomic_places, remote_activities_do_atomic_blocks_under_their_places_lock) {
  constexpr long k_per_place = 300;
  const std::vector<long> counts = g_rt->run([]() -> task<std::vector<long>> {
    co_await finish([]() -> task<> {
      for (long k = 0; k < k_per_place; ++k)
        for (place_id p = 0; p < apgas::places(); ++p)
          co_await async_at(p, []() -> task<> { co_await atomic([] { ++g_count; }); });
    });
    co_return co_await apgas::at_each_place([]() -> task<long> {
      co_return co_await atomic([] { return std::exchange(g_count, 0); });
    });
  });
  ASSERT_EQ(counts.size(), g_rt->places());
  for (place_id p = 0; p < g_rt->places(); ++p) EXPECT_EQ(counts[p], k_per_place) << "place " << p;
}

/// This place's suspended whens and completed when bodies.
task<std::vector<long>> waiting_and_done() {
  const auto waiting = static_cast<long>(apgas::detail::g_when_queue.waiting()); // takes the lock
  const long done = co_await atomic([] { return g_count; });
  co_return std::vector<long>{waiting, done};
}

// Whens at every place wait for their place's gate. Opening place 0's gate (an atomic block
// sent there) completes place 0's whens and leaves the others suspended.
TEST(atomic_places, a_remote_atomic_block_releases_the_whens_of_its_place_only) {
  constexpr long k_waiters = 8;
  const std::vector<long> seen = g_rt->run([]() -> task<std::vector<long>> {
    std::vector<long> seen; // per place: suspended, done; after place 0's gate opened
    co_await finish([&]() -> task<> {
      for (place_id p = 0; p < apgas::places(); ++p)
        for (long w = 0; w < k_waiters; ++w)
          co_await async_at(
              p, []() -> task<> { co_await when([] { return g_open; }, [] { ++g_count; }); });
      for (place_id p = 0; p < apgas::places(); ++p)
        while ((co_await at(p, [] { return waiting_and_done(); }))[0] != k_waiters) {
        }
      co_await finish([]() -> task<> {
        co_await async_at(0, []() -> task<> { co_await atomic([] { g_open = true; }); });
      });
      for (place_id p = 0; p < apgas::places(); ++p) {
        const std::vector<long> here = co_await at(p, [] { return waiting_and_done(); });
        seen.insert(seen.end(), here.begin(), here.end());
      }
      for (place_id p = 1; p < apgas::places(); ++p)
        co_await async_at(p, []() -> task<> { co_await atomic([] { g_open = true; }); });
    });
    const std::vector<long> totals = co_await apgas::at_each_place([]() -> task<long> {
      co_return co_await atomic([] {
        g_open = false;
        return std::exchange(g_count, 0);
      });
    });
    seen.insert(seen.end(), totals.begin(), totals.end());
    co_return seen;
  });
  ASSERT_EQ(seen.size(), 3 * g_rt->places());
  for (place_id p = 0; p < g_rt->places(); ++p)
    EXPECT_EQ(seen[2 * g_rt->places() + p], k_waiters) << "when bodies run at place " << p;
  EXPECT_EQ(seen[0], 0) << "whens still suspended at place 0";
  EXPECT_EQ(seen[1], k_waiters) << "when bodies run at place 0";
  for (place_id p = 1; p < g_rt->places(); ++p) {
    EXPECT_EQ(seen[2 * p], k_waiters) << "whens suspended at place " << p;
    EXPECT_EQ(seen[2 * p + 1], 0) << "when bodies run at place " << p;
  }
}

/// One bounded buffer per place.
struct bounded_buffer {
  static constexpr std::size_t k_capacity = 4;
  std::array<int, k_capacity> slots{};
  std::size_t head = 0;
  std::size_t count = 0;
};
bounded_buffer g_buffer;
std::vector<int> g_received; // per value, at the place whose buffer it went through

task<> put_here(int v) {
  co_await when([] { return g_buffer.count < bounded_buffer::k_capacity; },
                [v] {
                  g_buffer.slots[(g_buffer.head + g_buffer.count) % bounded_buffer::k_capacity] = v;
                  ++g_buffer.count;
                });
}

task<> consume_here(int items) {
  for (int i = 0; i < items; ++i) {
    co_await when([] { return g_buffer.count > 0; },
                  [] {
                    const int v = g_buffer.slots[g_buffer.head];
                    g_buffer.head = (g_buffer.head + 1) % bounded_buffer::k_capacity;
                    --g_buffer.count;
                    ++g_received[static_cast<std::size_t>(v)];
                  });
  }
}

// The producers of each place's buffer are at the next place: each item is an `at` whose
// body waits in a when at the buffer's place (a remote activity suspended there).
TEST(atomic_places, producers_at_one_place_fill_a_bounded_buffer_at_another) {
  constexpr int k_items = 2000; // per place
  constexpr int k_consumers = 4;
  constexpr int k_producers = 4;
  const std::vector<long> wrong = g_rt->run([]() -> task<std::vector<long>> {
    co_await apgas::for_each_place([] { g_received.assign(k_items, 0); });
    co_await finish([]() -> task<> {
      for (place_id p = 0; p < apgas::places(); ++p) {
        co_await async_at(p, []() -> task<> {
          for (int c = 0; c < k_consumers; ++c) co_await async(consume_here(k_items / k_consumers));
        });
        const place_id from = (p + 1) % apgas::places();
        for (int k = 0; k < k_producers; ++k)
          co_await async_at(
              from,
              [](place_id to, int first) -> task<> {
                for (int v = first; v < k_items; v += k_producers)
                  co_await at(
                      to, [](int item) -> task<> { co_await put_here(item); }, v);
              },
              p, k);
      }
    });
    co_return co_await apgas::at_each_place([]() -> task<long> {
      co_return co_await atomic([] {
        long bad = static_cast<long>(g_buffer.count);
        for (int n : g_received) bad += n == 1 ? 0 : 1;
        return bad;
      });
    });
  });
  for (place_id p = 0; p < g_rt->places(); ++p)
    EXPECT_EQ(wrong[p], 0) << "items lost, repeated or left over at place " << p;
}

} // namespace

int main(int argc, char** argv) { return apgas_test::run_places_tests(argc, argv, g_rt); }
