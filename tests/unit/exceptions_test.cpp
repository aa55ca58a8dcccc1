// Exceptions escaping activities are gathered at their finish and thrown once, after every
// activity of that finish has ended.
#include "test_support.hpp"

#include <atomic>
#include <stdexcept>

using apgas::async;
using apgas::finish;
using apgas::task;

namespace {

class exceptions : public apgas_test::runtime_test {};

task<> fail(int i) {
  throw std::runtime_error("activity " + std::to_string(i) + " failed");
  co_return;
}

// A slow activity: spawns a chain of asyncs before setting its flag.
task<> slow_then_set(std::atomic<bool>& done, int depth) {
  if (depth == 0) {
    done.store(true);
    co_return;
  }
  co_await async(slow_then_set(done, depth - 1));
}

TEST_P(exceptions, are_gathered_and_thrown_only_after_all_activities_ended) {
  std::atomic<bool> slow_done{false};
  bool slow_done_when_caught = false;
  std::size_t caught = 0;
  rt().run([&]() -> task<> {
    try {
      co_await finish([&]() -> task<> {
        co_await async(slow_then_set(slow_done, 2000));
        for (int i = 0; i < 5; ++i) co_await async(fail(i));
      });
    } catch (const apgas::multiple_exceptions& e) {
      caught = e.exceptions().size();
      slow_done_when_caught = slow_done.load();
    }
  });
  EXPECT_EQ(caught, 5U);
  EXPECT_TRUE(slow_done_when_caught);
}

TEST_P(exceptions, from_the_body_itself_are_gathered_too) {
  std::string what;
  rt().run([&]() -> task<> {
    try {
      co_await finish([&]() -> task<> {
        co_await async(fail(1));
        throw std::logic_error("body");
      });
    } catch (const apgas::multiple_exceptions& e) {
      what = e.what();
      EXPECT_EQ(e.exceptions().size(), 2U);
    }
  });
  EXPECT_NE(what.find("2 activities failed"), std::string::npos) << what;
}

TEST_P(exceptions, of_a_sequential_call_propagate_to_the_caller) {
  auto thrower = []() -> task<int> {
    throw std::out_of_range("seq");
    co_return 1;
  };
  bool caught = false;
  rt().run([&]() -> task<> {
    try {
      (void)co_await thrower();
    } catch (const std::out_of_range&) {
      caught = true;
    }
  });
  EXPECT_TRUE(caught);
}

TEST_P(exceptions, go_to_the_governing_finish_not_to_the_spawner) {
  // The parent returns normally; its child's exception surfaces at the enclosing finish.
  auto parent = []() -> task<> {
    co_await async(fail(7));
    co_return;
  };
  std::size_t caught = 0;
  bool parent_returned = false;
  rt().run([&]() -> task<> {
    try {
      co_await finish([&]() -> task<> {
        co_await parent();
        parent_returned = true;
      });
    } catch (const apgas::multiple_exceptions& e) {
      caught = e.exceptions().size();
    }
  });
  EXPECT_TRUE(parent_returned);
  EXPECT_EQ(caught, 1U);
}

TEST_P(exceptions, escaping_the_root_are_thrown_by_run) {
  EXPECT_THROW(rt().run([]() -> task<> {
    co_await async(fail(0));
    co_return;
  }),
               apgas::multiple_exceptions);
  // The runtime is still usable afterwards.
  EXPECT_EQ(rt().run([]() -> task<int> { co_return 3; }), 3);
}

TEST_P(exceptions, of_finish_all_tasks_are_gathered_after_all_of_them_ended) {
  std::atomic<bool> slow_done{false};
  bool slow_done_when_caught = false;
  std::size_t caught = 0;
  rt().run([&]() -> task<> {
    try {
      co_await apgas::finish_all(fail(1), slow_then_set(slow_done, 500), fail(2));
    } catch (const apgas::multiple_exceptions& e) {
      caught = e.exceptions().size();
      slow_done_when_caught = slow_done.load();
    }
  });
  EXPECT_EQ(caught, 2U);
  EXPECT_TRUE(slow_done_when_caught);
}

TEST_P(exceptions, of_nested_finishes_say_what_failed_once_and_count_the_failures) {
  // Three levels of finish around one failure, then two more failures beside it.
  std::string one;
  std::string three;
  std::size_t direct = 0;
  std::size_t flattened = 0;
  rt().run([&]() -> task<> {
    auto nested = []() -> task<> {
      co_await finish([]() -> task<> {
        co_await async(
            []() -> task<> { co_await finish([]() -> task<> { co_await async(fail(7)); }); });
      });
    };
    try {
      co_await finish([&]() -> task<> { co_await async(nested()); });
    } catch (const apgas::multiple_exceptions& e) {
      one = e.what();
    }
    try {
      co_await finish([&]() -> task<> {
        co_await async(nested());
        co_await async(fail(8));
        co_await async(fail(9));
      });
    } catch (const apgas::multiple_exceptions& e) {
      three = e.what();
      direct = e.exceptions().size();
      flattened = e.flattened().size();
    }
  });
  EXPECT_EQ(one, "1 activity failed: activity 7 failed");
  EXPECT_EQ(three.rfind("3 activities failed; first: activity ", 0), 0U) << three;
  EXPECT_EQ(three.find("first:", three.find("first:") + 1), std::string::npos) << three; // once
  EXPECT_EQ(direct, 3U); // the finish's own activities, as X10 has them
  EXPECT_EQ(flattened, 3U);
}

APGAS_INSTANTIATE_CONFIGS(exceptions);

} // namespace
