// Futures under mpiexec at 1, 2 and 4 places (and 2 workers): at_async to every place at once,
// when_all, start() of any task, exceptions at the awaiter, a future awaited after its work
// ended, and the finish that waits for a future nobody awaits.
#include <apgas/apgas.hpp>

#include "../../places_test_main.hpp"
#include "../../stderr_pipe.hpp"
#include <gtest/gtest.h>

#include <atomic>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

using apgas::future;
using apgas::place_id;
using apgas::task;

apgas::runtime* g_rt = nullptr;

task<long> fib(int n) {
  if (n < 2) co_return n;
  auto [a, b] = co_await apgas::finish_all(fib(n - 1), fib(n - 2));
  co_return a + b;
}

TEST(future, at_async_to_every_place_then_await_them_all) {
  const long total = g_rt->run([]() -> task<long> {
    std::vector<future<long>> fs;
    for (place_id p = 0; p < apgas::places(); ++p)
      fs.push_back(co_await apgas::at_async(
          p, [](long x) { return x * 10 + static_cast<long>(apgas::here()); }, 1L));
    long total = 0;
    for (future<long>& f : fs) total += co_await f;
    co_return total;
  });
  const long n = g_rt->places();
  EXPECT_EQ(total, 10 * n + n * (n - 1) / 2);
}

TEST(future, when_all_gives_every_value_in_order) {
  const auto [a, b, c] = g_rt->run([]() -> task<std::tuple<long, std::string, std::monostate>> {
    const place_id last = apgas::places() - 1;
    auto fa = co_await apgas::at_async(
        last, [](long x) { return x + 1; }, 41L);
    auto fb = co_await apgas::at_async(
        0, [](std::string s) { return s + "!"; }, std::string("hi"));
    auto fc = co_await apgas::start([]() -> task<> { co_return; }());
    co_return co_await apgas::when_all(std::move(fa), std::move(fb), std::move(fc));
  });
  EXPECT_EQ(a, 42);
  EXPECT_EQ(b, "hi!");
  (void)c;
}

TEST(future, when_all_over_a_vector_gives_every_value_in_its_order) {
  const std::vector<long> got = g_rt->run([]() -> task<std::vector<long>> {
    std::vector<future<long>> fs;
    // Several per place, so that the values do not arrive in the vector's order.
    for (int k = 0; k < 3; ++k)
      for (place_id p = apgas::places(); p-- > 0;)
        fs.push_back(co_await apgas::at_async(
            p, [](long q, int kk) { return 100 * kk + q; }, long{p}, k));
    co_return co_await apgas::when_all(std::move(fs));
  });
  std::vector<long> want;
  for (int k = 0; k < 3; ++k)
    for (place_id p = apgas::places(); p-- > 0;) want.push_back(100L * k + p);
  EXPECT_EQ(got, want);
}

TEST(future, when_all_over_an_empty_vector_and_over_futures_of_void) {
  static std::atomic<int> ran{0};
  ran = 0;
  const std::size_t empty = g_rt->run([]() -> task<std::size_t> {
    co_return (co_await apgas::when_all(std::vector<future<std::string>>{})).size();
  });
  EXPECT_EQ(empty, 0U);
  g_rt->run([]() -> task<> {
    std::vector<future<void>> fs;
    for (int i = 0; i < 5; ++i)
      fs.push_back(co_await apgas::start([]() -> task<> {
        (void)co_await fib(12);
        ran.fetch_add(1);
      }()));
    co_await apgas::when_all(std::move(fs));
    if (ran.load() != 5) throw std::runtime_error("when_all ended before its futures");
  });
}

TEST(future, when_all_over_a_vector_rethrows_the_first_failure_in_its_order_after_all_ended) {
  static std::atomic<int> ended{0};
  ended = 0;
  const std::string what = g_rt->run([]() -> task<std::string> {
    std::vector<future<int>> fs;
    // The first future fails last (after a fib), the third fails at once: the first still wins.
    fs.push_back(co_await apgas::start([]() -> task<int> {
      const long v = co_await fib(16);
      ended.fetch_add(1);
      throw std::out_of_range("first " + std::to_string(v));
    }()));
    fs.push_back(co_await apgas::start([]() -> task<int> {
      (void)co_await fib(14);
      ended.fetch_add(1);
      co_return 1;
    }()));
    fs.push_back(co_await apgas::at_async(
        apgas::places() - 1, [](int) -> int { throw std::invalid_argument("third"); }, 0));
    // Still waiting for its remote activity (at 2 places or more) when the first has failed.
    fs.push_back(co_await apgas::start([]() -> task<int> {
      (void)co_await apgas::at(apgas::places() - 1,
                               []() -> task<long> { co_return co_await fib(18); });
      ended.fetch_add(1);
      co_return 3;
    }()));
    try {
      (void)co_await apgas::when_all(std::move(fs));
    } catch (const std::out_of_range& e) {
      if (ended.load() != 3) throw std::runtime_error("when_all threw before all had ended");
      co_return e.what();
    }
    co_return "no exception";
  });
  EXPECT_EQ(what, "first 987");
}

TEST(future, start_runs_any_task_and_the_value_waits_for_its_awaiter) {
  const long v = g_rt->run([]() -> task<long> {
    future<long> f = co_await apgas::start(fib(20));
    co_await apgas::finish([]() -> task<> { co_return; }()); // some other work meanwhile
    co_return co_await f;
  });
  EXPECT_EQ(v, 6765);
}

TEST(future, an_exception_reaches_the_awaiter_as_its_own_type) {
  const std::string what = g_rt->run([]() -> task<std::string> {
    auto f = co_await apgas::at_async(
        apgas::places() - 1,
        [](int i) -> int { throw std::out_of_range("index " + std::to_string(i)); }, 7);
    try {
      (void)co_await f;
    } catch (const std::out_of_range& e) {
      co_return e.what();
    }
    co_return "";
  });
  EXPECT_NE(what.find("index 7"), std::string::npos) << what;
}

TEST(future, the_finish_waits_for_a_future_nobody_awaits) {
  static std::atomic<int> done{0};
  done = 0;
  g_rt->run([]() -> task<> {
    co_await apgas::finish([]() -> task<> {
      (void)co_await apgas::start([]() -> task<> {
        (void)co_await fib(15);
        done.fetch_add(1);
      }());
    });
    if (done.load() != 1) throw std::runtime_error("the finish ended before the future's work");
  });
}

TEST(future, a_failure_nobody_awaits_is_reported) {
  std::string printed;
  {
    apgas_test::stderr_pipe err;
    g_rt->run([]() -> task<> {
      (void)co_await apgas::start([]() -> task<> {
        throw std::runtime_error("lost?");
        co_return;
      }());
    });
    err.read_into(printed);
  }
  if (g_rt->here() == 0) {
    EXPECT_NE(printed.find("nobody awaited it: std::runtime_error: lost?"), std::string::npos)
        << printed;
  }
}

} // namespace

int main(int argc, char** argv) { return apgas_test::run_places_tests(argc, argv, g_rt); }
