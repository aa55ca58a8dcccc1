/// @file The triangular loop of bench_on_demand under OpenMP: a parallel for with
/// schedule(dynamic), what an OpenMP programmer writes for a loop whose iterations differ in
/// cost. Defined in omp_irregular.cpp, compiled with -fopenmp.
#pragma once

#include <cstdint>

namespace apgas_bench::omp_peer {

/// @brief out[i] = triangular_row(i) for i in [0, n) on `threads` threads, schedule(dynamic,
/// chunk). @return the seconds the parallel region took.
double triangular(std::uint64_t* out, std::uint64_t n, unsigned threads, int chunk);

} // namespace apgas_bench::omp_peer
