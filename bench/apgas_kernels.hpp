/// @file The apgas runs of the app kernels, for bench_apps.
///
/// Compiled in a translation unit of their own (apgas_kernels.cpp), as each app is, and as
/// the TBB and OpenMP peers are: in one big unit with the peers and the driver, GCC's
/// `inline-unit-growth` limit stopped inlining the kernels' coroutine ramps (a call per
/// frame), which measured the size of bench_apps.cpp rather than apgas.
#pragma once

#include <apgas/apgas.hpp>

#include <cstddef>
#include <cstdint>

namespace apgas_bench::apgas_runs {

long fib(apgas::runtime& rt, int n, int cutoff);
double integrate(apgas::runtime& rt, double n, double cutoff_width);
long nqueens(apgas::runtime& rt, int n, int cutoff_depth);
void quicksort(apgas::runtime& rt, int* a, std::size_t n, std::size_t cutoff);
/// The flat loop; with `peak`, also the most unstarted children it held (an atomic increment
/// per child: not for timed runs).
void flat_loop(apgas::runtime& rt, std::uint32_t* out, std::uint64_t n,
               std::uint64_t* peak = nullptr);

} // namespace apgas_bench::apgas_runs
