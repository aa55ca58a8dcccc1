// Pointers to free and static member functions across places, under mpiexec at 1, 2 and 4
// places: at, async_at (one at a time and in a stream of plain runs), at_async, for_each_place,
// at_each_place, coroutine functions, exceptions, and the refusal of a function that other
// places cannot find.
#include <apgas/apgas.hpp>

#include "../../places_test_main.hpp"
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

using apgas::place_id;
using apgas::task;

apgas::runtime* g_rt = nullptr;
std::atomic<long> g_total{0}; // one per place (per process)

long scaled_here(int k) { return 1000L * apgas::here() + k; }

std::string greet(const std::string& name) {
  return "place " + std::to_string(apgas::here()) + " greets " + name;
}

void add_to_total(long v) { g_total.fetch_add(v, std::memory_order_relaxed); }

long take_total() { return g_total.exchange(0); }

task<long> fib(int n) {
  if (n < 2) co_return n;
  auto [a, b] = co_await apgas::finish_all(fib(n - 1), fib(n - 2));
  co_return a + b;
}

int refuse(int i) { throw std::out_of_range("index " + std::to_string(i) + " refused"); }

struct counter {
  static long twice(long x) { return 2 * x; }
};

/// The sum of every place's g_total, each reset.
task<long> collect_totals() {
  long sum = 0;
  for (const long v : co_await apgas::at_each_place(take_total)) sum += v;
  co_return sum;
}

TEST(function_pointer, at_runs_a_free_function_at_the_place_and_returns_its_value) {
  const std::vector<long> got = g_rt->run([]() -> task<std::vector<long>> {
    std::vector<long> out;
    for (place_id p = 0; p < apgas::places(); ++p)
      out.push_back(co_await apgas::at(p, scaled_here, 7));
    out.push_back(co_await apgas::at(apgas::places() - 1, &counter::twice, 21L));
    co_return out;
  });
  std::vector<long> want;
  for (place_id p = 0; p < g_rt->places(); ++p) want.push_back(1000L * p + 7);
  want.push_back(42);
  EXPECT_EQ(got, want);
}

TEST(function_pointer, arguments_by_reference_and_coroutine_functions) {
  const std::string text = g_rt->run([]() -> task<std::string> {
    const place_id last = apgas::places() - 1;
    const std::string name = "you";
    std::string s = co_await apgas::at(last, greet, name);
    const long f = co_await apgas::at(last, fib, 15);
    co_return s + " " + std::to_string(f);
  });
  EXPECT_EQ(text, "place " + std::to_string(g_rt->places() - 1) + " greets you 610");
}

TEST(function_pointer, a_stream_of_async_ats_runs_each_once_at_its_place) {
  constexpr int k_per_place = 2000; // enough to travel in plain runs
  const long total = g_rt->run([]() -> task<long> {
    co_await apgas::finish([]() -> task<> {
      for (int i = 1; i <= k_per_place; ++i)
        for (place_id p = 0; p < apgas::places(); ++p)
          co_await apgas::async_at(p, add_to_total, long{i});
    });
    co_return co_await collect_totals();
  });
  EXPECT_EQ(total, g_rt->places() * (k_per_place * (k_per_place + 1L) / 2));
}

TEST(function_pointer, at_async_when_all_for_each_place_and_at_each_place) {
  const long total = g_rt->run([]() -> task<long> {
    std::vector<apgas::future<long>> fs;
    for (place_id p = 0; p < apgas::places(); ++p)
      fs.push_back(co_await apgas::at_async(p, scaled_here, 1));
    long sum = 0;
    for (const long v : co_await apgas::when_all(std::move(fs))) sum += v;
    co_await apgas::for_each_place(add_to_total, 5L);
    co_return sum + co_await collect_totals();
  });
  const long n = g_rt->places();
  EXPECT_EQ(total, 1000L * n * (n - 1) / 2 + n + 5 * n);
}

TEST(function_pointer, an_exception_comes_back_as_its_own_type) {
  const std::string what = g_rt->run([]() -> task<std::string> {
    try {
      (void)co_await apgas::at(apgas::places() - 1, refuse, 3);
    } catch (const std::out_of_range& e) {
      co_return e.what();
    }
    co_return "no exception";
  });
  EXPECT_EQ(what, "index 3 refused");
  const std::string from_async = g_rt->run([]() -> task<std::string> {
    try {
      co_await apgas::finish(
          []() -> task<> { co_await apgas::async_at(apgas::places() - 1, refuse, 4); });
    } catch (const apgas::multiple_exceptions& e) {
      co_return e.what();
    }
    co_return "no exception";
  });
  EXPECT_NE(from_async.find("index 4 refused"), std::string::npos) << from_async;
}

TEST(function_pointer, a_function_of_another_shared_library_is_refused_at_the_caller) {
  // getpid lives in libc, which each place may load at another address.
  const std::string what = g_rt->run([]() -> task<std::string> {
    try {
      (void)co_await apgas::at(apgas::places() - 1, ::getpid);
    } catch (const std::invalid_argument& e) {
      co_return apgas::origin_of(e) == nullptr ? e.what() : "thrown at another place";
    }
    co_return "no exception";
  });
  EXPECT_NE(what.find("a shared library"), std::string::npos) << what;
  EXPECT_NE(what.find("libc"), std::string::npos) << what;
}

} // namespace

int main(int argc, char** argv) { return apgas_test::run_places_tests(argc, argv, g_rt); }
