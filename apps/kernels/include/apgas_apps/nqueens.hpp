/// @file N-Queens: count the placements of N non-attacking queens. One async per safe square
/// in the top `cutoff_depth` rows, sequential below.
#pragma once

#include <apgas/apgas.hpp>

#include <array>
#include <cstdint>

namespace apgas_apps {

inline constexpr int k_nqueens_max = 20;
/// @brief The largest N whose sequential count the apps time and compare: beyond it
/// nqueens_seq alone takes seconds.
inline constexpr int k_nqueens_seq_max = 14;

/// @brief Queens placed so far: column of the queen in each row.
struct nqueens_board {
  std::array<std::int8_t, k_nqueens_max> column{};
};

inline bool nqueens_safe(const nqueens_board& b, int row, int col) {
  for (int r = 0; r < row; ++r) {
    const int c = b.column[static_cast<std::size_t>(r)];
    if (c == col || c - col == row - r || col - c == row - r) return false;
  }
  return true;
}

/// @brief Solutions below `b` with rows [0, row) placed. The sequential reference and the
/// leaves of every parallel version (apgas, TBB, OpenMP) run this same machine code: noclone,
/// because g++ otherwise gives the reference, which starts at the constant row 0, clones
/// specialised for rows 0 to 6 (the safety loop unrolled), while a leaf starts at a row known
/// only at run time. The reference would then run faster code than every parallel version's
/// leaves, and "1 worker against sequential" would measure the compiler instead of the runtime.
[[gnu::noinline, gnu::noclone]] inline long nqueens_seq_rec(nqueens_board& b, int n, int row) {
  if (row == n) return 1;
  long count = 0;
  for (int col = 0; col < n; ++col) {
    if (!nqueens_safe(b, row, col)) continue;
    b.column[static_cast<std::size_t>(row)] = static_cast<std::int8_t>(col);
    count += nqueens_seq_rec(b, n, row + 1);
  }
  return count;
}

/// @brief Sequential reference.
inline long nqueens_seq(int n) {
  nqueens_board b;
  return nqueens_seq_rec(b, n, 0);
}

/// @brief The known solution counts for n = 0..20 (OEIS A000170), for self-checks.
inline long nqueens_known(int n) {
  static constexpr long k_counts[] = {
      1,      1,       0,        0,        2,         10,         4,
      40,     92,      352,      724,      2680,      14200,      73712,
      365596, 2279184, 14772512, 95815104, 666090624, 4968057848, 39029188884};
  return n >= 0 && n <= 20 ? k_counts[n] : -1;
}

inline apgas::task<long> nqueens_rec(nqueens_board b, int n, int row, int cutoff_depth) {
  if (row == n) co_return 1;
  if (row >= cutoff_depth) co_return nqueens_seq_rec(b, n, row);
  std::array<long, k_nqueens_max> counts{};
  co_await apgas::finish([&]() -> apgas::task<> {
    for (int col = 0; col < n; ++col) {
      if (!nqueens_safe(b, row, col)) continue;
      nqueens_board child = b;
      child.column[static_cast<std::size_t>(row)] = static_cast<std::int8_t>(col);
      co_await apgas::async(nqueens_rec(child, n, row + 1, cutoff_depth),
                            counts[static_cast<std::size_t>(col)]);
    }
  });
  long total = 0;
  for (long c : counts) total += c;
  co_return total;
}

/// @brief Parallel count; pre: 0 <= n <= k_nqueens_max. cutoff_depth = rows that spawn
/// (n = one async per safe square everywhere).
inline apgas::task<long> nqueens(int n, int cutoff_depth) {
  return nqueens_rec(nqueens_board{}, n, 0, cutoff_depth);
}

} // namespace apgas_apps
