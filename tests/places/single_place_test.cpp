// A place started without mpirun (one place, the loopback transport): idle, its workers sleep
// without a time limit (no watcher), and a message it sends itself wakes one of them.
#include <apgas/apgas.hpp>
#include <apgas/detail/message_dispatcher.hpp>
#include <apgas/detail/place_modules.hpp>

#include "single_place_transport.hpp"
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

namespace {

using apgas::task;
using namespace std::chrono_literals;

/// What apgas::runtime builds without mpirun, with its scheduler in reach.
struct single_place {
  explicit single_place(unsigned threads) : local(make_options(threads)) {
    apgas::detail::active_messages::set_current(
        apgas::detail::add_place_modules(dispatcher, local.opts()).messages);
    local.sched().set_network(&dispatcher);
  }
  ~single_place() { // as apgas::runtime: the workers stop before the dispatcher goes
    local.sched().stop();
    local.sched().set_network(nullptr);
    apgas::detail::active_messages::set_current(nullptr);
  }
  static apgas::options make_options(unsigned threads) {
    apgas::options o;
    o.threads = threads;
    o.pin_workers = false;
    return o;
  }
  apgas::local_runtime local;
  apgas::detail::message_dispatcher dispatcher{local.sched(),
                                               apgas::detail::make_single_place_transport()};
};

/// Yields until `done()` or the deadline; returns done().
template <class Done>
bool wait_for(Done done, std::chrono::seconds limit = 30s) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (!done() && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
  return done();
}

// With a network that other places could use, one parked worker (the watcher) wakes every
// 20 us to 1 ms to poll it. One place hears only itself: with nothing buffered, no worker
// takes that role, and every worker sleeps until something wakes it.
TEST(single_place, an_idle_place_has_no_watcher) {
  single_place p(2);
  p.local.run([]() -> task<> { co_return; });
  // A worker counts as parked from its announcement on, before it gives the role up: wait for
  // both, then for the role to be free (with a deadline: the old design never frees it).
  const auto& sched = p.local.sched();
  EXPECT_TRUE(wait_for([&] { return p.local.parked_workers() == 2 && !sched.watched(); }))
      << "an idle place kept a watcher, which wakes up to poll";
  EXPECT_EQ(sched.watcher_park_limit(), std::chrono::nanoseconds::zero()) << "a timed park";
}

std::atomic<bool> g_ran{false};

// The worker that sends keeps its core (it waits for the message's effect without letting go
// of its worker), so only the parked one can deliver: it must be woken by the send itself.
TEST(single_place, a_message_to_itself_wakes_a_parked_worker) {
  single_place p(2);
  g_ran.store(false);
  const bool ran = p.local.run([&p]() -> task<bool> {
    bool seen = false;
    co_await apgas::finish([&]() -> task<> {
      // The other worker is asleep, without a time limit (nothing is buffered yet).
      if (!wait_for([&] { return p.local.parked_workers() == 1; })) co_return;
      co_await apgas::async_at(apgas::here(), [] { g_ran.store(true); });
      seen = wait_for([] { return g_ran.load(); }, 10s);
    });
    co_return seen;
  });
  EXPECT_TRUE(ran) << "the message to itself was not delivered while this worker was busy";
}

} // namespace
