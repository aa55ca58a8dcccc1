/// @file The irregular loop of bench_on_demand: a triangular loop, row i of which costs i
/// steps, so that equal ranges of rows cost unequal work (the last rows the most). Shared by
/// the apgas, TBB and OpenMP versions, each of which calls triangular_row for every row.
#pragma once

#include <cstdint>

namespace apgas_bench {

/// @brief Row i of the triangular loop: a hash chain of i steps (no memory traffic, so that the
/// schedulers alone differ). noinline: every scheduler calls the same code.
[[gnu::noinline]] inline std::uint64_t triangular_row(std::uint64_t i) noexcept {
  std::uint64_t h = i * 0x9E3779B97F4A7C15ULL + 1;
  for (std::uint64_t j = 0; j < i; ++j) {
    h ^= h >> 31;
    h *= 0xD6E8FEB86659FD93ULL;
  }
  return h;
}

} // namespace apgas_bench
