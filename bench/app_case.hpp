/// @file One case of bench_apps: an app kernel at one size, how to run it under each scheduler
/// and how to check a result. Shared by the driver (apps_compare.cpp) and the suite's cases
/// (suite_cases.cpp).
#pragma once

#include <apgas/apgas.hpp>

#include <cstdint>
#include <functional>
#include <string>

namespace apgas_bench {

/// @brief The runtime of the configuration being measured (set by the driver around runs).
apgas::runtime*& current_runtime();

/// @brief One app at one size: how to run it under each scheduler and how to check a result.
/// Every runner returns the result as a double (exact for the integer results here); quicksort
/// returns 0 and its check looks at the sorted buffer.
struct app_case {
  std::string app;                ///< fib, integrate, nqueens, quicksort
  std::string label;              ///< e.g. "fib(32) cutoff 0"
  bool coarse = false;            ///< has a cutoff: target (c)
  bool one_task_per_call = false; ///< fib without cutoff: target (a)
  /// Its sequential run may run as several copies at once (it writes no shared state): the
  /// machine's ceiling (seq-copies rows) is measured with it.
  bool seq_copies = true;
  std::uint64_t tasks = 0;               ///< asyncs (= task_group::run = omp task) per run
  std::function<void()> prepare = [] {}; ///< untimed, before every run
  std::function<double()> run_seq;
  std::function<double()> run_apgas; ///< in the current apgas runtime
  /// The most unstarted children an apgas run held (in the current runtime; untimed). Empty:
  /// not measured for this case.
  std::function<std::uint64_t()> peak_apgas;
  std::function<double()> run_tbb; ///< empty if the peer is not built
  std::function<double(unsigned)> run_omp;
  std::function<double()> run_floor; ///< the spawn's floor (one worker), where there is one
  std::string mismatch_note;         ///< appended to the wrong-result message
  std::function<bool(double got, double expected)> check = [](double g, double e) {
    return g == e;
  };
};

} // namespace apgas_bench
