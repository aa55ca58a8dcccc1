// The trace's per-thread buffer (its bound and its folding of short activities) and a one-place
// run with --trace, which writes its place's file and the joined trace.json itself.
#include <apgas/detail/trace.hpp>
#include <apgas/finish.hpp>
#include <apgas/local_runtime.hpp>

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

using apgas::detail::trace_buffer;
using apgas::detail::trace_event;
using apgas::detail::trace_kind;

namespace {

TEST(trace, a_full_buffer_keeps_the_oldest_events_and_counts_the_rest) {
  trace_buffer b(4);
  for (std::int64_t i = 0; i < 10; ++i) b.add(trace_event{i, i, 0, 0, 0, 0, trace_kind::steal});
  EXPECT_EQ(b.size(), 4U);
  EXPECT_EQ(b.dropped(), 6U);
  std::int64_t expected = 0;
  for (const trace_event& e : b) EXPECT_EQ(e.start_ns, expected++);
}

TEST(trace, short_activities_fold_into_one_slice_per_granule) {
  trace_buffer b(16);
  constexpr std::int64_t fold = 1000;
  // Ten slices of 50 ns, 100 ns apart, span 950 ns together: less than the granule.
  for (std::int64_t i = 0; i < 10; ++i) b.add_activities(i * 100, i * 100 + 50, 1, fold);
  EXPECT_EQ(b.size(), 0U) << "950 ns so far: still folding";
  b.add_activities(1000, 1060, 2, fold); // reaches the granule: one slice of 12 activities
  ASSERT_EQ(b.size(), 1U);
  EXPECT_EQ(b.begin()->start_ns, 0);
  EXPECT_EQ(b.begin()->end_ns, 1060);
  EXPECT_EQ(b.begin()->a, 12U);
  // A slice that starts more than a granule after the fold began closes it first.
  b.add_activities(5000, 5010, 1, fold);
  b.add_activities(7000, 7010, 1, fold);
  ASSERT_EQ(b.size(), 2U);
  EXPECT_EQ((b.begin() + 1)->start_ns, 5000);
  EXPECT_EQ((b.begin() + 1)->end_ns, 5010);
  b.flush_fold();
  EXPECT_EQ(b.size(), 3U);
  // A long one stands alone.
  b.add_activities(9000, 20000, 1, fold);
  EXPECT_EQ(b.size(), 4U);
}

apgas::task<long> fib(int n) {
  if (n < 2) co_return n;
  long a = 0;
  long b = 0;
  co_await apgas::finish([&]() -> apgas::task<> {
    co_await apgas::async([&]() -> apgas::task<> { a = co_await fib(n - 1); });
    b = co_await fib(n - 2);
  });
  co_return a + b;
}

std::string read(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(trace, one_place_writes_its_file_and_the_joined_trace) {
  const std::filesystem::path dir =
      std::filesystem::path(testing::TempDir()) / ("apgas_trace_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  apgas::options o;
  o.threads = 2;
  o.trace = dir.string();
  {
    apgas::local_runtime rt(o);
    EXPECT_EQ(rt.run(fib(22)), 17711);
  }
  const std::string place = read(dir / "place-0.json");
  const std::string joined = read(dir / "trace.json");
  ASSERT_FALSE(place.empty());
  EXPECT_EQ(place.rfind(R"({"displayTimeUnit":"ns","traceEvents":[)", 0), 0U);
  EXPECT_NE(joined.find(R"("name":"worker 1")"), std::string::npos);
  EXPECT_NE(joined.find(R"("name":"messages")"), std::string::npos);
  EXPECT_NE(joined.find(R"("name":"activities")"), std::string::npos);
  EXPECT_NE(joined.find(R"("dropped":0)"), std::string::npos);
  EXPECT_EQ(joined.substr(joined.size() - 3), "]}\n");
  std::filesystem::remove_all(dir);
}

} // namespace
