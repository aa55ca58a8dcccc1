/// @file LU decomposition without pivoting (the Friendly Barriers suite's LUD), blocked: an N x N
/// diagonally dominant matrix in B x B blocks. For each diagonal block k: factor it, then
/// solve the blocks of row k and of column k against it (a parallel loop over them), then
/// update every block of the trailing matrix (a parallel loop over its rows of blocks). Each
/// block operation is sequential and the same in every version, so all give the same matrix
/// to the bit.
#pragma once

#include "apgas_apps/split_range.hpp"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace apgas_apps {

/// @brief A matrix stored block after block (each block B x B, row-major inside).
struct lud_matrix {
  std::size_t blocks = 0; ///< per side
  std::size_t b = 0;      ///< block side
  std::vector<double> v;
  lud_matrix(std::size_t blocks_per_side, std::size_t block_side)
      : blocks(blocks_per_side), b(block_side), v(blocks * blocks * b * b) {}
  double* block(std::size_t i, std::size_t j) noexcept {
    return v.data() + (i * blocks + j) * b * b;
  }
  std::size_t side() const noexcept { return blocks * b; }
};

/// @brief A diagonally dominant matrix from `seed` (no pivot is needed).
inline lud_matrix lud_make(std::size_t blocks, std::size_t b, std::uint64_t seed = 7) {
  lud_matrix m(blocks, b);
  const std::size_t n = m.side();
  std::uint64_t x = seed;
  for (std::size_t r = 0; r < n; ++r)
    for (std::size_t c = 0; c < n; ++c) {
      x = x * 6364136223846793005ULL + 1442695040888963407ULL;
      double value = static_cast<double>(x >> 11) * 0x1.0p-53;
      if (r == c) value += static_cast<double>(n);
      m.block(r / b, c / b)[(r % b) * b + (c % b)] = value;
    }
  return m;
}

/// @brief Factors the diagonal block in place: L (unit, below) and U (on and above).
[[gnu::noinline]] inline void lud_diagonal(double* a, std::size_t b) {
  for (std::size_t k = 0; k < b; ++k)
    for (std::size_t i = k + 1; i < b; ++i) {
      a[i * b + k] /= a[k * b + k];
      const double l = a[i * b + k];
      for (std::size_t j = k + 1; j < b; ++j) a[i * b + j] -= l * a[k * b + j];
    }
}
/// @brief A block of row k: solves L_kk X = A (L unit lower, from the factored diagonal).
[[gnu::noinline]] inline void lud_row_block(const double* diag, double* a, std::size_t b) {
  for (std::size_t k = 0; k < b; ++k)
    for (std::size_t i = k + 1; i < b; ++i) {
      const double l = diag[i * b + k];
      for (std::size_t j = 0; j < b; ++j) a[i * b + j] -= l * a[k * b + j];
    }
}
/// @brief A block of column k: solves X U_kk = A.
[[gnu::noinline]] inline void lud_column_block(const double* diag, double* a, std::size_t b) {
  for (std::size_t i = 0; i < b; ++i)
    for (std::size_t k = 0; k < b; ++k) {
      a[i * b + k] /= diag[k * b + k];
      const double x = a[i * b + k];
      for (std::size_t j = k + 1; j < b; ++j) a[i * b + j] -= x * diag[k * b + j];
    }
}
/// @brief A trailing block: A -= L_ik U_kj.
[[gnu::noinline]] inline void lud_update_block(const double* l, const double* u, double* a,
                                               std::size_t b) {
  for (std::size_t i = 0; i < b; ++i)
    for (std::size_t k = 0; k < b; ++k) {
      const double x = l[i * b + k];
      for (std::size_t j = 0; j < b; ++j) a[i * b + j] -= x * u[k * b + j];
    }
}

/// @brief Step k's solves: blocks (k, k+1..) and (k+1.., k), items [lo, hi) of the 2 (n - k - 1).
inline void lud_solves(lud_matrix& m, std::size_t k, std::size_t lo, std::size_t hi) {
  const std::size_t rest = m.blocks - k - 1;
  for (std::size_t t = lo; t < hi; ++t) {
    if (t < rest) lud_row_block(m.block(k, k), m.block(k, k + 1 + t), m.b);
    else lud_column_block(m.block(k, k), m.block(k + 1 + t - rest, k), m.b);
  }
}
/// @brief Step k's updates of rows of blocks [lo, hi) of the trailing matrix.
inline void lud_updates(lud_matrix& m, std::size_t k, std::size_t lo, std::size_t hi) {
  for (std::size_t i = k + 1 + lo; i < k + 1 + hi; ++i)
    for (std::size_t j = k + 1; j < m.blocks; ++j)
      lud_update_block(m.block(i, k), m.block(k, j), m.block(i, j), m.b);
}

/// @brief The factorisation with any fork (sequential_fork: the reference).
template <class Fork>
void lud(lud_matrix& m, const Fork& fork) {
  for (std::size_t k = 0; k < m.blocks; ++k) {
    lud_diagonal(m.block(k, k), m.b);
    const std::size_t rest = m.blocks - k - 1;
    split_range(0, 2 * rest, 1, fork,
                [&m, k](std::size_t lo, std::size_t hi) { lud_solves(m, k, lo, hi); });
    split_range(0, rest, 1, fork,
                [&m, k](std::size_t lo, std::size_t hi) { lud_updates(m, k, lo, hi); });
  }
}

/// @brief apgas: the same steps, each parallel loop a finish over split_range.
inline apgas::task<> lud(lud_matrix& m) {
  for (std::size_t k = 0; k < m.blocks; ++k) {
    lud_diagonal(m.block(k, k), m.b);
    const std::size_t rest = m.blocks - k - 1;
    const auto solves = [&m, k](std::size_t lo, std::size_t hi) { lud_solves(m, k, lo, hi); };
    co_await split_range(0, 2 * rest, 1, solves);
    const auto updates = [&m, k](std::size_t lo, std::size_t hi) { lud_updates(m, k, lo, hi); };
    co_await split_range(0, rest, 1, updates);
  }
}

/// @brief The forks of one run (for ns-per-task figures).
inline std::uint64_t lud_forks(std::size_t blocks) {
  std::uint64_t forks = 0;
  for (std::size_t k = 0; k < blocks; ++k)
    forks += split_range_forks(2 * (blocks - k - 1), 1) + split_range_forks(blocks - k - 1, 1);
  return forks;
}

} // namespace apgas_apps
