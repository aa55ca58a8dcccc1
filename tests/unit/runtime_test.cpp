// The runtime object: lifetime, uniqueness, idle workers parking, statistics.
#include <apgas/detail/spread_counter.hpp>

#include "test_support.hpp"

#include <chrono>
#include <stdexcept>
#include <thread>

using apgas::task;

namespace {

apgas::options two_workers() {
  apgas::options o;
  o.threads = 2;
  o.pin_workers = false;
  return o;
}

TEST(runtime, only_one_exists_at_a_time) {
  apgas::local_runtime rt(two_workers());
  EXPECT_EQ(apgas::local_runtime::current(), &rt);
  EXPECT_THROW(apgas::local_runtime second(two_workers()), std::logic_error);
}

TEST(runtime, can_be_created_again_after_destruction) {
  for (int i = 0; i < 5; ++i) {
    apgas::local_runtime rt(two_workers());
    EXPECT_EQ(rt.run([]() -> task<int> { co_return 1; }), 1);
  }
  EXPECT_EQ(apgas::local_runtime::current(), nullptr);
}

TEST(runtime, reports_the_worker_count_it_was_given) {
  apgas::options o = two_workers();
  o.threads = 3;
  apgas::local_runtime rt(o);
  EXPECT_EQ(rt.threads(), 3U);
}

// A spread_counter adds without read-modify-writes on workers (a slot each) and with one on
// other threads (a shared slot): every addition is in the sum once everybody is done.
TEST(spread_counter, sums_what_every_worker_and_other_thread_added) {
  apgas::local_runtime rt(two_workers());
  apgas::detail::spread_counter counter(rt.sched());
  constexpr int k_asyncs = 20000;
  rt.run([&counter]() -> task<> {
    co_await apgas::finish([&counter]() -> task<> {
      for (int i = 0; i < k_asyncs; ++i) co_await apgas::async([&counter] { counter.add(); });
    });
  });
  counter.add(5); // the main thread: no worker, the shared slot
  std::thread other([&counter] { counter.add(7); });
  other.join();
  EXPECT_EQ(counter.load(), static_cast<std::uint64_t>(k_asyncs) + 12U);
}

// Idle workers must park (not spin): after a run, every worker reaches the parked state.
// Polls the parked count with yields and a generous deadline; no sleep decides the outcome.
TEST(runtime, idle_workers_park) {
  apgas::local_runtime rt(two_workers());
  rt.run([]() -> task<> { co_return; });
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (rt.parked_workers() < rt.threads() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::yield();
  EXPECT_EQ(rt.parked_workers(), rt.threads());
  // And they wake up for new work.
  EXPECT_EQ(rt.run([]() -> task<int> { co_return 2; }), 2);
}

TEST(runtime, statistics_are_printed_on_request) {
  testing::internal::CaptureStderr();
  {
    apgas::options o = two_workers();
    o.stats = true;
    apgas::local_runtime rt(o);
    rt.run([]() -> task<> {
      co_await apgas::finish([]() -> task<> {
        for (int i = 0; i < 10; ++i) co_await apgas::async([] {});
      });
    });
  }
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("apgas statistics"), std::string::npos) << err;
  EXPECT_NE(err.find("spawns"), std::string::npos) << err;
  EXPECT_NE(err.find("total"), std::string::npos) << err;
}

} // namespace
