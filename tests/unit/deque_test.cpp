// The split deque alone: order, requests, growth, the 32-bit wrap, and exactly-once delivery
// under concurrent steals.
#include <apgas/detail/deque.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <random>
#include <thread>
#include <vector>

using apgas::detail::ws_deque;

TEST(deque, owner_pops_in_lifo_order_and_thief_steals_in_fifo_order) {
  ws_deque d(4);
  d.push(1);
  d.push(2);
  d.push(3);
  d.share_all();
  EXPECT_EQ(d.steal(), 1U);
  EXPECT_EQ(d.pop(), 3U);
  EXPECT_EQ(d.pop(), 2U);
  EXPECT_EQ(d.pop(), 0U);
  EXPECT_EQ(d.steal(), 0U);
  EXPECT_TRUE(d.owner_sees_empty());
}

TEST(deque, the_bottom_item_is_public_the_others_private_until_a_thief_asks) {
  ws_deque d(8);
  d.push(1); // onto an empty deque: public
  d.push(2);
  d.push(3);
  EXPECT_EQ(d.owner_private_count(), 2U);
  EXPECT_EQ(d.steal(), 1U);
  EXPECT_FALSE(d.has_stealable());
  EXPECT_EQ(d.steal(), 0U); // raises the request
  d.push(4);                // answers it: the older half of 2, 3, 4 (two items) goes public
  EXPECT_EQ(d.owner_private_count(), 1U);
  EXPECT_EQ(d.steal(), 2U);
  EXPECT_EQ(d.pop(), 4U); // private: no race
  EXPECT_EQ(d.pop(), 3U); // public: taken back
  EXPECT_EQ(d.pop(), 0U);
}

TEST(deque, a_pop_answers_a_request_too) {
  ws_deque d(8);
  for (std::uintptr_t i = 1; i <= 6; ++i) d.push(i);
  EXPECT_EQ(d.steal(), 1U);
  EXPECT_EQ(d.steal(), 0U);
  EXPECT_EQ(d.pop(), 6U); // 2 to 5 left: the older two go public
  EXPECT_EQ(d.owner_private_count(), 2U);
  EXPECT_EQ(d.steal(), 2U);
  EXPECT_EQ(d.steal(), 3U);
  EXPECT_EQ(d.steal(), 0U); // nothing public: asks again
  EXPECT_EQ(d.pop(), 5U);   // answers: item 4 goes public
  EXPECT_EQ(d.steal(), 4U);
  EXPECT_EQ(d.pop(), 0U);
}

TEST(deque, a_request_to_an_empty_deque_is_answered_by_the_next_push) {
  ws_deque d(8);
  d.push(1);
  EXPECT_EQ(d.steal(), 1U);
  EXPECT_EQ(d.steal(), 0U); // raises the request
  d.push(2);                // answers the request
  d.push(3);                // private
  EXPECT_EQ(d.owner_private_count(), 1U);
  EXPECT_EQ(d.steal(), 2U);
  EXPECT_EQ(d.steal(), 0U); // asks again
  EXPECT_EQ(d.pop(), 3U);   // nothing left to give: the request stays up
  d.push(4);
  EXPECT_EQ(d.steal(), 4U);
  EXPECT_TRUE(d.owner_sees_empty());
  EXPECT_EQ(d.pop(), 0U);
}

TEST(deque, a_long_activity_answers_requests_without_pushing) {
  ws_deque d(8);
  d.push(1);
  d.push(2);
  EXPECT_EQ(d.steal(), 1U);
  EXPECT_EQ(d.steal(), 0U);
  d.serve_requests();
  EXPECT_EQ(d.steal(), 2U);
  d.serve_requests(); // nothing to give: the request stays up
  d.push(3);
  d.push(4);
  EXPECT_EQ(d.steal(), 3U);
}

TEST(deque, the_owner_takes_back_one_public_item_at_a_time) {
  ws_deque d(8);
  for (std::uintptr_t i = 1; i <= 4; ++i) d.push(i);
  d.share_all();
  EXPECT_EQ(d.pop(), 4U); // takes back 4 alone; 1, 2 and 3 stay public
  EXPECT_EQ(d.owner_private_count(), 0U);
  EXPECT_EQ(d.steal(), 1U);
  EXPECT_EQ(d.steal(), 2U);
  EXPECT_EQ(d.pop(), 3U);
  EXPECT_EQ(d.pop(), 0U);
}

TEST(deque, grows_past_its_initial_capacity_keeping_every_item) {
  ws_deque d(2);
  for (std::uintptr_t i = 1; i <= 10000; ++i) d.push(i);
  EXPECT_EQ(d.size_estimate(), 10000);
  d.share_all();
  for (std::uintptr_t i = 1; i <= 100; ++i) EXPECT_EQ(d.steal(), i);
  for (std::uintptr_t i = 10000; i > 100; --i) EXPECT_EQ(d.pop(), i);
  EXPECT_EQ(d.pop(), 0U);
}

