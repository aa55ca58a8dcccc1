/// @file The runtime's knobs: one table, each knob a command-line flag and an APGAS_* variable.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace apgas {

/// @brief How `async` schedules: work-first pushes the parent's continuation and runs the
/// child at once (continuation stealing, Cilk-like); help-first pushes the child and goes on
/// with the parent (child stealing).
enum class policy : std::uint8_t { work_first, help_first };

std::string_view to_string(policy p) noexcept;

/// @brief What a finish's activities do across places, when the program knows it. The runtime
/// uses it to send fewer control messages; a broken promise is an error (never a wrong answer).
enum class finish_pattern : std::uint8_t {
  general, ///< anything
  /// SPMD: the finish's body starts at most one activity at each place with async_at, and
  /// those activities start no further remote activities in it (local asyncs are fine). Saves
  /// the cleanup message to every place.
  spmd,
};

/// @brief Runtime settings. Defaults, then APGAS_* environment variables, then flags win.
struct options {
  unsigned threads = 0;                ///< workers per place; 0 = one per PU of the cpuset
  policy default_policy = policy::work_first;
  bool stats = false;                  ///< print per-worker counters at exit
  bool pin_workers = true;             ///< bind worker i to the i-th PU of the cpuset
  unsigned spin_us = 50;               ///< how long an idle worker looks for work before parking
  unsigned progress_ms = 0;            ///< print a progress line every N ms to stderr (0: never)
  // Places (used by the places layer; a one-place run ignores them):
  std::size_t coalesce_bytes = 64 * 1024; ///< coalescing buffer per destination place
  /// All destinations' coalescing buffers of a place together, in MiB: at many places each
  /// destination's buffer is lowered below coalesce_bytes to fit (not below 1 KiB).
  std::size_t coalesce_memory_mib = 256;
  unsigned flush_us = 200;                ///< a buffered message leaves after at most this long
  bool coalesce = true;                   ///< false: one MPI message per logical message
  /// A place's later reports of a finish wait for its home to ask for them (when the home's
  /// own part of the finish has ended), or this long at most: a safeguard, the home always
  /// asks. 0: every quiet period reports at once (more control messages).
  unsigned report_delay_us = 100'000;

  /// @brief Reads APGAS_* variables, then consumes the runtime's flags from argv (argc and
  /// argv are rewritten so that only the program's own arguments remain).
  /// @throws usage_error on a malformed value.
  static options from_env_and_args(int& argc, char** argv);
  /// @brief Reads APGAS_* variables only.
  static options from_env();
  /// @brief One line a knob: flag, variable, default, meaning (for --help texts).
  static std::string help_text();
};

} // namespace apgas
