// The triangular loop under OpenMP (see omp_irregular.hpp).
#include "omp_irregular.hpp"

#include "../irregular_loop.hpp"
#include <omp.h>

#include <cstdint>

namespace apgas_bench::omp_peer {

double triangular(std::uint64_t* out, std::uint64_t n, unsigned threads, int chunk) {
  const double t0 = omp_get_wtime();
  const auto rows = static_cast<std::int64_t>(n);
#pragma omp parallel for schedule(dynamic, chunk) num_threads(threads)
  for (std::int64_t i = 0; i < rows; ++i) out[i] = triangular_row(static_cast<std::uint64_t>(i));
  return omp_get_wtime() - t0;
}

} // namespace apgas_bench::omp_peer