TEST(deque, indices_wrap_around_32_bits) {
  ws_deque d(4, nullptr, 0xFFFFFFF0U);                   // 16 indices before the wrap
  for (std::uintptr_t base = 0; base < 100; base += 5) { // 20 rounds over the wrap
    for (std::uintptr_t k = 1; k <= 5; ++k) d.push(base + k);
    d.share_all();
    for (std::uintptr_t k = 1; k <= 3; ++k) EXPECT_EQ(d.steal(), base + k);
    EXPECT_EQ(d.pop(), base + 5);
    EXPECT_EQ(d.pop(), base + 4);
  }
  EXPECT_EQ(d.pop(), 0U);
  EXPECT_EQ(d.steal(), 0U);
}

namespace {

/// The owner pushes and pops while thieves steal (and so ask); every item must be taken
/// exactly once. `share_every`: the owner also makes everything public that often (0: never,
/// only requests move items).
void every_item_taken_exactly_once(std::uintptr_t items, std::uintptr_t pop_every, int thieves_n,
                                   std::uintptr_t share_every, std::uint32_t first_index = 0) {
  ws_deque d(8, nullptr, first_index); // small: forces growth while thieves read
  auto taken = std::make_unique<std::atomic<int>[]>(items + 1);
  std::atomic<bool> owner_done{false};
  std::atomic<std::uint64_t> stolen{0};

  std::vector<std::thread> thieves;
  for (int t = 0; t < thieves_n; ++t) {
    thieves.emplace_back([&] {
      for (;;) {
        const bool finished = owner_done.load(std::memory_order_acquire);
        if (std::uintptr_t x = d.steal()) {
          taken[x].fetch_add(1, std::memory_order_relaxed);
          stolen.fetch_add(1, std::memory_order_relaxed);
        } else if (finished && !d.has_stealable()) {
          return;
        }
      }
    });
  }
  std::uint64_t popped = 0;
  for (std::uintptr_t i = 1; i <= items; ++i) {
    d.push(i);
    if (share_every != 0 && i % share_every == 0) d.share_all();
    if (i % pop_every == 0) { // pop some back, as a worker joining its children does
      if (std::uintptr_t x = d.pop()) {
        taken[x].fetch_add(1, std::memory_order_relaxed);
        ++popped;
      }
    }
  }
  while (std::uintptr_t x = d.pop()) {
    taken[x].fetch_add(1, std::memory_order_relaxed);
    ++popped;
  }
  owner_done.store(true, std::memory_order_release);
  for (auto& t : thieves) t.join();

  EXPECT_EQ(popped + stolen.load(), items);
  std::printf("%llu of %llu items stolen\n", static_cast<unsigned long long>(stolen.load()),
              static_cast<unsigned long long>(items));
  for (std::uintptr_t i = 1; i <= items; ++i) ASSERT_EQ(taken[i].load(), 1) << "item " << i;
}

} // namespace

TEST(deque, every_item_is_taken_exactly_once_under_concurrent_steals) {
  every_item_taken_exactly_once(200000, 3, 3, 0);
}

// The owner pops right after each push: with requests answered by every push, nearly every pop
// takes back a public item, racing the thieves' compare-and-swap for it.
TEST(deque, the_last_item_goes_to_one_side_only) {
  every_item_taken_exactly_once(200000, 1, 1, 0);
  every_item_taken_exactly_once(200000, 1, 3, 1);
}

TEST(deque, every_item_is_taken_exactly_once_across_the_32_bit_wrap) {
  every_item_taken_exactly_once(100000, 2, 2, 7, 0xFFFF0000U);
}

// A random owner (pushes, pops, shares) against a reference stack, with no thief: the deque
// is a plain stack to its owner whatever it makes public.
TEST(deque, to_its_owner_it_is_a_stack) {
  std::mt19937 rng(12345);
  std::printf("seed 12345\n");
  ws_deque d(2);
  std::vector<std::uintptr_t> model;
  std::uintptr_t next = 1;
  for (int step = 0; step < 100000; ++step) {
    switch (rng() % 4) {
    case 0:
    case 1:
      d.push(next);
      model.push_back(next++);
      break;
    case 2: {
      const std::uintptr_t want = model.empty() ? 0 : model.back();
      if (!model.empty()) model.pop_back();
      ASSERT_EQ(d.pop(), want) << "step " << step;
      break;
    }
    case 3:
      if (rng() % 8 == 0) d.share_all();
      else if (rng() % 8 == 0) d.want_work();
      break;
    }
    ASSERT_EQ(d.size_estimate(), static_cast<std::int64_t>(model.size())) << "step " << step;
  }
}
