// heat [--n N] [--epsilon e] [--max-iterations k] [--activities A] [--sync clock|finish|both]:
// 2D heat diffusion by Jacobi iteration over places. An N x N grid inside fixed borders (the
// top one at 1, the others at 0) is an apgas::dist_array_2d in blocks of rows, one per place,
// with one ghost cell around each part: the neighbouring places' rows above and below (filled
// by exchange_halo), or the fixed borders at the grid's edges. Every phase each cell becomes
// the average of its four neighbours' previous values, until the largest change of a phase is
// below epsilon; each place's rows are cut into A chunks, one activity each, kept in phases
// by a clock (--sync clock) or a finish per phase (--sync finish): see apgas_apps/stencil.hpp.
// Checked against the sequential loop: the same number of phases and the same values.
#include "apgas_apps/stencil.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace {

using apgas::task;

/// Updates rows [lo, hi) of a grid `width` cells wide from `old` into `next` (the same
/// layout), all but the first and last column; returns the largest change. The sequential loop
/// and the places compute every value with this, so they agree exactly.
double update_rows(const double* old, double* next, std::size_t width, std::size_t lo,
                   std::size_t hi) {
  double most = 0;
  for (std::size_t r = lo; r < hi; ++r) {
    const double* up = old + (r - 1) * width;
    const double* mid = old + r * width;
    const double* down = old + (r + 1) * width;
    double* out = next + r * width;
    for (std::size_t c = 1; c + 1 < width; ++c) {
      out[c] = 0.25 * (up[c] + down[c] + mid[c - 1] + mid[c + 1]);
      most = std::max(most, std::fabs(out[c] - mid[c]));
    }
  }
  return most;
}

struct heat {
  static constexpr std::string_view k_name = "heat";
  static constexpr std::string_view k_seq_name = "heat_seq";
  static constexpr std::string_view k_summary =
      "2D heat diffusion by Jacobi iteration: an N x N grid inside fixed borders (the top one\n"
      "at 1, the others at 0; the grid starts at 0), a dist_array_2d in blocks of rows, one per\n"
      "place, whose ghost rows exchange_halo fills every phase; each block in A chunks of rows,\n"
      "one activity each. Every phase each cell becomes the average of its four neighbours,\n"
      "until the largest change is below epsilon: with one clock whose advance carries the\n"
      "largest change (--sync clock), or with one finish per phase and a team reduction\n"
      "(--sync finish). Checked against the sequential loop (the same phases, the same values).";
  static constexpr std::uint64_t k_default_n = 256;
  static constexpr double k_default_epsilon = 1e-3; // about 250 phases at the default size
  static constexpr std::uint64_t k_max_n = std::uint64_t{1} << 16;
  static constexpr std::string_view k_n_help = "grid side, in cells";
  static constexpr std::string_view k_cell = "cell", k_cell_plural = "cells", k_rows = "rows";
  static std::string shape(std::uint64_t n) { return fmt::format("{}x{}", n, n); }
  static double cells(std::uint64_t n) { return static_cast<double>(n * n); }
  static std::string where(std::size_t i, std::uint64_t n) {
    return fmt::format("cell ({}, {})", i / n + 1, i % n + 1);
  }

  using array = apgas::dist_array_2d<double>;

  /// Collective: the grid, 0 but for the top border (the ghost row above the first part).
  static task<array> make(std::uint64_t n) {
    const apgas::team all = apgas::team::world();
    array g = co_await array::make(all, apgas::distribution_2d::block(n, n, all.size(), 1), 1);
    if (g.first_row() == 0) std::fill_n(&g(-1, -1), g.stride(), 1.0);
    co_return g;
  }
  static std::size_t extent(const array& g) { return g.local_rows(); }
  /// Local rows [lo, hi): the part with its ghosts is a grid stride() cells wide.
  static double update(const array& from, array& to, std::size_t lo, std::size_t hi) {
    return update_rows(&from(-1, -1), &to(-1, -1), from.stride(), lo + 1, hi + 1);
  }
  /// Every cell, row after row (at place 0, one rget per row).
  static task<std::vector<double>> values(const array& g, std::uint64_t n) {
    std::vector<double> v(n * n);
    for (std::size_t i = 0; i < n; ++i) co_await g.get(i, 0, std::span(v).subspan(i * n, n));
    co_return v;
  }

  /// Grid rows and columns 0 .. n + 1 (the borders included).
  static apgas_apps::stencil_seq_result seq(const apgas_apps::stencil_params& prm) {
    const std::size_t width = prm.n + 2;
    std::array<std::vector<double>, 2> buf;
    for (auto& b : buf) {
      b.assign(width * width, 0.0);
      std::fill_n(b.begin(), width, 1.0);
    }
    std::uint64_t t = 0;
    for (;;) {
      const double most =
          update_rows(buf[t % 2].data(), buf[(t + 1) % 2].data(), width, 1, prm.n + 1);
      ++t;
      if (most < prm.epsilon || t == prm.max_iterations) break;
    }
    apgas_apps::stencil_seq_result r{t, {}};
    r.values.reserve(prm.n * prm.n);
    for (std::size_t row = 1; row <= prm.n; ++row) {
      const auto from = buf[t % 2].begin() + static_cast<long>(row * width + 1);
      r.values.insert(r.values.end(), from, from + static_cast<long>(prm.n));
    }
    return r;
  }
};

} // namespace

int main(int argc, char** argv) { return apgas_apps::stencil_main<heat>(argc, argv); }
