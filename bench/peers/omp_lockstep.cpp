// OpenMP lock-step stencils (see omp_lockstep.hpp).
#include "omp_lockstep.hpp"

#include <apgas_apps/stencil_update.hpp>
#include <omp.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstddef>

namespace apgas_bench::omp_peer {

namespace {

/// One thread's largest change of a phase, on a cache line of its own.
struct alignas(64) slot {
  double change = 0;
};

/// The phase loop: `update(old, next, lo, hi)` over items [first, last) of each phase, in a
/// worksharing loop; stops after the phase whose largest change is below epsilon. Returns the
/// phases run (the values are in buffer phases % 2).
template <class Update>
std::uint64_t phases(std::array<std::vector<double>, 2>& buf, std::size_t first, std::size_t last,
                     double epsilon, std::uint64_t max_phases, unsigned threads, Update update) {
  std::vector<std::array<slot, 2>> slots(threads);
  std::uint64_t ran = 0;
#pragma omp parallel num_threads(static_cast <int>(threads))
  {
    const auto me = static_cast<std::size_t>(omp_get_thread_num());
    const auto team = static_cast<std::size_t>(omp_get_num_threads());
    for (std::uint64_t t = 0;; ++t) {
      const double* old = buf[t % 2].data();
      double* next = buf[(t + 1) % 2].data();
      double mine = 0;
      // The items in one contiguous block per thread, as schedule(static) deals them, each
      // block one call of the update (its inner loop vectorizes).
#pragma omp for schedule(static) nowait
      for (std::size_t k = 0; k < team; ++k) {
        const std::size_t lo = first + (last - first) * k / team;
        const std::size_t hi = first + (last - first) * (k + 1) / team;
        mine = std::max(mine, update(old, next, lo, hi));
      }
      slots[me][t % 2].change = mine;
#pragma omp barrier // the phase's one barrier: every slot of this phase is written
      double most = 0;
      for (std::size_t k = 0; k < team; ++k) most = std::max(most, slots[k][t % 2].change);
      if (most < epsilon || t + 1 == max_phases) {
        if (me == 0) ran = t + 1;
        break;
      }
    }
  }
  return ran;
}

} // namespace

lockstep_result averaging(std::uint64_t n, double epsilon, std::uint64_t max_phases,
                          unsigned threads) {
  std::array<std::vector<double>, 2> buf;
  for (auto& b : buf) {
    b.assign(n + 2, 0.0);
    b[n + 1] = 1.0;
  }
  const auto start = std::chrono::steady_clock::now();
  const std::uint64_t ran =
      phases(buf, 1, n + 1, epsilon, max_phases, threads,
             [](const double* old, double* next, std::size_t lo, std::size_t hi) {
               return apgas_apps::averaging_update(old, next, lo, hi);
             });
  lockstep_result r;
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  r.phases = ran;
  r.values.assign(buf[ran % 2].begin() + 1, buf[ran % 2].begin() + static_cast<long>(n) + 1);
  return r;
}

lockstep_result heat(std::uint64_t n, double epsilon, std::uint64_t max_phases, unsigned threads) {
  const std::size_t width = n + 2;
  std::array<std::vector<double>, 2> buf;
  for (auto& b : buf) {
    b.assign(width * width, 0.0);
    std::fill_n(b.begin(), width, 1.0);
  }
  const auto start = std::chrono::steady_clock::now();
  const std::uint64_t ran =
      phases(buf, 1, n + 1, epsilon, max_phases, threads,
             [width](const double* old, double* next, std::size_t lo, std::size_t hi) {
               return apgas_apps::heat_update(old, next, width, lo, hi);
             });
  lockstep_result r;
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  r.phases = ran;
  r.values.reserve(n * n);
  for (std::size_t row = 1; row <= n; ++row) {
    const auto from = buf[ran % 2].begin() + static_cast<long>(row * width + 1);
    r.values.insert(r.values.end(), from, from + static_cast<long>(n));
  }
  return r;
}

} // namespace apgas_bench::omp_peer
