// Teams and their collectives under mpiexec at 1, 2 and 4 places (and 2 workers): every
// collective's values checked at every member, reductions with MPI's operations and with user
// operations (whose rank order must hold), sub-teams, misuse, and the state dump of a
// collective that waits for a member.
#include <apgas/apgas.hpp>
#include <apgas/detail/message_dispatcher.hpp>

#include "../../places_test_main.hpp"
#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <numeric>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

using apgas::place_id;
using apgas::task;
using apgas::team;

apgas::runtime* g_rt = nullptr;

/// Runs body(team::world()) at every place, one activity each; counts the failures it throws.
template <class F>
void at_every_place(F) {
  g_rt->run([]() -> task<> { co_await apgas::for_each_place(F{}); });
}

struct world_facts {
  task<> operator()() const {
    const team t = team::world();
    if (t.size() != apgas::places() || t.rank() != apgas::here())
      throw std::runtime_error("world: size or rank");
    for (place_id r = 0; r < t.size(); ++r)
      if (t.place(r) != r) throw std::runtime_error("world: place of a rank");
    co_return;
  }
};
TEST(team, the_world_team_is_every_place_ranked_by_place) { at_every_place(world_facts{}); }

struct barriers {
  task<> operator()() const {
    const team t = team::world();
    for (int i = 0; i < 200; ++i) co_await t.barrier();
  }
};
TEST(team, barriers_in_a_row) { at_every_place(barriers{}); }

/// Digits written one after the other: associative, not commutative (the ranks' order must
/// hold), on a struct (bytes to MPI, through a user operation).
struct digits {
  long value;
  long length;
};
struct concat_digits {
  digits operator()(const digits& a, const digits& b) const {
    long shift = 1;
    for (long i = 0; i < b.length; ++i) shift *= 10;
    return {a.value * shift + b.value, a.length + b.length};
  }
};

struct reductions {
  task<> operator()() const {
    const team t = team::world();
    const long n = t.size();
    const long me = t.rank();
    const auto check = [](bool ok, const char* what) {
      if (!ok) throw std::runtime_error(what);
    };
    check(co_await t.allreduce(me + 1, apgas::sum) == n * (n + 1) / 2, "sum");
    check(co_await t.allreduce(me, apgas::max) == n - 1, "max");
    check(co_await t.allreduce(static_cast<double>(me) - 0.5, apgas::min) == -0.5, "min double");
    check(co_await t.allreduce(static_cast<std::uint8_t>(1), apgas::sum) == n, "sum u8");
    const std::array<double, 3> v{1.0, static_cast<double>(me), -1.0 * me};
    const std::array<double, 3> s = co_await t.allreduce(v, apgas::sum);
    check(s[0] == n && s[1] == n * (n - 1) / 2.0 && s[2] == -n * (n - 1) / 2.0, "array sum");
    // Rank order: 1, 2, 3, 4 -> 1234 (digits of ranks + 1).
    long expect = 0;
    for (long r = 0; r < n; ++r) expect = expect * 10 + (r + 1);
    check((co_await t.allreduce(digits{me + 1, 1}, concat_digits{})).value == expect,
          "user op in rank order");
    std::vector<long> range(5);
    std::iota(range.begin(), range.end(), me);
    co_await t.allreduce(std::span<long>(range), apgas::sum);
    for (long i = 0; i < 5; ++i)
      check(range[static_cast<std::size_t>(i)] == n * i + n * (n - 1) / 2, "range");
    const std::optional<long> at_root = co_await t.reduce(me, apgas::sum, n - 1);
    check(me == n - 1 ? at_root == n * (n - 1) / 2 : !at_root.has_value(), "reduce at root");
    check(co_await t.scan(me + 1, apgas::sum) == (me + 1) * (me + 2) / 2, "scan");
    const std::optional<long> ex = co_await t.exscan(me + 1, apgas::sum);
    check(me == 0 ? !ex.has_value() : ex == me * (me + 1) / 2, "exscan");
  }
};
TEST(team, reductions_with_mpis_operations_and_user_operations) { at_every_place(reductions{}); }

