// The idle policy alone: the watcher's back-off, the watch's hand-over between workers, and
// when a spin ends. No threads and no sleeps: the policy only decides, the scheduler parks.
#include <apgas/detail/idle_policy.hpp>

#include <gtest/gtest.h>

#include <chrono>

namespace {

using apgas::detail::idle_policy;
using apgas::detail::network;
using apgas::detail::watcher_token;
using namespace std::chrono_literals;

/// A network that needs polls while idle and expects messages when told to.
class fake_network final : public network {
public:
  bool poll() noexcept override { return false; }
  void flush() noexcept override {}
  bool expecting_messages() const noexcept override { return m_expecting; }
  bool m_expecting = false;
};

constexpr std::chrono::microseconds k_spin = 50us;

/// One park of `p` as the scheduler makes it: the limit, then the wake-up.
std::chrono::nanoseconds park_once(idle_policy& p, const network* to_watch) {
  const std::chrono::nanoseconds limit = p.park_limit(to_watch);
  p.woke_up();
  return limit;
}

TEST(idle_policy, back_off_doubles_from_the_shortest_to_the_usual_longest_limit) {
  std::chrono::nanoseconds limit = idle_policy::k_min_network_park;
  for (const auto expected : {40us, 80us, 160us, 320us, 640us, 1000us, 1000us}) {
    limit = idle_policy::next_backoff(limit, 0ns);
    EXPECT_EQ(limit, expected);
  }
}

TEST(idle_policy, a_long_quiet_stretches_the_limit_up_to_the_quiet_maximum) {
  // Up to a share of the quiet: 32 ms of quiet allow 2 ms, 16 ms no more than the usual 1 ms.
  EXPECT_EQ(idle_policy::next_backoff(1ms, 32ms), 2ms);
  EXPECT_EQ(idle_policy::next_backoff(1ms, 16ms), idle_policy::k_max_network_park);
  EXPECT_EQ(idle_policy::next_backoff(4ms, 10s), idle_policy::k_max_quiet_park);
  EXPECT_EQ(idle_policy::next_backoff(idle_policy::k_max_quiet_park, 10s),
            idle_policy::k_max_quiet_park);
  // Still a doubling: a long quiet does not make a short limit jump.
  EXPECT_EQ(idle_policy::next_backoff(20us, 10s), 40us);
}

TEST(idle_policy, the_watcher_parks_with_a_doubling_limit) {
  watcher_token token;
  idle_policy p(k_spin, false, token);
  fake_network net;
  // Below the usual longest limit the sequence does not depend on how long the test takes.
  for (const auto expected : {20us, 40us, 80us, 160us, 320us, 640us}) {
    EXPECT_EQ(park_once(p, &net), expected);
    EXPECT_EQ(token.park_limit(), expected) << "the limit is published for observers";
  }
  for (int i = 0; i < 4; ++i) {
    const std::chrono::nanoseconds limit = park_once(p, &net);
    EXPECT_GE(limit, idle_policy::k_max_network_park);
    EXPECT_LE(limit, idle_policy::k_max_quiet_park);
  }
  EXPECT_TRUE(p.watching());
  EXPECT_TRUE(token.taken());
}

TEST(idle_policy, an_expected_message_caps_the_watchers_limit) {
  watcher_token token;
  idle_policy p(k_spin, false, token);
  fake_network net;
  for (int i = 0; i < 5; ++i) park_once(p, &net); // next limit: 640 us
  net.m_expecting = true;
  EXPECT_EQ(park_once(p, &net), idle_policy::k_expecting_park);
  EXPECT_EQ(park_once(p, &net), idle_policy::k_expecting_park);
  net.m_expecting = false;
  EXPECT_EQ(park_once(p, &net), 2 * idle_policy::k_expecting_park) << "doubles from the cap";
}

TEST(idle_policy, a_long_wait_for_an_expected_message_backs_off_like_a_quiet_place) {
  // The cap holds for the first k_quiet_share * k_expecting_park of quiet, then grows with it.
  EXPECT_EQ(idle_policy::expecting_cap(0ns), idle_policy::k_expecting_park);
  EXPECT_EQ(idle_policy::expecting_cap(1ms), idle_policy::k_expecting_park);
  EXPECT_EQ(idle_policy::expecting_cap(16ms), 1ms);
  EXPECT_EQ(idle_policy::expecting_cap(128ms), 8ms);
  // And the back-off reaches it: from a cap of 1 ms, the next limit is 2 ms after 32 ms.
  EXPECT_EQ(idle_policy::next_backoff(idle_policy::expecting_cap(16ms), 32ms), 2ms);
}

TEST(idle_policy, work_or_a_cancelled_park_restarts_the_back_off) {
  watcher_token token;
  idle_policy p(k_spin, false, token);
  fake_network net;
  for (int i = 0; i < 3; ++i) park_once(p, &net);
  p.cancelled_park();
  EXPECT_EQ(park_once(p, &net), idle_policy::k_min_network_park);
  EXPECT_EQ(park_once(p, &net), 2 * idle_policy::k_min_network_park);
  EXPECT_TRUE(p.found_work()) << "the watcher gives the watch up when it finds work";
  EXPECT_EQ(park_once(p, &net), idle_policy::k_min_network_park);
}

TEST(idle_policy, one_watcher_at_a_time_and_the_watch_is_handed_over) {
  watcher_token token;
  idle_policy a(k_spin, false, token);
  idle_policy b(k_spin, false, token);
  fake_network net;
  EXPECT_EQ(a.park_limit(&net), idle_policy::k_min_network_park);
  EXPECT_TRUE(a.watching());
  EXPECT_TRUE(token.taken());
  EXPECT_EQ(b.park_limit(&net), 0ns) << "a second sleeper parks without a limit";
  EXPECT_FALSE(b.watching());
  EXPECT_FALSE(b.found_work()) << "no watch to hand over";
  EXPECT_TRUE(a.found_work()) << "the watcher hands the watch over: its caller wakes a sleeper";
  EXPECT_FALSE(a.watching());
  EXPECT_FALSE(token.taken());
  EXPECT_EQ(b.park_limit(&net), idle_policy::k_min_network_park) << "the woken sleeper takes it";
  EXPECT_TRUE(b.watching());
  EXPECT_EQ(a.park_limit(&net), 0ns);
  b.retire();
  EXPECT_FALSE(token.taken()) << "a stopping worker gives the watch up";
}

TEST(idle_policy, served_messages_end_the_watch_and_start_a_new_spin) {
  watcher_token token;
  idle_policy p(k_spin, false, token);
  fake_network net;
  (void)p.park_limit(&net);
  EXPECT_FALSE(p.keep_searching(&net)) << "a watcher goes back to sleep at once";
  EXPECT_TRUE(p.spin_starting());
  p.served_messages();
  EXPECT_FALSE(p.watching());
  EXPECT_FALSE(token.taken());
  EXPECT_TRUE(p.spin_starting());
  EXPECT_TRUE(p.keep_searching(&net)) << "no longer a watcher: it spins";
  EXPECT_FALSE(p.spin_starting());
}

TEST(idle_policy, no_watcher_without_a_network_that_needs_polls) {
  watcher_token token;
  idle_policy p(k_spin, false, token);
  fake_network net;
  EXPECT_EQ(p.park_limit(nullptr), 0ns);
  EXPECT_FALSE(token.taken());
  EXPECT_EQ(p.park_limit(&net), idle_policy::k_min_network_park);
  EXPECT_EQ(p.park_limit(nullptr), 0ns) << "the network stopped needing polls";
  EXPECT_FALSE(p.watching());
  EXPECT_FALSE(token.taken());
}

TEST(idle_policy, a_spin_lasts_its_budget) {
  watcher_token token;
  idle_policy none(0us, false, token);
  EXPECT_FALSE(none.keep_searching(nullptr)) << "no budget: park at once";
  EXPECT_TRUE(none.spin_starting());

  idle_policy long_spin(std::chrono::seconds(100), false, token);
  EXPECT_TRUE(long_spin.spin_starting());
  for (unsigned i = 0; i < 10 * idle_policy::k_rounds_per_clock_read; ++i)
    ASSERT_TRUE(long_spin.keep_searching(nullptr));
  EXPECT_FALSE(long_spin.spin_starting());
  EXPECT_FALSE(long_spin.found_work());
  EXPECT_TRUE(long_spin.spin_starting()) << "work ends the spin";
}

TEST(idle_policy, an_expected_message_makes_the_spin_last_longer) {
  watcher_token token;
  idle_policy p(1us, false, token);
  fake_network net;
  net.m_expecting = true;
  const auto start = std::chrono::steady_clock::now();
  while (p.keep_searching(&net)) {
  }
  EXPECT_GE(std::chrono::steady_clock::now() - start, idle_policy::k_expecting_spin);
  EXPECT_TRUE(p.spin_starting());
}

} // namespace
