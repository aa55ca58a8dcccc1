// The Chase-Lev deque alone: order, growth, and exactly-once delivery under concurrent steals.
#include <apgas/detail/deque.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <thread>
#include <vector>

using apgas::detail::ws_deque;

TEST(deque, owner_pops_in_lifo_order_and_thief_steals_in_fifo_order) {
  ws_deque d(4);
  EXPECT_TRUE(d.push(1)); // was empty
  EXPECT_FALSE(d.push(2));
  d.push(3);
  EXPECT_EQ(d.steal(), 1U);
  EXPECT_EQ(d.pop(), 3U);
  EXPECT_EQ(d.pop(), 2U);
  EXPECT_EQ(d.pop(), 0U);
  EXPECT_EQ(d.steal(), 0U);
  EXPECT_TRUE(d.looks_empty());
}

TEST(deque, grows_past_its_initial_capacity_keeping_every_item) {
  ws_deque d(2);
  for (std::uintptr_t i = 1; i <= 10000; ++i) d.push(i);
  EXPECT_EQ(d.size_estimate(), 10000);
  for (std::uintptr_t i = 1; i <= 100; ++i) EXPECT_EQ(d.steal(), i);
  for (std::uintptr_t i = 10000; i > 100; --i) EXPECT_EQ(d.pop(), i);
  EXPECT_EQ(d.pop(), 0U);
}

namespace {

/// The deque's fence for the duration of a test: full (seq_cst on both sides) or asymmetric
/// (the owner's compiler barrier, the thief's membarrier; see asymmetric_fence.hpp).
class fence_mode {
public:
  explicit fence_mode(bool asymmetric) : m_saved(apgas::detail::g_asymmetric_fence) {
    apgas::detail::g_asymmetric_fence = asymmetric; // no deque is in use yet
  }
  fence_mode(const fence_mode&) = delete;
  fence_mode& operator=(const fence_mode&) = delete;
  ~fence_mode() { apgas::detail::g_asymmetric_fence = m_saved; }

private:
  bool m_saved;
};

/// The owner pushes and pops while thieves steal; every item must be taken exactly once.
void every_item_taken_exactly_once(std::uintptr_t items, std::uintptr_t pop_every, int thieves_n) {
  ws_deque d(8); // small: forces growth while thieves read
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
        } else if (finished && d.looks_empty()) {
          return;
        }
      }
    });
  }
  std::uint64_t popped = 0;
  for (std::uintptr_t i = 1; i <= items; ++i) {
    d.push(i);
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
  for (std::uintptr_t i = 1; i <= items; ++i) ASSERT_EQ(taken[i].load(), 1) << "item " << i;
}

} // namespace

TEST(deque, every_item_is_taken_exactly_once_under_concurrent_steals) {
  const fence_mode full(false);
  every_item_taken_exactly_once(200000, 3, 3);
}

// The owner pops right after each push: nearly every pop races the thieves for the last item,
// where the store-load order of pop and steal decides who takes it.
TEST(deque, the_last_item_goes_to_one_side_only) {
  const fence_mode full(false);
  every_item_taken_exactly_once(200000, 1, 1);
}

TEST(deque, with_the_asymmetric_fence_every_item_is_taken_exactly_once) {
  if (!apgas::detail::register_asymmetric_fence())
    GTEST_SKIP() << "this kernel has no membarrier private expedited command";
  const fence_mode asymmetric(true);
  every_item_taken_exactly_once(200000, 3, 3);
  every_item_taken_exactly_once(200000, 1, 1);
  every_item_taken_exactly_once(200000, 1, 3);
}
