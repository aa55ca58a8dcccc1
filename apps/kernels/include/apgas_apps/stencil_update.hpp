/// @file The arithmetic of the stencil apps (averaging, heat), on plain arrays: one phase's
/// update of a range and its largest change. The sequential loops, the apps' places and the
/// OpenMP peer of bench_lockstep all compute every value with these, so they agree exactly.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>

namespace apgas_apps {

/// @brief Averaging: points [lo, hi) from `old` into `next`, each the mean of its two
/// neighbours; returns the largest change.
inline double averaging_update(const double* old, double* next, std::size_t lo, std::size_t hi) {
  double most = 0;
  for (std::size_t i = lo; i < hi; ++i) {
    next[i] = 0.5 * (old[i - 1] + old[i + 1]);
    most = std::max(most, std::fabs(next[i] - old[i]));
  }
  return most;
}

/// @brief Heat: rows [lo, hi) of a grid `width` cells wide from `old` into `next` (the same
/// layout), all but the first and last column, each cell the mean of its four neighbours;
/// returns the largest change.
inline double heat_update(const double* old, double* next, std::size_t width, std::size_t lo,
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

} // namespace apgas_apps
