// Distributed arrays under mpiexec at 1, 2 and 4 places (and 2 workers): every distribution's
// elements where the distribution says, get/put of elements and ranges from every place, halo
// exchanges (1D and 2D, several in a row, compared with the neighbours' values), reductions, and
// misuse.
#include <apgas/apgas.hpp>

#include "../../places_test_main.hpp"
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

using apgas::dist_array;
using apgas::dist_array_2d;
using apgas::distribution;
using apgas::distribution_2d;
using apgas::place_id;
using apgas::task;
using apgas::team;

apgas::runtime* g_rt = nullptr;

template <class F>
void at_every_place(F) {
  g_rt->run([]() -> task<> { co_await apgas::for_each_place(F{}); });
}

void check(bool ok, const std::string& what) {
  if (!ok) throw std::runtime_error(what + " at place " + std::to_string(apgas::here()));
}

/// Every element's value is its global index times 3 (a value no other element has).
long value_of(std::size_t i) { return static_cast<long>(i) * 3; }

distribution make_dist(int which, std::size_t n, place_id parts) {
  switch (which) {
  case 0:
    return distribution::block(n, parts);
  case 1:
    return distribution::cyclic(n, parts);
  default:
    return distribution::block_cyclic(n, parts, 5);
  }
}

struct elements_and_remote_access {
  task<> operator()() const {
    const team all = team::world();
    for (int which = 0; which < 3; ++which)
      for (std::size_t n : {1UL, 7UL, 100UL, 1001UL}) {
        auto a = co_await dist_array<long>::make(all, make_dist(which, n, all.size()));
        check(a.size() == n, "size");
        a.for_each_local([](std::size_t g, long& x) { x = value_of(g); });
        for (std::size_t i = 0; i < a.local().size(); ++i)
          check(a.owner(a.global_index(i)) == apgas::here(), "owner of a local element");
        co_await all.barrier(); // every part written
        // Single elements and a range from every place, through rget.
        for (std::size_t i : {0UL, n / 2, n - 1}) check(co_await a.get(i) == value_of(i), "get");
        std::vector<long> all_values(n);
        co_await a.get(0, all_values);
        for (std::size_t i = 0; i < n; ++i) check(all_values[i] == value_of(i), "ranged get");
        co_await all.barrier(); // every read done before anyone writes
        // Each place writes the elements i with i % places == here, negated.
        for (std::size_t i = apgas::here(); i < n; i += all.size()) co_await a.put(i, -value_of(i));
        co_await all.barrier();
        a.for_each_local([](std::size_t g, long& x) { check(x == -value_of(g), "put"); });
        // A range put from place 0 across every owner.
        co_await all.barrier();
        if (apgas::here() == 0) {
          std::vector<long> ones(n, 1);
          co_await a.put(0, std::span<const long>(ones));
        }
        co_await all.barrier();
        a.for_each_local([](std::size_t, long& x) { check(x == 1, "ranged put"); });
        check(co_await a.reduce(0L, apgas::sum) == static_cast<long>(n), "reduce");
        co_await all.barrier(); // nobody reads the array after it is gone
      }
  }
};
TEST(dist_array, elements_live_where_the_distribution_says_and_are_reached_from_everywhere) {
  at_every_place(elements_and_remote_access{});
}

struct halo_1d {
  task<> operator()() const {
    const team all = team::world();
    const std::size_t ghosts = 2;
    const std::size_t n = 40 * all.size() + 3;
    auto a = co_await dist_array<long>::make(all, distribution::block(n, all.size()), ghosts);
    for (long step = 0; step < 20; ++step) {
      a.for_each_local([step](std::size_t g, long& x) { x = value_of(g) + step; });
      co_await a.exchange_halo();
      const std::size_t first = a.global_index(0);
      const std::size_t last = a.global_index(a.local().size() - 1);
      for (std::size_t k = 0; k < ghosts; ++k) {
        if (first >= ghosts)
          check(a.ghosts_left()[k] == value_of(first - ghosts + k) + step, "left ghost");
        if (last + ghosts < n)
          check(a.ghosts_right()[k] == value_of(last + 1 + k) + step, "right ghost");
      }
    }
    co_await all.barrier();
  }
};
TEST(dist_array, halo_exchange_1d_fills_ghosts_with_the_neighbours_boundaries) {
  at_every_place(halo_1d{});
}

/// The 2D value of global (i, j).
long value_2d(std::size_t i, std::size_t j, long step) {
  return static_cast<long>(i * 1000 + j) + step * 1'000'000;
}

