// The apgas runs of the app kernels (see apgas_kernels.hpp).
#include "apgas_kernels.hpp"

#include <apgas_apps/fib.hpp>
#include <apgas_apps/flat_loop.hpp>
#include <apgas_apps/integrate.hpp>
#include <apgas_apps/nqueens.hpp>
#include <apgas_apps/quicksort.hpp>

namespace apgas_bench::apgas_runs {

long fib(apgas::runtime& rt, int n, int cutoff) { return rt.run(apgas_apps::fib(n, cutoff)); }

double integrate(apgas::runtime& rt, double n, double cutoff_width) {
  return rt.run(apgas_apps::integrate(n, cutoff_width));
}

long nqueens(apgas::runtime& rt, int n, int cutoff_depth) {
  return rt.run(apgas_apps::nqueens(n, cutoff_depth));
}

void quicksort(apgas::runtime& rt, int* a, std::size_t n, std::size_t cutoff) {
  rt.run(apgas_apps::quicksort(a, n, cutoff));
}

void flat_loop(apgas::runtime& rt, std::uint32_t* out, std::uint64_t n, std::uint64_t* peak) {
  if (peak == nullptr) return rt.run(apgas_apps::flat_loop(out, n));
  apgas_apps::loop_frames frames;
  rt.run(apgas_apps::flat_loop(out, n, &frames));
  *peak = frames.peak;
}

} // namespace apgas_bench::apgas_runs
