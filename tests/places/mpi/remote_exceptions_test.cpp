// Failures that cross places keep their shape: an `at` fails once, to its caller, on every path;
// a remote finish's multiple_exceptions arrives whole, its failures counted and placed; known
// and registered types are rethrown as themselves (apgas::remote<E>), anything else as a
// remote_exception; a global_ref used wrongly says so. Run by ctest under mpiexec -n 1, 2 and 4
// (every place runs the same tests in the same order; assertions may fail at any place).
#include <apgas/apgas.hpp>
#include <apgas/detail/message_dispatcher.hpp>

#include "../../places_test_main.hpp"
#include "../coded_error.hpp"
#include "test_arguments.hpp"
#include <gtest/gtest.h>

#include <algorithm>
#include <new>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

using apgas::async;
using apgas::async_at;
using apgas::at;
using apgas::finish;
using apgas::place_id;
using apgas::task;

/// A user's type rebuilt from its what() alone.
class config_error : public std::logic_error {
public:
  using std::logic_error::logic_error;
};
APGAS_REGISTER_EXCEPTION(config_error);

/// A user's type nobody registered.
class unregistered_error : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

namespace {

apgas::runtime* g_rt = nullptr;

place_id last_place() { return apgas::places() - 1; }

/// "<type there> at <place>: <what>" of an exception that came from another place, or why not.
std::string origin_text(const std::exception& e) {
  const apgas::remote_origin* origin = apgas::origin_of(e);
  if (origin == nullptr) return std::string("thrown here: ") + e.what();
  return origin->type_name() + " at " + std::to_string(origin->place()) + ": " + e.what();
}

TEST(remote_exceptions, an_at_fails_once_to_its_caller_whatever_its_path) {
  // A plain function and a coroutine, each failing in its body and in its arguments: the
  // caller catches each as its own type, and the finish around them fails with nothing.
  const std::string seen = g_rt->run([]() -> task<std::string> {
    std::string seen;
    try {
      co_await finish([&seen]() -> task<> {
        for (place_id p = 0; p < apgas::places(); ++p) {
          try {
            co_await at(p, []() -> int { throw std::out_of_range("plain body"); });
          } catch (const std::out_of_range& e) {
            seen += origin_text(e) + "; ";
          }
          try {
            co_await at(p, []() -> task<int> {
              throw std::out_of_range("coroutine body");
              co_return 0;
            });
          } catch (const std::out_of_range& e) {
            seen += origin_text(e) + "; ";
          }
          try {
            co_await at(
                p, [](unreadable_if_negative u) { return u.value; }, unreadable_if_negative{-1});
          } catch (const std::runtime_error& e) {
            seen += origin_text(e) + " (plain); ";
          }
          try {
            co_await at(
                p, [](unreadable_if_negative u) -> task<int> { co_return u.value; },
                unreadable_if_negative{-1});
          } catch (const std::runtime_error& e) {
            seen += origin_text(e) + " (coroutine); ";
          }
        }
      });
      seen += "the finish did not fail";
    } catch (const apgas::multiple_exceptions& e) {
      seen += std::string("the finish failed too: ") + e.what();
    }
    co_return seen;
  });
  std::string expected;
  for (place_id p = 0; p < g_rt->places(); ++p) {
    const std::string at_p = " at " + std::to_string(p) + ": ";
    expected += "std::out_of_range" + at_p + "plain body; std::out_of_range" + at_p +
                "coroutine body; std::runtime_error" + at_p +
                "unreadable (plain); std::runtime_error" + at_p + "unreadable (coroutine); ";
  }
  EXPECT_EQ(seen, expected + "the finish did not fail");
}

/// At place q: a finish of two local asyncs that both fail.
struct two_failures_at_q {
  task<> operator()() const {
    co_await finish([]() -> task<> {
      co_await async([] { throw std::runtime_error("a at " + std::to_string(apgas::here())); });
      co_await async([] { throw std::runtime_error("b at " + std::to_string(apgas::here())); });
    });
  }
};

/// Every failure of `e` (flattened), as origin_text gives it, sorted.
std::vector<std::string> failures_of(const apgas::multiple_exceptions& e) {
  std::vector<std::string> out;
  for (const std::exception_ptr& x : e.flattened()) {
    try {
      std::rethrow_exception(x);
    } catch (const std::runtime_error& r) { // each as its own type
      out.push_back(origin_text(r));
    } catch (...) {
      out.push_back("not a runtime_error");
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

TEST(remote_exceptions, a_remote_finish_failure_arrives_whole_and_counted) {
  // X10's: finish { async at(q) { finish { async throw a; async throw b; } } } fails with both.
  const auto [what, failures, shape] =
      g_rt->run([]() -> task<std::tuple<std::string, std::vector<std::string>, std::string>> {
        try {
          co_await finish([]() -> task<> { co_await async_at(last_place(), two_failures_at_q{}); });
        } catch (const apgas::multiple_exceptions& e) {
          // The outer finish holds one failure: the inner finish's, whole.
          std::string shape = std::to_string(e.exceptions().size());
          try {
            std::rethrow_exception(e.exceptions().front());
          } catch (const apgas::multiple_exceptions& inner) {
            shape += " holding " + std::to_string(inner.exceptions().size());
          } catch (...) {
            shape += " holding no multiple_exceptions";
          }
          co_return std::tuple(std::string(e.what()), failures_of(e), shape);
        }
        co_return std::tuple(std::string("no failure"), std::vector<std::string>{}, std::string());
      });
  const std::string q = std::to_string(g_rt->places() - 1);
  EXPECT_EQ(what.rfind("2 activities failed; first: at place " + q + ": std::runtime_error: ", 0),
            0U)
      << what;
  EXPECT_EQ(failures, (std::vector<std::string>{"std::runtime_error at " + q + ": a at " + q,
                                                "std::runtime_error at " + q + ": b at " + q}));
  EXPECT_EQ(shape, "1 holding 2");
}

/// At place q: two failures in a finish of its own, and two more at the next place, in a
/// finish there: failures three finishes deep, from two places.
struct failures_two_levels_down {
  task<> operator()() const {
    co_await finish([]() -> task<> {
      co_await async_at((apgas::here() + 1) % apgas::places(), two_failures_at_q{});
      co_await two_failures_at_q{}();
    });
  }
};

TEST(remote_exceptions, counts_are_right_at_any_depth_across_places) {
  // Two places each failing twice inside a finish that another place waits for: four failures,
  // and what() says four, wherever they were.
  const auto [what, count] = g_rt->run([]() -> task<std::pair<std::string, std::size_t>> {
    try {
      co_await finish(
          []() -> task<> { co_await async_at(last_place(), failures_two_levels_down{}); });
    } catch (const apgas::multiple_exceptions& e) {
      co_return std::pair(std::string(e.what()), failures_of(e).size());
    }
    co_return std::pair(std::string("no failure"), std::size_t{0});
  });
  EXPECT_EQ(count, 4U);
  EXPECT_EQ(what.rfind("4 activities failed; first: at place ", 0), 0U) << what;
}

/// Throws E at the place it runs, made from "thrown at <place>" where E takes a string.
template <class E>
struct thrower {
  int operator()() const {
    const std::string what = "thrown at " + std::to_string(apgas::here());
    if constexpr (std::is_same_v<E, std::bad_alloc>) throw std::bad_alloc();
    else if constexpr (std::is_same_v<E, apgas::bad_place>) throw apgas::bad_place(77, what);
    else if constexpr (std::is_same_v<E, coded_error>) throw coded_error(what, 12);
    else throw E(what);
  }
};

/// An `at` of thrower<E> at p: "ok" if the caller catches exactly remote<E>, with p and the
/// same what() as there, else what it caught.
template <class E>
task<std::string> caught_as_itself(place_id p) {
  try {
    co_await at(p, thrower<E>{});
  } catch (const E& e) {
    // Exactly remote<E> (a catch of E would take a subclass too).
    const auto* r = dynamic_cast<const apgas::remote<E>*>(&e);
    if (r == nullptr) co_return "not a remote<E>: " + origin_text(e);
    const apgas::remote_origin& origin = *r; // (bad_place has a place() of its own)
    const std::string expected_what = std::is_same_v<E, std::bad_alloc>
                                          ? std::bad_alloc().what()
                                          : "thrown at " + std::to_string(p);
    if (origin.place() != p || std::string(e.what()) != expected_what ||
        origin.type_name() != apgas::detail::demangled_name(typeid(E)))
      co_return "wrong origin: " + origin_text(e);
    if constexpr (std::is_same_v<E, apgas::bad_place>) {
      if (e.place() != 77) co_return "bad_place lost its place";
    }
    if constexpr (std::is_same_v<E, coded_error>) {
      if (e.code() != 12) co_return "coded_error lost its field";
    }
    co_return "ok";
  } catch (const std::exception& e) {
    co_return "caught another type: " + apgas::detail::demangled_name(typeid(e));
  }
  co_return "nothing thrown";
}

template <class... E>
task<std::vector<std::string>> each_caught_as_itself(place_id p) {
  std::vector<std::string> out;
  ((out.push_back(apgas::detail::demangled_name(typeid(E)) + ": " +
                  co_await caught_as_itself<E>(p))),
   ...);
  co_return out;
}

TEST(remote_exceptions, known_and_registered_types_are_rethrown_as_themselves) {
  const auto results = g_rt->run([]() -> task<std::vector<std::string>> {
    std::vector<std::string> all;
    for (place_id p = 0; p < apgas::places(); ++p) {
      auto some = co_await each_caught_as_itself<
          std::logic_error, std::domain_error, std::invalid_argument, std::length_error,
          std::out_of_range, std::runtime_error, std::range_error, std::overflow_error,
          std::underflow_error, std::bad_alloc, apgas::bad_place, apgas::usage_error,
          apgas::serialization_error, apgas::clock_use_exception, config_error, coded_error>(p);
      all.insert(all.end(), some.begin(), some.end());
    }
    co_return all;
  });
  ASSERT_EQ(results.size(), 16U * g_rt->places());
  for (const std::string& r : results) EXPECT_EQ(r.substr(r.size() - 4), ": ok") << r;
}

TEST(remote_exceptions, a_clock_misused_at_another_place_throws_clock_use_exception_here) {
  const std::string seen = g_rt->run([]() -> task<std::string> {
    try {
      co_await at(last_place(), []() -> task<> {
        apgas::clock dropped;
        dropped.resume();
        co_return;
      });
    } catch (const apgas::clock_use_exception& e) {
      co_return origin_text(e).substr(0, origin_text(e).find(": "));
    }
    co_return "not caught as clock_use_exception";
  });
  EXPECT_EQ(seen, "apgas::clock_use_exception at " + std::to_string(g_rt->places() - 1));
}

TEST(remote_exceptions, failures_through_a_finish_rethrow_as_their_own_type) {
  const std::vector<std::string> seen = g_rt->run([]() -> task<std::vector<std::string>> {
    std::vector<std::string> seen;
    try {
      co_await finish([]() -> task<> {
        for (place_id p = 0; p < apgas::places(); ++p)
          co_await async_at(
              p, [](int k) { throw std::out_of_range("index " + std::to_string(k)); }, int(p));
      });
    } catch (const apgas::multiple_exceptions& e) {
      for (const std::exception_ptr& x : e.flattened()) {
        try {
          std::rethrow_exception(x);
        } catch (const std::out_of_range& r) {
          seen.push_back(std::to_string(apgas::origin_of(x)->place()) + " " + r.what());
        } catch (...) {
          seen.push_back("another type");
        }
      }
    }
    std::sort(seen.begin(), seen.end());
    co_return seen;
  });
  std::vector<std::string> expected;
  for (place_id p = 0; p < g_rt->places(); ++p)
    expected.push_back(std::to_string(p) + " index " + std::to_string(p));
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(seen, expected);
}

TEST(remote_exceptions, other_types_arrive_as_remote_exception_with_their_name_and_text) {
  const std::vector<std::string> seen = g_rt->run([]() -> task<std::vector<std::string>> {
    std::vector<std::string> seen;
    const place_id last = last_place();
    try {
      co_await at(last, []() -> int { throw unregistered_error("not registered"); });
    } catch (const apgas::remote_exception& e) {
      seen.push_back(std::to_string(e.place()) + " " + e.type_name() + " | " + e.what_there() +
                     " | " + e.text());
    }
    try {
      co_await at(last, []() -> int { throw 42; });
    } catch (const apgas::remote_exception& e) {
      seen.push_back(e.type_name());
    }
    // Through two places, each keeps the place where it was thrown: the type that survives and
    // the one that does not.
    try {
      co_await at(0, []() -> task<int> {
        co_return co_await at(last_place(), []() -> int { throw unregistered_error("deep"); });
      });
    } catch (const apgas::remote_exception& e) {
      seen.push_back(std::to_string(e.place()) + " " + e.text());
    }
    try {
      co_await at(0, []() -> task<int> {
        co_return co_await at(last_place(), []() -> int { throw std::length_error("deep"); });
      });
    } catch (const std::length_error& e) {
      seen.push_back(origin_text(e));
    }
    co_return seen;
  });
  const std::string last = std::to_string(g_rt->places() - 1);
  EXPECT_EQ(seen, (std::vector<std::string>{
                      last + " unregistered_error | not registered | unregistered_error: not "
                             "registered",
                      "int", last + " unregistered_error: deep",
                      "std::length_error at " + last + ": deep"}));
}

TEST(remote_exceptions, collectives_rethrow_each_place_failure_as_its_type) {
  // at_each_place (flat, or along a tree beyond --tree-arity + 1 places) and for_each_place.
  const std::vector<std::string> seen = g_rt->run([]() -> task<std::vector<std::string>> {
    std::vector<std::string> seen;
    const auto first_failure = [](const apgas::multiple_exceptions& e) {
      try {
        std::rethrow_exception(e.flattened().at(0));
      } catch (const std::out_of_range& r) {
        return origin_text(r);
      } catch (...) {
        return std::string("another type");
      }
    };
    try {
      (void)co_await apgas::at_each_place([]() -> int {
        if (apgas::here() == last_place()) throw std::out_of_range("no value here");
        return 1;
      });
    } catch (const apgas::multiple_exceptions& e) {
      seen.push_back(first_failure(e));
    }
    try {
      co_await apgas::for_each_place([] {
        if (apgas::here() == last_place()) throw std::out_of_range("nothing done here");
      });
    } catch (const apgas::multiple_exceptions& e) {
      seen.push_back(first_failure(e));
    }
    co_return seen;
  });
  const std::string last = std::to_string(g_rt->places() - 1);
  EXPECT_EQ(seen,
            (std::vector<std::string>{"std::out_of_range at " + last + ": no value here",
                                      "std::out_of_range at " + last + ": nothing done here"}));
}

/// The first failure of a failed run, as origin_text gives it.
std::string first_run_failure(const std::exception_ptr& e) {
  try {
    std::rethrow_exception(e);
  } catch (const apgas::multiple_exceptions& m) {
    return m.flattened().size() == 1 ? first_run_failure(m.flattened()[0]) : "several failures";
  } catch (const std::length_error& x) {
    return origin_text(x);
  } catch (...) {
    return "another type";
  }
}

TEST(remote_exceptions, a_failed_run_reaches_every_place_with_its_types) {
  // A remote async's failure, and a root that fails itself: at place 0 as they are, elsewhere
  // as they arrive from place 0.
  std::vector<std::string> seen;
  try {
    g_rt->run([]() -> task<> {
      co_await async_at(last_place(), [] { throw std::length_error("remote async"); });
    });
  } catch (...) {
    seen.push_back(first_run_failure(std::current_exception()));
  }
  try {
    g_rt->run([]() -> task<> {
      throw std::length_error("the root");
      co_return;
    });
  } catch (...) {
    seen.push_back(first_run_failure(std::current_exception()));
  }
  const std::string root =
      g_rt->here() == 0 ? "thrown here: the root" : "std::length_error at 0: the root";
  EXPECT_EQ(
      seen,
      (std::vector<std::string>{
          "std::length_error at " + std::to_string(g_rt->places() - 1) + ": remote async", root}));
}

TEST(remote_exceptions, a_global_ref_used_wrongly_throws_and_says_why) {
  const std::vector<std::string> seen = g_rt->run([]() -> task<std::vector<std::string>> {
    std::vector<std::string> seen;
    try {
      (void)*apgas::global_ref<long>{};
    } catch (const std::invalid_argument& e) {
      seen.push_back(e.what());
    }
    static long value = 7;
    const apgas::global_ref<long> ref(value);
    seen.push_back(std::to_string(*ref));
    for (place_id p = 1; p < apgas::places(); ++p) {
      try {
        co_await at(
            p, [](apgas::global_ref<long> r) { return *r; }, ref);
      } catch (const apgas::bad_place& e) {
        seen.push_back(std::to_string(e.place()) + ": " + e.what());
      }
    }
    co_return seen;
  });
  std::vector<std::string> expected{"apgas: a null global_ref was dereferenced", "7"};
  for (place_id p = 1; p < g_rt->places(); ++p)
    expected.push_back(std::to_string(p) + ": apgas: a global_ref to an object at place 0 was " +
                       "dereferenced at place " + std::to_string(p) +
                       "; use it at its home (at(ref.home(), ...))");
  EXPECT_EQ(seen, expected);
}

/// Place 0's state dump shows a failure its finish holds while it waits for the rest: the
/// usual reason why a program hangs after an error (the failed activity never did what another
/// waits for).
bool g_dump_release = false; // at place 0; changed in atomic blocks only
struct release_the_waiter {
  task<> operator()() const {
    co_await apgas::atomic([] { g_dump_release = true; });
  }
};
struct watch_the_dump {
  task<> operator()() const {
    for (;;) {
      const std::string dump = co_await at(
          0, [] { return apgas::detail::message_dispatcher::current().describe_state(); });
      if (dump.find("1 failure(s) gathered") != std::string::npos &&
          dump.find("std::runtime_error: the failure a hang hides") != std::string::npos)
        break;
    }
    co_await async_at(0, release_the_waiter{});
  }
};
TEST(remote_exceptions, the_state_dump_shows_the_failures_a_waiting_finish_holds) {
  if (g_rt->places() < 2) GTEST_SKIP() << "needs a place to read the dump from";
  const std::string what = g_rt->run([]() -> task<std::string> {
    co_await apgas::atomic([] { g_dump_release = false; });
    try {
      co_await finish([]() -> task<> {
        co_await async([]() -> task<> {
          throw std::runtime_error("the failure a hang hides");
          co_return;
        }());
        co_await async(
            []() -> task<> { co_await apgas::when([] { return g_dump_release; }, [] {}); }());
        co_await async_at(1, watch_the_dump{});
      });
    } catch (const apgas::multiple_exceptions& e) {
      co_return e.what();
    }
    co_return "no failure";
  });
  EXPECT_NE(what.find("the failure a hang hides"), std::string::npos) << what;
}

} // namespace

int main(int argc, char** argv) { return apgas_test::run_places_tests(argc, argv, g_rt); }