struct halo_2d {
  task<> operator()() const {
    const team all = team::world();
    const std::size_t ghosts = 1;
    const auto grid = distribution_2d::square_grid(all.size());
    const std::size_t rows = 13 * grid.first + 1, cols = 11 * grid.second + 2;
    auto a = co_await dist_array_2d<long>::make(
        all, distribution_2d::block(rows, cols, grid.first, grid.second), ghosts);
    const auto gi = [&](std::ptrdiff_t i) {
      return static_cast<std::ptrdiff_t>(a.first_row()) + i;
    };
    const auto gj = [&](std::ptrdiff_t j) {
      return static_cast<std::ptrdiff_t>(a.first_col()) + j;
    };
    const auto r = static_cast<std::ptrdiff_t>(a.local_rows());
    const auto c = static_cast<std::ptrdiff_t>(a.local_cols());
    for (long step = 0; step < 10; ++step) {
      a.for_each_local([step](std::size_t i, std::size_t j, long& x) { x = value_2d(i, j, step); });
      co_await a.exchange_halo();
      const auto expect = [&](std::ptrdiff_t i, std::ptrdiff_t j, const char* what) {
        check(a(i, j) ==
                  value_2d(static_cast<std::size_t>(gi(i)), static_cast<std::size_t>(gj(j)), step),
              what);
      };
      for (std::ptrdiff_t j = 0; j < c; ++j) {
        if (gi(0) > 0) expect(-1, j, "ghost row above");
        if (gi(r) < static_cast<std::ptrdiff_t>(rows)) expect(r, j, "ghost row below");
      }
      for (std::ptrdiff_t i = 0; i < r; ++i) {
        if (gj(0) > 0) expect(i, -1, "ghost column left");
        if (gj(c) < static_cast<std::ptrdiff_t>(cols)) expect(i, c, "ghost column right");
      }
    }
    // Remote elements through rget, and a reduction.
    co_await all.barrier();
    check(co_await a.get(rows - 1, cols - 1) == value_2d(rows - 1, cols - 1, 9), "2D get");
    co_await all.barrier();
    if (apgas::here() == 0) co_await a.put(rows - 1, 0, -1);
    co_await all.barrier();
    check(co_await a.get(rows - 1, 0) == -1, "2D put");
    const long largest = co_await a.reduce(std::numeric_limits<long>::min(), apgas::max);
    check(largest == value_2d(rows - 1, cols - 1, 9), "2D reduce");
    co_await all.barrier();
  }
};
TEST(dist_array, halo_exchange_2d_fills_ghost_rows_and_columns) { at_every_place(halo_2d{}); }

/// Places other than 0 that reached an exchange (at place 0; changed in atomic blocks only).
long g_arrivals = 0;
struct note_arrival {
  task<> operator()() const {
    co_await apgas::atomic([] { ++g_arrivals; });
  }
};

struct halo_2d_wide_and_late {
  task<> operator()() const {
    // Two ghost cells a side, every one checked (the grid's outer ghosts stay 0, the corners
    // are never written); place 0 comes late to every other exchange (it starts once every
    // other place has told it that it reached the exchange), so that its neighbours' messages
    // arrive before its receives are posted and wait for them.
    const team all = team::world();
    // Before make, which no place leaves before every place entered it: no arrival yet.
    if (apgas::here() == 0) co_await apgas::atomic([] { g_arrivals = 0; });
    const std::ptrdiff_t g = 2;
    const auto grid = distribution_2d::square_grid(all.size());
    const std::size_t rows = 7 * grid.first + 2, cols = 5 * grid.second + 3;
    auto a = co_await dist_array_2d<long>::make(
        all, distribution_2d::block(rows, cols, grid.first, grid.second), g);
    const auto r = static_cast<std::ptrdiff_t>(a.local_rows());
    const auto c = static_cast<std::ptrdiff_t>(a.local_cols());
    const auto i0 = static_cast<std::ptrdiff_t>(a.first_row());
    const auto j0 = static_cast<std::ptrdiff_t>(a.first_col());
    const auto corner = [&](std::ptrdiff_t i, std::ptrdiff_t j) {
      return (i < 0 || i >= r) && (j < 0 || j >= c);
    };
    for (std::ptrdiff_t i = -g; i < r + g; ++i)
      for (std::ptrdiff_t j = -g; j < c + g; ++j)
        if (corner(i, j)) a(i, j) = -7;
    for (long step = 0; step < 6; ++step) {
      a.for_each_local([step](std::size_t i, std::size_t j, long& x) { x = value_2d(i, j, step); });
      if (step % 2 == 1) {
        const long others = static_cast<long>(all.size()) - 1;
        const long expected = others * (step + 1) / 2;
        if (apgas::here() != 0)
          co_await apgas::finish([]() -> task<> { co_await apgas::async_at(0, note_arrival{}); });
        else co_await apgas::when([expected] { return g_arrivals >= expected; }, [] {});
      }
      co_await a.exchange_halo();
      for (std::ptrdiff_t i = -g; i < r + g; ++i)
        for (std::ptrdiff_t j = -g; j < c + g; ++j) {
          if (i >= 0 && i < r && j >= 0 && j < c) continue; // the part itself
          const std::ptrdiff_t gi = i0 + i, gj = j0 + j;
          const bool inside = gi >= 0 && gi < static_cast<std::ptrdiff_t>(rows) && gj >= 0 &&
                              gj < static_cast<std::ptrdiff_t>(cols);
          const long expect =
              corner(i, j) ? -7
              : inside ? value_2d(static_cast<std::size_t>(gi), static_cast<std::size_t>(gj), step)
                       : 0;
          check(a(i, j) == expect, "a ghost cell two wide, step " + std::to_string(step));
        }
    }
    co_await all.barrier();
  }
};
TEST(dist_array, halo_exchange_2d_two_wide_with_a_late_place) {
  at_every_place(halo_2d_wide_and_late{});
}

