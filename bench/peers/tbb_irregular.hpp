/// @file The triangular loop of bench_on_demand under TBB: parallel_for over a blocked_range
/// with the default (auto) partitioner, which splits a range further when a thread steals
/// from it. Defined in tbb_irregular.cpp. The caller sets the number of threads
/// (tbb::global_control).
#pragma once

#include <cstdint>

namespace apgas_bench::tbb_peer {

/// @brief out[i] = triangular_row(i) for i in [0, n).
void triangular(std::uint64_t* out, std::uint64_t n);

} // namespace apgas_bench::tbb_peer
