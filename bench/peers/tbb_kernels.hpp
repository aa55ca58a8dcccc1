/// @file TBB task_group versions of the app kernels, for comparison with apgas.
///
/// Each function mirrors its apgas twin in apps/kernels/include/apgas_apps/ line for line: the
/// same recursion, the same cutoff tests, the same sequential leaves (the apgas_apps *_seq
/// functions themselves), and one `task_group::run` where apgas has one `async`. A task_group
/// plays the role of a finish. Where the apgas kernel uses `finish_all(t1, t2)` (fib,
/// integrate, quicksort), t1 is run as the task and t2 inline, which is what finish_all does
/// under help-first (TBB always steals children). The caller sets the number of threads
/// (tbb::global_control). Defined in tbb_kernels.cpp.
#pragma once

#include <cstddef>
#include <cstdint>

namespace apgas_bench::tbb_peer {

/// @brief fib: task_group { run a = fib(n-1); b = fib(n-2); } down to `cutoff`.
long fib(int n, int cutoff);
/// @brief Integral of x^3 + x over [0, n]; intervals narrower than `cutoff_width` are sequential.
double integrate(double n, double cutoff_width);
/// @brief N-Queens count; one task per safe square in the top `cutoff_depth` rows.
long nqueens(int n, int cutoff_depth);
/// @brief Quicksort of a[0, n): partition, then the left part as a task, the right inline.
void quicksort(int* a, std::size_t n, std::size_t cutoff);
/// @brief The flat loop: one task_group::run per iteration from one loop, then wait.
void flat_loop(std::uint32_t* out, std::uint64_t n);

} // namespace apgas_bench::tbb_peer
