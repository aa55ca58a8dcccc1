/// @file Quicksort: sequential partition, then the two halves in parallel (one async per
/// partition above the cutoff).
#pragma once

#include <apgas/apgas.hpp>

#include <cstddef>
#include <utility>

namespace apgas_apps {

/// @brief Hoare partition around the middle element. Returns p with 0 < p < n such that
/// every element of [0, p) <= every element of [p, n). pre: n >= 2.
template <class T>
std::size_t quicksort_partition(T* a, std::size_t n) {
  const T pivot = a[n / 2];
  std::size_t i = 0;
  std::size_t j = n - 1;
  for (;;) {
    while (a[i] < pivot) ++i;
    while (pivot < a[j]) --j;
    if (i >= j) return j + 1 < n ? j + 1 : n - 1;
    std::swap(a[i], a[j]);
    ++i;
    --j;
  }
}

template <class T>
[[gnu::noinline]] void quicksort_seq(T* a, std::size_t n) {
  while (n >= 2) {
    const std::size_t p = quicksort_partition(a, n);
    // Recurse on the smaller side, loop on the larger: O(log n) stack.
    if (p < n - p) {
      quicksort_seq(a, p);
      a += p;
      n -= p;
    } else {
      quicksort_seq(a + p, n - p);
      n = p;
    }
  }
}

/// @brief Parallel sort of a[0, n); ranges of at most `cutoff` elements sort sequentially.
template <class T>
apgas::task<> quicksort(T* a, std::size_t n, std::size_t cutoff = 1) {
  if (n <= cutoff || n < 2) {
    quicksort_seq(a, n);
    co_return;
  }
  const std::size_t p = quicksort_partition(a, n);
  co_await apgas::finish_all(quicksort(a, p, cutoff), quicksort(a + p, n - p, cutoff));
}

} // namespace apgas_apps
