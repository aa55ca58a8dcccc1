// apgas::message_counts: the snapshot of one place, its sum over the places and the arithmetic
// of snapshots. Run by ctest under mpiexec -n 1, 2 and 4; every place runs the same tests in
// the same order (runtime::run is collective).
#include <apgas/apgas.hpp>

#include "../../places_test_main.hpp"
#include <gtest/gtest.h>

#include <array>
#include <bit>
#include <cstdint>
#include <thread>
#include <utility>

using apgas::message_counts;
using apgas::place_id;
using apgas::task;

namespace {

apgas::runtime* g_rt = nullptr;

constexpr std::size_t k_fields = sizeof(message_counts) / sizeof(std::uint64_t);
static_assert(sizeof(message_counts) == k_fields * sizeof(std::uint64_t), "counts only");

/// Counts whose every field differs (field i holds base + i), so that a field that += or -
/// leaves out or mixes up shows.
message_counts distinct(std::uint64_t base) {
  std::array<std::uint64_t, k_fields> values{};
  for (std::size_t i = 0; i < k_fields; ++i) values[i] = base + i;
  return std::bit_cast<message_counts>(values);
}

TEST(message_counts, sum_and_difference_take_every_field) {
  const message_counts a = distinct(100);
  const message_counts b = distinct(7000);
  message_counts sum = a;
  sum += b;
  const message_counts expected_sum = [] {
    std::array<std::uint64_t, k_fields> values{};
    for (std::size_t i = 0; i < k_fields; ++i) values[i] = 7100 + 2 * i;
    return std::bit_cast<message_counts>(values);
  }();
  EXPECT_EQ(sum, expected_sum);
  EXPECT_EQ(sum - b, a);
  EXPECT_EQ(sum - a, b);
  EXPECT_EQ(a - a, message_counts{});
  EXPECT_EQ(a.finish_control_sent(),
            a.finish_reports_sent + a.finish_asks_sent + a.finish_cleanups_sent);
}

TEST(message_counts, remote_asyncs_show_in_the_sum_over_places) {
  constexpr std::uint64_t k_per_place = 100;
  const place_id places = g_rt->places();
  const message_counts m = g_rt->run([]() -> task<message_counts> {
    const message_counts before = co_await apgas::total_message_counts();
    co_await apgas::finish([]() -> task<> {
      for (place_id p = 0; p < apgas::places(); ++p) {
        if (p == apgas::here()) continue;
        for (std::uint64_t i = 0; i < k_per_place; ++i)
          co_await apgas::async_at(
              p, [](std::uint64_t) {}, i);
      }
    });
    co_return co_await apgas::total_message_counts() - before;
  });
  EXPECT_GE(m.activities_sent, k_per_place * (places - 1));
  if (places == 1) {
    // Nothing leaves a lone place, not even the reading's own messages.
    EXPECT_EQ(m.mpi_messages_sent, 0u);
    EXPECT_EQ(m.mpi_messages_received, 0u);
    EXPECT_EQ(m.bytes_sent, 0u);
  } else {
    EXPECT_GT(m.mpi_messages_sent, 0u);
    EXPECT_GT(m.bytes_sent, 0u);
    EXPECT_GT(m.mpi_messages_received, 0u);
    EXPECT_GE(m.distributed_finishes, 1u);
    EXPECT_GE(m.finish_reports_sent, places - 1); // each place that ran asyncs reported
  }
}

TEST(message_counts, reading_costs_the_same_messages_every_time) {
  // What the benchmarks rely on to subtract the cost of reading: two reads in a row measure it.
  const auto [first, second] = g_rt->run([]() -> task<std::pair<message_counts, message_counts>> {
    const message_counts a = co_await apgas::total_message_counts();
    const message_counts b = co_await apgas::total_message_counts();
    const message_counts c = co_await apgas::total_message_counts();
    co_return std::pair(b - a, c - b);
  });
  EXPECT_EQ(first, second);
  const std::uint64_t others = g_rt->places() - 1;
  EXPECT_EQ(first.activities_sent, others); // one request per other place
  EXPECT_EQ(first.at_replies_sent, others);
  EXPECT_EQ(first.finish_control_sent(), 0u);
  EXPECT_EQ(first.mpi_messages_sent, 2 * others);
}

TEST(message_counts, this_place_can_be_read_from_any_thread) {
  const message_counts from_main = apgas::local_message_counts();
  message_counts from_thread;
  std::thread t([&] { from_thread = apgas::local_message_counts(); });
  t.join();
  // Read later, so no smaller (counts only grow).
  EXPECT_GE(from_thread.logical_messages_sent, from_main.logical_messages_sent);
  EXPECT_GE(from_thread.activities_sent, from_main.activities_sent);
}

} // namespace

int main(int argc, char** argv) { return apgas_test::run_places_tests(argc, argv, g_rt); }
