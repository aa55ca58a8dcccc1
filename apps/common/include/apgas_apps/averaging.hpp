/// @file The averaging app's kernel for apgas_apps::stencil_main (see stencil.hpp): its arrays,
/// their update (stencil_update.hpp), the sequential loop and its command line's names. Its
/// main is apps/averaging/main.cpp; bench_lockstep runs it beside an OpenMP loop.
#pragma once

#include "apgas_apps/stencil.hpp"
#include <apgas_apps/stencil_update.hpp>

#include <algorithm>
#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace apgas_apps {
/// @brief The averaging kernel (see the file comment).
struct averaging_kernel {
  static constexpr std::string_view k_name = "averaging";
  static constexpr std::string_view k_seq_name = "averaging_seq";
  static constexpr std::string_view k_summary =
      "One-dimensional iterative averaging (the uClocks paper's kernel): N points between two\n"
      "fixed ends (0 and 1; they start at 0 and 1 too), a dist_array in one block per place,\n"
      "whose ghost cells exchange_halo fills every phase; each block in A chunks, one activity\n"
      "each. Every phase each point becomes the average of its neighbours, until the largest\n"
      "change is below epsilon: with one clock whose advance carries the largest change\n"
      "(--sync clock), or with one finish per phase and a team reduction (--sync finish).\n"
      "Checked against the sequential loop (the same phases, the same values).";
  // The largest change of a phase shrinks as one over the number of phases (about 0.48 /
  // epsilon phases), whatever N while the front has not crossed the N points: epsilon sets
  // the number of phases, N the work of each.
  static constexpr std::uint64_t k_default_n = 100'000;
  static constexpr double k_default_epsilon = 1e-4; // about 5,000 phases
  static constexpr std::uint64_t k_max_n = std::uint64_t{1} << 32;
  static constexpr std::string_view k_n_help = "points";
  static constexpr std::string_view k_cell = "point", k_cell_plural = "points", k_rows = "points";
  static std::string shape(std::uint64_t n) { return std::to_string(n); }
  static double cells(std::uint64_t n) { return static_cast<double>(n); }
  static std::string where(std::size_t i, std::uint64_t) { return fmt::format("point {}", i + 1); }

  using array = apgas::dist_array<double>;

  /// Collective: the points, 0 but for the right end (the last part's right ghost).
  static apgas::task<array> make(std::uint64_t n) {
    const apgas::team all = apgas::team::world();
    array a = co_await array::make(all, apgas::distribution::block(n, all.size()), 1);
    if (all.rank() + 1 == all.size()) a.ghosts_right()[0] = 1.0;
    co_return a;
  }
  static std::size_t extent(const array& a) { return a.local().size(); }
  /// Local points [lo, hi): the part with its ghosts is points 0 .. size() + 1.
  static double update(const array& from, array& to, std::size_t lo, std::size_t hi) {
    return averaging_update(from.local().data() - 1, to.local().data() - 1, lo + 1, hi + 1);
  }
  /// Every point (at place 0, one rget per place).
  static apgas::task<std::vector<double>> values(const array& a, std::uint64_t n) {
    std::vector<double> v(n);
    co_await a.get(0, std::span(v));
    co_return v;
  }

  /// Points 0 .. n + 1 (the ends included).
  static stencil_seq_result seq(const stencil_params& prm) {
    std::array<std::vector<double>, 2> buf;
    for (auto& b : buf) {
      b.assign(prm.n + 2, 0.0);
      b[prm.n + 1] = 1.0;
    }
    std::uint64_t t = 0;
    for (;;) {
      const double most =
          averaging_update(buf[t % 2].data(), buf[(t + 1) % 2].data(), 1, prm.n + 1);
      ++t;
      if (most < prm.epsilon || t == prm.max_iterations) break;
    }
    return {t, {buf[t % 2].begin() + 1, buf[t % 2].begin() + static_cast<long>(prm.n) + 1}};
  }
};

} // namespace apgas_apps
