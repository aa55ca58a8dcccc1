/// @file bench_apps's cases of the Friendly Barriers suite (jacobi, fft, cilksort, lud,
/// barnes_hut): the kernels of apps/kernels under every scheduler, checked against their
/// sequential runs (each result is a hash of the whole output: the versions agree to the bit).
#pragma once

#include "app_case.hpp"

#include <string>
#include <vector>

namespace apgas_bench {

/// @brief The names of the suite's apps, as --only takes them.
inline const std::vector<std::string>& suite_apps() {
  static const std::vector<std::string> names{"jacobi", "fft", "cilksort", "lud", "barneshut"};
  return names;
}

/// @brief The cases of the apps in `only` (empty: all), at tiny sizes if `quick`.
std::vector<app_case> make_suite_cases(const std::vector<std::string>& only, bool quick);

} // namespace apgas_bench