/// Small collectives (point to point) and large ones (MPI's nonblocking collectives) in a
/// row on the world and on a split team, each checked: their messages keep to their call.
struct small_and_large_in_a_row {
  task<> operator()() const {
    const team world = team::world();
    const team half =
        co_await world.split(static_cast<int>(world.rank() % 2), static_cast<int>(world.rank()));
    const auto check = [](bool ok, const char* what) {
      if (!ok) throw std::runtime_error(what);
    };
    std::vector<double> large(4096 / sizeof(double) + 1); // past the point-to-point size
    for (int i = 0; i < 300; ++i) {
      const team& t = i % 4 == 3 ? half : world;
      const long n = t.size();
      const long me = t.rank();
      switch (i % 3) {
      case 0:
        co_await t.barrier();
        break;
      case 1: {
        long expect = 0;
        for (long r = 0; r < n; ++r) expect = expect * 10 + (r + 1 + i) % 9 + 1;
        const digits d{(me + 1 + i) % 9 + 1, 1};
        check((co_await t.allreduce(d, concat_digits{})).value == expect, "small user op");
        break;
      }
      default:
        for (std::size_t k = 0; k < large.size(); ++k)
          large[k] = static_cast<double>(me * static_cast<long>(k) + i);
        co_await t.allreduce(std::span<double>(large), apgas::sum);
        for (std::size_t k = 0; k < large.size(); ++k)
          check(large[k] == static_cast<double>(static_cast<long>(k) * n * (n - 1) / 2 + n * i),
                "large sum, every element");
        for (std::size_t k = 0; k < large.size(); ++k)
          large[k] = static_cast<double>((me + static_cast<long>(k)) % n);
        co_await t.allreduce(std::span<double>(large), apgas::max);
        for (double x : large) check(x == static_cast<double>(n - 1), "large max");
        check(co_await t.allreduce(me * 1000 + i, apgas::max) == (n - 1) * 1000 + i, "max");
      }
    }
  }
};
TEST(team, small_and_large_collectives_in_a_row_keep_to_their_calls) {
  at_every_place(small_and_large_in_a_row{});
}

struct moves {
  task<> operator()() const {
    const team t = team::world();
    const place_id n = t.size();
    const place_id me = t.rank();
    const auto check = [](bool ok, const char* what) {
      if (!ok) throw std::runtime_error(what);
    };
    long v = me == n - 1 ? 42 : -1;
    co_await t.broadcast(v, n - 1);
    check(v == 42, "broadcast");
    std::vector<int> span(3, static_cast<int>(me));
    co_await t.broadcast(std::span<int>(span), 0);
    check(span == std::vector<int>(3, 0), "broadcast of a range");
    const std::vector<place_id> at_0 = co_await t.gather(me * 2, 0);
    if (me == 0) {
      check(at_0.size() == n, "gather size");
      for (place_id r = 0; r < n; ++r) check(at_0[r] == r * 2, "gather");
    } else {
      check(at_0.empty(), "gather elsewhere");
    }
    const std::vector<place_id> all = co_await t.allgather(me + 100);
    for (place_id r = 0; r < n; ++r) check(all[r] == r + 100, "allgather");
    std::vector<int> mine(me + 1, static_cast<int>(me)); // rank r gives r + 1 values r
    const auto v_all = co_await t.allgatherv(std::span<const int>(mine));
    for (place_id r = 0; r < n; ++r)
      check(v_all[r] == std::vector<int>(r + 1, static_cast<int>(r)), "allgatherv");
    std::vector<long> send(n * 2); // block r: (me, r) twice
    for (place_id r = 0; r < n; ++r) send[2 * r] = send[2 * r + 1] = me * 1000 + r;
    const std::vector<long> got = co_await t.alltoall(std::span<const long>(send));
    for (place_id r = 0; r < n; ++r)
      check(got[2 * r] == r * 1000 + me && got[2 * r + 1] == got[2 * r], "alltoall");
    std::vector<std::vector<double>> blocks(n);
    for (place_id r = 0; r < n; ++r) blocks[r].assign(me + r, me * 0.5 + r); // sizes differ
    const auto recv = co_await t.alltoallv(blocks);
    for (place_id r = 0; r < n; ++r)
      check(recv[r] == std::vector<double>(r + me, r * 0.5 + me), "alltoallv");
    // The same on flat buffers with the counts known at both ends.
    std::vector<std::size_t> send_counts, recv_counts;
    std::vector<double> flat_send, flat_recv;
    for (place_id r = 0; r < n; ++r) {
      send_counts.push_back(me + r);
      recv_counts.push_back(r + me);
      flat_send.insert(flat_send.end(), blocks[r].begin(), blocks[r].end());
    }
    flat_recv.resize(flat_send.size() + 3, -1.0); // room to spare stays as it was
    co_await t.alltoallv(std::span<const double>(flat_send), send_counts,
                         std::span<double>(flat_recv), recv_counts);
    std::size_t at = 0;
    for (place_id r = 0; r < n; ++r)
      for (std::size_t k = 0; k < r + me; ++k)
        check(flat_recv[at++] == r * 0.5 + me, "flat alltoallv");
    check(flat_recv.back() == -1.0, "flat alltoallv writes past its counts");
    bool refused = false;
    try {
      co_await t.alltoallv(std::span<const double>(flat_send), send_counts,
                           std::span<double>(flat_recv).first(0), recv_counts);
    } catch (const std::invalid_argument&) {
      refused = true;
    }
    check(refused || n == 1, "flat alltoallv with a buffer too small");
  }
};
TEST(team, broadcast_gather_allgather_and_exchanges) { at_every_place(moves{}); }

