/// @file OpenMP-task versions of the app kernels, for comparison with apgas.
///
/// Defined in omp_kernels.cpp, the only file compiled with -fopenmp. Each function mirrors its
/// apgas twin in apps/kernels/include/apgas_apps/: the same recursion, cutoffs and sequential
/// leaves, one `#pragma omp task` where apgas has one `async`, and a `taskwait` where apgas
/// ends its finish; for the kernels written with `finish_all(t1, t2)`, t1 is the task and t2
/// runs inline (finish_all's help-first shape). Each call sets the thread count
/// (omp_set_num_threads), opens a `parallel` region and starts the root inside `single`.
#pragma once

#include <cstddef>
#include <cstdint>

namespace apgas_bench::omp_peer {

long fib(int n, int cutoff, unsigned threads);
double integrate(double n, double cutoff_width, unsigned threads);
long nqueens(int n, int cutoff_depth, unsigned threads);
void quicksort(int* a, std::size_t n, std::size_t cutoff, unsigned threads);
/// @brief The flat loop: one `task` per iteration from one loop inside `single`, then the
/// team's barrier.
void flat_loop(std::uint32_t* out, std::uint64_t n, unsigned threads);

} // namespace apgas_bench::omp_peer
