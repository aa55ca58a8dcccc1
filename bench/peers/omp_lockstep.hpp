/// @file OpenMP lock-step versions of the stencil apps (averaging, heat), for bench_lockstep:
/// what an OpenMP programmer writes for a loop of phases. One parallel region; each phase a
/// worksharing loop (schedule(static), a block of points or rows per thread) calling the apps'
/// own update (apgas_apps/stencil_update.hpp), then one barrier; every thread then reads the
/// phase's largest change from the threads' slots and decides alone whether to go on (the
/// slots alternate by phase parity, so the one barrier per phase is enough). Defined in
/// omp_lockstep.cpp, compiled with -fopenmp.
#pragma once

#include <cstdint>
#include <vector>

namespace apgas_bench::omp_peer {

/// @brief What a lock-step run gives: its phases, its final values (in the sequential loop's
/// layout: averaging's points 1 .. n, heat's cells row after row) and the seconds its
/// parallel region took.
struct lockstep_result {
  std::uint64_t phases = 0;
  std::vector<double> values;
  double seconds = 0;
};

lockstep_result averaging(std::uint64_t n, double epsilon, std::uint64_t max_phases,
                          unsigned threads);
lockstep_result heat(std::uint64_t n, double epsilon, std::uint64_t max_phases, unsigned threads);

} // namespace apgas_bench::omp_peer