struct rows_2d {
  task<> operator()() const {
    // Runs of a row from every place, over column distributions that split a row among
    // several owners in one run (block) and in many (block-cyclic).
    const team all = team::world();
    const auto grid = distribution_2d::square_grid(all.size());
    const std::size_t rows = 5 * grid.first + 1, cols = 7 * grid.second + 3;
    for (const distribution_2d d :
         {distribution_2d::block(rows, cols, grid.first, grid.second),
          distribution_2d{distribution::block(rows, grid.first),
                          distribution::block_cyclic(cols, grid.second, 2)}}) {
      auto a = co_await dist_array_2d<long>::make(all, d);
      a.for_each_local([](std::size_t i, std::size_t j, long& x) { x = value_2d(i, j, 0); });
      co_await all.barrier(); // every part written
      std::vector<long> row(cols);
      for (std::size_t i = 0; i < rows; ++i) {
        co_await a.get(i, 0, std::span<long>(row));
        for (std::size_t j = 0; j < cols; ++j) check(row[j] == value_2d(i, j, 0), "2D row get");
      }
      std::vector<long> middle(cols - 2);
      co_await a.get(rows / 2, 1, std::span<long>(middle));
      for (std::size_t j = 0; j < middle.size(); ++j)
        check(middle[j] == value_2d(rows / 2, j + 1, 0), "2D get of a run inside a row");
      co_await all.barrier(); // every read done before anyone writes
      // Each place writes the rows i with i % places == here, from column 1, negated.
      for (std::size_t i = apgas::here(); i < rows; i += all.size()) {
        for (std::size_t j = 0; j < middle.size(); ++j) middle[j] = -value_2d(i, j + 1, 0);
        co_await a.put(i, 1, std::span<const long>(middle));
      }
      co_await all.barrier();
      a.for_each_local([cols](std::size_t i, std::size_t j, long& x) {
        const bool written = j >= 1 && j + 1 < cols;
        check(x == (written ? -1 : 1) * value_2d(i, j, 0), "2D row put");
      });
      bool threw = false;
      try {
        co_await a.get(0, cols - 2, std::span<long>(row).first(3));
      } catch (const std::out_of_range&) {
        threw = true;
      }
      check(threw, "a run past its row's end is refused");
      co_await all.barrier(); // nobody reads the array after it is gone
    }
  }
};
TEST(dist_array, runs_of_a_2d_row_are_reached_from_everywhere) { at_every_place(rows_2d{}); }

struct two_arrays_interleaved {
  task<> operator()() const {
    // Two arrays exchanging in turn: each exchange's messages reach the array they belong to.
    const team all = team::world();
    const std::size_t n = 10 * all.size();
    auto a = co_await dist_array<long>::make(all, distribution::block(n, all.size()), 1);
    auto b = co_await dist_array<long>::make(all, distribution::block(n, all.size()), 1);
    for (long step = 0; step < 10; ++step) {
      a.for_each_local([step](std::size_t g, long& x) { x = value_of(g) + step; });
      b.for_each_local([step](std::size_t g, long& x) { x = -value_of(g) - step; });
      co_await b.exchange_halo();
      co_await a.exchange_halo();
      if (apgas::here() > 0) {
        const std::size_t left = a.global_index(0) - 1;
        check(a.ghosts_left()[0] == value_of(left) + step, "array a's ghost");
        check(b.ghosts_left()[0] == -value_of(left) - step, "array b's ghost");
      }
    }
    co_await all.barrier();
  }
};
TEST(dist_array, exchanges_of_two_arrays_do_not_mix) { at_every_place(two_arrays_interleaved{}); }

struct misuse {
  task<> operator()() const {
    const team all = team::world();
    bool threw = false;
    try {
      (void)co_await dist_array<long>::make(all, distribution::block(10, all.size() + 1));
    } catch (const std::invalid_argument&) {
      threw = true;
    }
    check(threw, "a distribution of another size is refused");
    threw = false;
    try {
      (void)co_await dist_array<long>::make(all, distribution::cyclic(10, all.size()), 1);
    } catch (const std::invalid_argument&) {
      threw = true;
    }
    check(threw, "ghosts without a block distribution are refused");
    auto a = co_await dist_array<long>::make(all, distribution::block(4, all.size()));
    threw = false;
    try {
      (void)co_await a.get(4);
    } catch (const std::out_of_range&) {
      threw = true;
    }
    check(threw, "an index past the end is refused");
    co_await all.barrier();
  }
};
TEST(dist_array, misuse_throws) { at_every_place(misuse{}); }

} // namespace

int main(int argc, char** argv) { return apgas_test::run_places_tests(argc, argv, g_rt); }