struct splits {
  task<> operator()() const {
    const team t = team::world();
    const place_id me = t.rank();
    // Even and odd places; the key reverses the order.
    const team half = co_await t.split(static_cast<int>(me % 2), -static_cast<int>(me));
    std::vector<place_id> expect;
    for (place_id p = t.size(); p-- > 0;)
      if (p % 2 == me % 2) expect.push_back(p);
    if (half.places() != expect) throw std::runtime_error("split: members");
    const long sum = co_await half.allreduce(static_cast<long>(me), apgas::sum);
    long want = 0;
    for (place_id p : expect) want += p;
    if (sum != want) throw std::runtime_error("split: allreduce");
    // Place 0 asks for no team; the others make one.
    const team rest = co_await t.split(me == 0 ? -1 : 0, 0);
    if (me == 0 ? static_cast<bool>(rest) : rest.size() != t.size() - 1)
      throw std::runtime_error("split: negative color");
    if (rest) co_await rest.barrier();
  }
};
TEST(team, split_makes_teams_by_color_ranked_by_key) { at_every_place(splits{}); }

struct many_teams_at_once {
  task<> operator()() const {
    // Several activities of each place, each on a team of its own (every place in each), run
    // their collectives concurrently: different teams need no common order.
    const team t = team::world();
    std::vector<team> teams;
    for (int i = 0; i < 4; ++i) teams.push_back(co_await t.split(0, 0));
    std::atomic<long> bad{0};
    co_await apgas::finish([&]() -> task<> {
      for (int i = 0; i < 4; ++i)
        co_await apgas::async([&, i]() -> task<> {
          for (int k = 0; k < 50; ++k) {
            const long s = co_await teams[static_cast<std::size_t>(i)].allreduce(
                static_cast<long>(i + k), apgas::sum);
            if (s != (i + k) * static_cast<long>(apgas::places())) ++bad;
          }
        });
    });
    if (bad.load() != 0) throw std::runtime_error("concurrent teams");
  }
};
TEST(team, activities_on_different_teams_run_their_collectives_concurrently) {
  at_every_place(many_teams_at_once{});
}

struct throwing_op {
  long operator()(long a, long b) const {
    if (a + b > 1) throw std::overflow_error("throwing_op: over 1");
    return a + b;
  }
};
struct a_throwing_operation {
  task<> operator()() const {
    const team t = team::world();
    if (t.size() == 1) co_return; // nothing to combine
    bool threw_somewhere = false;
    try {
      (void)co_await t.allreduce(1L, throwing_op{});
    } catch (const std::overflow_error&) {
      threw_somewhere = true;
    }
    // The places that combined saw it; tell everyone whether any did.
    const long any = co_await t.allreduce(threw_somewhere ? 1L : 0L, apgas::max);
    if (any != 1) throw std::runtime_error("the operation's exception reached nobody");
  }
};
TEST(team, an_operation_that_throws_fails_the_collective_where_it_threw) {
  at_every_place(a_throwing_operation{});
}

TEST(team, a_collective_on_no_team_throws) {
  const std::string what = g_rt->run([]() -> task<std::string> {
    try {
      co_await team().barrier();
    } catch (const std::logic_error& e) {
      co_return e.what();
    }
    co_return "";
  });
  EXPECT_NE(what.find("no team"), std::string::npos) << what;
}

struct dump_shows_the_waiting_barrier {
  task<> operator()() const {
    const team t = team::world();
    if (t.rank() == 1) {
      // Place 0 waits in the barrier for us: its state dump says so.
      for (;;) {
        const std::string dump = co_await apgas::at(
            0, [] { return apgas::detail::message_dispatcher::current().describe_state(); });
        if (dump.find("barrier on team 0") != std::string::npos &&
            dump.find("team_test.cpp") != std::string::npos)
          break;
      }
    }
    co_await t.barrier();
  }
};
TEST(team, the_state_dump_lists_the_collective_a_place_waits_in) {
  if (g_rt->places() < 2) GTEST_SKIP() << "needs a member that has not called yet";
  at_every_place(dump_shows_the_waiting_barrier{});
}

} // namespace

int main(int argc, char** argv) { return apgas_test::run_places_tests(argc, argv, g_rt); }
