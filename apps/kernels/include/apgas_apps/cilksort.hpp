/// @file CilkSort (the Friendly Barriers suite's, after Cilk's cilksort): merge sort whose
/// merges are parallel too. A range is cut in four quarters sorted in parallel; the quarters
/// are merged in pairs into a second buffer, in parallel, and the two halves merged back. A
/// merge of two sorted runs splits the larger at its middle and the smaller where that value
/// would go (a binary search), and merges the two pairs of pieces in parallel. Small ranges
/// sort with std::sort, small merges with std::merge.
#pragma once

#include <apgas/apgas.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace apgas_apps {

/// @brief Below these sizes the work is sequential.
struct cilksort_cutoffs {
  std::size_t sort = 2048;
  std::size_t merge = 2048;
};

/// @brief n values from `seed`.
inline std::vector<int> cilksort_input(std::size_t n, std::uint64_t seed = 99) {
  std::vector<int> v(n);
  std::uint64_t x = seed;
  for (auto& e : v) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    e = static_cast<int>(x >> 33);
  }
  return v;
}

/// @brief Merges sorted [a, a_end) and [b, b_end) into out, with any fork.
template <class Fork>
void cilkmerge(const int* a, const int* a_end, const int* b, const int* b_end, int* out,
               cilksort_cutoffs c, const Fork& fork) {
  if (a_end - a < b_end - b) { // split the larger
    std::swap(a, b);
    std::swap(a_end, b_end);
  }
  if (static_cast<std::size_t>((a_end - a) + (b_end - b)) <= c.merge || a == a_end) {
    std::merge(a, a_end, b, b_end, out);
    return;
  }
  const int* a_mid = a + (a_end - a) / 2;
  const int* b_mid = std::lower_bound(b, b_end, *a_mid);
  int* out_mid = out + (a_mid - a) + (b_mid - b);
  fork([&] { cilkmerge(a, a_mid, b, b_mid, out, c, fork); },
       [&] { cilkmerge(a_mid, a_end, b_mid, b_end, out_mid, c, fork); });
}

/// @brief Sorts v[0, n) using tmp[0, n), with any fork (sequential_fork: the reference).
template <class Fork>
void cilksort(int* v, int* tmp, std::size_t n, cilksort_cutoffs c, const Fork& fork) {
  if (n <= c.sort) {
    std::sort(v, v + n);
    return;
  }
  const std::size_t q = n / 4;
  int* a = v;
  int* b = v + q;
  int* d = v + 2 * q;
  int* e = v + 3 * q;
  fork(
      [&] {
        fork([&] { cilksort(a, tmp, q, c, fork); }, [&] { cilksort(b, tmp + q, q, c, fork); });
      },
      [&] {
        fork([&] { cilksort(d, tmp + 2 * q, q, c, fork); },
             [&] { cilksort(e, tmp + 3 * q, n - 3 * q, c, fork); });
      });
  fork([&] { cilkmerge(a, b, b, d, tmp, c, fork); },
       [&] { cilkmerge(d, e, e, v + n, tmp + 2 * q, c, fork); });
  cilkmerge(tmp, tmp + 2 * q, tmp + 2 * q, tmp + n, v, c, fork);
}

/// @brief apgas: the merge.
inline apgas::task<> cilkmerge(const int* a, const int* a_end, const int* b, const int* b_end,
                               int* out, cilksort_cutoffs c) {
  if (a_end - a < b_end - b) {
    std::swap(a, b);
    std::swap(a_end, b_end);
  }
  if (static_cast<std::size_t>((a_end - a) + (b_end - b)) <= c.merge || a == a_end) {
    std::merge(a, a_end, b, b_end, out);
    co_return;
  }
  const int* a_mid = a + (a_end - a) / 2;
  const int* b_mid = std::lower_bound(b, b_end, *a_mid);
  int* out_mid = out + (a_mid - a) + (b_mid - b);
  co_await apgas::finish_all(cilkmerge(a, a_mid, b, b_mid, out, c),
                             cilkmerge(a_mid, a_end, b_mid, b_end, out_mid, c));
}

/// @brief apgas: the sort.
inline apgas::task<> cilksort(int* v, int* tmp, std::size_t n, cilksort_cutoffs c) {
  if (n <= c.sort) {
    std::sort(v, v + n);
    co_return;
  }
  const std::size_t q = n / 4;
  int* a = v;
  int* b = v + q;
  int* d = v + 2 * q;
  int* e = v + 3 * q;
  co_await apgas::finish_all(cilksort(a, tmp, q, c), cilksort(b, tmp + q, q, c),
                             cilksort(d, tmp + 2 * q, q, c),
                             cilksort(e, tmp + 3 * q, n - 3 * q, c));
  co_await apgas::finish_all(cilkmerge(a, b, b, d, tmp, c),
                             cilkmerge(d, e, e, v + n, tmp + 2 * q, c));
  co_await cilkmerge(tmp, tmp + 2 * q, tmp + 2 * q, tmp + n, v, c);
}

} // namespace apgas_apps
