/// @file A range cut in halves down to a grain, the halves in parallel: the parallel loop of
/// the suite kernels (jacobi, fft, cilksort, lud, barnes_hut), written once for apgas and once
/// for any fork-join scheduler given as a `fork(a, b)` that runs two callables in parallel
/// (the TBB and OpenMP peers in bench/peers pass theirs), so that every version splits alike.
/// The kernels' leaf functions are noinline: the linker keeps one copy of each for every
/// version, so that the schedulers are compared on the same machine code.
#pragma once

#include <apgas/apgas.hpp>

#include <cstddef>
#include <cstdint>

namespace apgas_apps {

/// @brief Calls leaf(lo, hi) as a function of its own: inlined into a coroutine's body, a
/// leaf's loops read their captures through the coroutine frame, which the compiler cannot
/// keep in registers (LUD's block updates ran 1.26x slower that way).
template <class Leaf>
[[gnu::noinline]] void run_leaf(const Leaf& leaf, std::size_t lo, std::size_t hi) {
  leaf(lo, hi);
}

/// @brief apgas: leaf(lo, hi) over [lo, hi) in pieces of at most `grain`, the halves of each
/// split in parallel (finish_all). `leaf` outlives the call (the caller awaits it).
template <class Leaf>
apgas::task<> split_range(std::size_t lo, std::size_t hi, std::size_t grain, const Leaf& leaf) {
  if (hi - lo <= grain) {
    run_leaf(leaf, lo, hi);
    co_return;
  }
  const std::size_t mid = lo + (hi - lo) / 2;
  co_await apgas::finish_all(split_range(lo, mid, grain, leaf), split_range(mid, hi, grain, leaf));
}

/// @brief The same with `fork(a, b)` (a and b run in parallel, both done when it returns).
template <class Fork, class Leaf>
void split_range(std::size_t lo, std::size_t hi, std::size_t grain, const Fork& fork,
                 const Leaf& leaf) {
  if (hi - lo <= grain) return run_leaf(leaf, lo, hi); // compiled as the apgas version's
  const std::size_t mid = lo + (hi - lo) / 2;
  fork([&] { split_range(lo, mid, grain, fork, leaf); },
       [&] { split_range(mid, hi, grain, fork, leaf); });
}

/// @brief The forks split_range makes over n items in pieces of at most `grain` (the tasks a
/// run spawns, for ns-per-task figures).
inline std::uint64_t split_range_forks(std::size_t n, std::size_t grain) {
  if (n <= grain) return 0;
  return 1 + split_range_forks(n / 2, grain) + split_range_forks(n - n / 2, grain);
}

/// @brief Runs a and b one after the other: the fork of the sequential versions.
struct sequential_fork {
  template <class A, class B>
  void operator()(const A& a, const B& b) const {
    a();
    b();
  }
};

} // namespace apgas_apps
