/// @file The heat app's kernel for apgas_apps::stencil_main (see stencil.hpp): its arrays,
/// their update (stencil_update.hpp), the sequential loop and its command line's names. Its
/// main is apps/heat/main.cpp; bench_lockstep runs it beside an OpenMP loop.
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
/// @brief The heat kernel (see the file comment).
struct heat_kernel {
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
  static apgas::task<array> make(std::uint64_t n) {
    const apgas::team all = apgas::team::world();
    array g = co_await array::make(all, apgas::distribution_2d::block(n, n, all.size(), 1), 1);
    if (g.first_row() == 0) std::fill_n(&g(-1, -1), g.stride(), 1.0);
    co_return g;
  }
  static std::size_t extent(const array& g) { return g.local_rows(); }
  /// Local rows [lo, hi): the part with its ghosts is a grid stride() cells wide.
  static double update(const array& from, array& to, std::size_t lo, std::size_t hi) {
    return heat_update(&from(-1, -1), &to(-1, -1), from.stride(), lo + 1, hi + 1);
  }
  /// Every cell, row after row (at place 0, one rget per row).
  static apgas::task<std::vector<double>> values(const array& g, std::uint64_t n) {
    std::vector<double> v(n * n);
    for (std::size_t i = 0; i < n; ++i) co_await g.get(i, 0, std::span(v).subspan(i * n, n));
    co_return v;
  }

  /// Grid rows and columns 0 .. n + 1 (the borders included).
  static stencil_seq_result seq(const stencil_params& prm) {
    const std::size_t width = prm.n + 2;
    std::array<std::vector<double>, 2> buf;
    for (auto& b : buf) {
      b.assign(width * width, 0.0);
      std::fill_n(b.begin(), width, 1.0);
    }
    std::uint64_t t = 0;
    for (;;) {
      const double most =
          heat_update(buf[t % 2].data(), buf[(t + 1) % 2].data(), width, 1, prm.n + 1);
      ++t;
      if (most < prm.epsilon || t == prm.max_iterations) break;
    }
    stencil_seq_result r{t, {}};
    r.values.reserve(prm.n * prm.n);
    for (std::size_t row = 1; row <= prm.n; ++row) {
      const auto from = buf[t % 2].begin() + static_cast<long>(row * width + 1);
      r.values.insert(r.values.end(), from, from + static_cast<long>(prm.n));
    }
    return r;
  }
};

} // namespace apgas_apps
