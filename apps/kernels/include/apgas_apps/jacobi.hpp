/// @file Jacobi (the Friendly Barriers suite's): a fixed number of sweeps over an N x N grid
/// inside fixed borders (the top one at 1, the others at 0), each cell becoming the mean of its
/// four neighbours; each sweep a parallel loop over blocks of rows, which ends before the next
/// sweep starts (a finish per sweep, no reduction). Every version sweeps with jacobi_rows, so
/// all give the same grid to the bit.
#pragma once

#include "apgas_apps/split_range.hpp"

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace apgas_apps {

/// @brief The two grids of a run, (n + 2) x (n + 2) with the borders; `now` holds the latest.
struct jacobi_grids {
  std::size_t n = 0;
  std::vector<double> a, b;
  explicit jacobi_grids(std::size_t side) : n(side), a((side + 2) * (side + 2), 0.0), b(a) {
    for (std::size_t c = 0; c < side + 2; ++c) a[c] = b[c] = 1.0;
  }
  std::size_t width() const noexcept { return n + 2; }
};

/// @brief Rows [lo, hi) (1-based, inside the borders) of `next` from `old`.
[[gnu::noinline]] inline void jacobi_rows(const double* old, double* next, std::size_t width,
                                          std::size_t lo, std::size_t hi) {
  for (std::size_t r = lo; r < hi; ++r) {
    const double* up = old + (r - 1) * width;
    const double* mid = old + r * width;
    const double* down = old + (r + 1) * width;
    double* out = next + r * width;
    for (std::size_t c = 1; c + 1 < width; ++c)
      out[c] = 0.25 * (up[c] + down[c] + mid[c - 1] + mid[c + 1]);
  }
}

/// @brief `sweeps` sweeps with any fork (sequential_fork: the sequential reference). Returns
/// the grid that holds the result.
template <class Fork>
std::vector<double>& jacobi(jacobi_grids& g, int sweeps, std::size_t grain_rows, const Fork& fork) {
  std::vector<double>* from = &g.a;
  std::vector<double>* to = &g.b;
  for (int s = 0; s < sweeps; ++s) {
    const double* old = from->data();
    double* next = to->data();
    const std::size_t width = g.width();
    split_range(1, g.n + 1, grain_rows, fork,
                [=](std::size_t lo, std::size_t hi) { jacobi_rows(old, next, width, lo, hi); });
    std::swap(from, to);
  }
  return *from;
}

/// @brief apgas: the same sweeps, each a finish over split_range. Returns which grid holds
/// the result (0: a, 1: b).
inline apgas::task<int> jacobi(jacobi_grids& g, int sweeps, std::size_t grain_rows) {
  std::vector<double>* from = &g.a;
  std::vector<double>* to = &g.b;
  for (int s = 0; s < sweeps; ++s) {
    const double* old = from->data();
    double* next = to->data();
    const std::size_t width = g.width();
    const auto leaf = [=](std::size_t lo, std::size_t hi) {
      jacobi_rows(old, next, width, lo, hi);
    };
    co_await split_range(1, g.n + 1, grain_rows, leaf);
    std::swap(from, to);
  }
  co_return from == &g.a ? 0 : 1;
}

} // namespace apgas_apps
