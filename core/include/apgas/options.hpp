/// @file The runtime's options: one table, each option a member of apgas::options, a
/// command-line flag and an APGAS_* environment variable.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace apgas {

/// @brief How `async` schedules: work-first pushes the parent's continuation and runs the
/// child at once (continuation stealing, Cilk-like); help-first pushes the child and goes on
/// with the parent (child stealing); adaptive is help-first while the worker's deque holds
/// fewer than options::adaptive_bound items and work-first beyond, so that a flat loop of
/// asyncs keeps a bounded number of unstarted children (see spawn in worker.hpp), and
/// work-first for finish_all (a fixed set of tasks: nothing to bound).
enum class policy : std::uint8_t { work_first, help_first, adaptive };

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

/// @brief Every runtime option, declared once, as
///     X(type, member, default, low, high, flag, variable, value hint, help)
/// The list makes both the members of apgas::options (with their defaults) and the table that
/// parses flags and variables and prints help_text(), so that no option has a second name or a
/// second default anywhere (the transport reads these members too).
/// - `low`..`high`: what a flag or a variable may set (yes/no and the policy: all their values).
///   A default below `low` is one no flag can give and means "decided at start" (threads: one
///   per PU); help_text() shows it as `auto`.
/// - value hint: how the flag's value looks in help_text(); nullptr makes the flag a switch
///   (alone it means yes; `--stats=no` still works).
/// - The options from coalesce_bytes on matter only with several places. max_outstanding_bytes
///   bounds what a place holds for one slow destination; max_outstanding_sends bounds the MPI
///   send requests alive, because MPI completes them by scanning them all (Open MPI completes a
///   few per scan): its default keeps a scan short and is still more than coalesced traffic to
///   one place needs (256 full 64 KiB buffers are twice max_outstanding_bytes).
#define APGAS_OPTIONS(X)                                                                           \
  X(unsigned, threads, 0, 1, 4096, "--threads", "APGAS_THREADS", "N",                              \
    "worker threads per place (default: PUs of the cpuset)")                                       \
  X(::apgas::policy, default_policy, ::apgas::policy::work_first, ::apgas::policy::work_first,     \
    ::apgas::policy::adaptive, "--policy", "APGAS_POLICY", "work-first|help-first|adaptive",       \
    "default scheduling policy of finishes")                                                       \
  X(unsigned, adaptive_bound, 64, 1, 1U << 20, "--adaptive-bound", "APGAS_ADAPTIVE_BOUND", "N",    \
    "adaptive policy: items in a worker's deque from which a spawn runs the child at once")        \
  X(bool, stats, false, false, true, "--stats", "APGAS_STATS", nullptr,                            \
    "print per-worker statistics at exit")                                                         \
  X(bool, pin_workers, true, false, true, "--pin", "APGAS_PIN", "yes|no",                          \
    "bind each worker to one PU of the process cpuset")                                            \
  X(unsigned, spin_us, 50, 0, 1'000'000, "--spin-us", "APGAS_SPIN_US", "N",                        \
    "microseconds an idle worker keeps looking for work (and messages) before it parks")           \
  X(unsigned, progress_ms, 0, 0, 86'400'000, "--progress-ms", "APGAS_PROGRESS_MS", "N",            \
    "print a progress line (tasks, steals, messages) to stderr every N ms; 0: never")              \
  X(std::string, trace, "", "", "", "--trace", "APGAS_TRACE", "DIR",                               \
    "write a timeline of the run to DIR (Chrome trace events: DIR/trace.json, a file per place)")  \
  X(std::size_t, trace_events, 262'144, 16, std::size_t{1} << 32, "--trace-events",                \
    "APGAS_TRACE_EVENTS", "N",                                                                     \
    "trace: events each worker (and the network) keeps at most, 40 bytes each; later ones are "    \
    "dropped and counted")                                                                         \
  X(unsigned, trace_fold_us, 50, 0, 10'000'000, "--trace-fold-us", "APGAS_TRACE_FOLD_US", "N",     \
    "trace: a worker's runs of activities are joined into one slice until it spans N us")          \
  X(std::size_t, coalesce_bytes, 64 * 1024, 64, 1U << 30, "--coalesce-bytes",                      \
    "APGAS_COALESCE_BYTES", "N", "coalescing buffer per destination place, in bytes")              \
  X(std::size_t, coalesce_memory_mib, 256, 1, 1U << 20, "--coalesce-memory-mib",                   \
    "APGAS_COALESCE_MEMORY_MIB", "N",                                                              \
    "coalescing buffers of a place, all destinations together, in MiB: at many places the "        \
    "buffer per destination shrinks to fit (not below 1 KiB)")                                     \
  X(unsigned, flush_us, 200, 1, 10'000'000, "--flush-us", "APGAS_FLUSH_US", "N",                   \
    "a buffered message leaves after at most N microseconds")                                      \
  X(unsigned, report_delay_us, 100'000, 0, 10'000'000, "--report-delay-us",                        \
    "APGAS_REPORT_DELAY_US", "N",                                                                  \
    "longest a place holds a finish's report its home did not ask for (0: none held)")             \
  X(bool, coalesce, true, false, true, "--coalesce", "APGAS_COALESCE", "yes|no",                   \
    "gather small messages to one place into one MPI message")                                     \
  X(std::size_t, max_outstanding_bytes, std::size_t{8} << 20, 1024, std::size_t{1} << 40,          \
    "--max-outstanding-bytes", "APGAS_MAX_OUTSTANDING_BYTES", "N",                                 \
    "bytes to one place sent and not yet taken by the network, at most: a sender beyond it "       \
    "waits, receiving meanwhile")                                                                  \
  X(std::size_t, max_outstanding_sends, 256, 1, 1U << 20, "--max-outstanding-sends",               \
    "APGAS_MAX_OUTSTANDING_SENDS", "N",                                                            \
    "MPI sends of a place in flight at most, all destinations together; later ones wait in "       \
    "order inside the place")                                                                      \
  X(unsigned, tree_arity, 32, 1, 1U << 20, "--tree-arity", "APGAS_TREE_ARITY", "N",                \
    "messages from many places to one (finish reports) and from one to many (asks, cleanups, "     \
    "broadcasts) travel along a tree with N children per place (flat up to N + 1 places)")         \
  X(unsigned, route_above, 1024, 0, 0xffffffffU, "--route-above", "APGAS_ROUTE_ABOVE", "N",        \
    "beyond N places a message to a place outside this one's row and column of a sqrt(places) "    \
    "grid goes through the place at this row and its column (2 hops): O(sqrt places) buffers "     \
    "per place (0: always)")                                                                       \
  X(unsigned, clock_all_to_all_places, 16, 0, 1U << 20, "--clock-all-to-all-places",               \
    "APGAS_CLOCK_ALL_TO_ALL_PLACES", "N",                                                          \
    "clocks: up to N places every place tallies every phase report (a phase ends one message "     \
    "after its last resume); beyond, the clock's home tallies and releases the places")            \
  X(unsigned, glb_n, 511, 1, 1'000'000'000, "--glb-n", "APGAS_GLB_N", "N",                         \
    "GLB: items a bag processes between two looks at steal requests")                              \
  X(unsigned, glb_w, 0, 0, 1'000'000, "--glb-w", "APGAS_GLB_W", "N",                               \
    "GLB: random steals of a place out of work before it waits on its lifelines (0: z)")           \
  X(unsigned, glb_l, 32, 2, 1U << 20, "--glb-l", "APGAS_GLB_L", "N",                               \
    "GLB: base of the lifeline graph (a cyclic hypercube of place ids in base l)")                 \
  X(unsigned, glb_z, 0, 0, 64, "--glb-z", "APGAS_GLB_Z", "N",                                      \
    "GLB: lifelines per place (0: the smallest z with l^z >= places)")                             \
  X(unsigned, glb_m, 1024, 1, 1U << 24, "--glb-m", "APGAS_GLB_M", "N",                             \
    "GLB: random victims a place draws at the start of a run (steals pick among them)")            \
  X(bool, glb_tree, true, false, true, "--glb-tree", "APGAS_GLB_TREE", "yes|no",                   \
    "GLB: places without work at the start also wait on a tree (place h feeds 3h+1..3h+3)")        \
  X(std::string, checkpoint, "", "", "", "--checkpoint", "APGAS_CHECKPOINT", "DIR",                \
    "GLB runs and phase_checkpoint write checkpoints into DIR (shared by all places) every "       \
    "--checkpoint-every seconds; the newest complete one is kept")                                 \
  X(double, checkpoint_every, 60.0, 0.001, 1e7, "--checkpoint-every", "APGAS_CHECKPOINT_EVERY",    \
    "SECONDS", "seconds between two checkpoints (with --checkpoint)")                              \
  X(std::string, resume, "", "", "", "--resume", "APGAS_RESUME", "DIR",                            \
    "start from the newest complete checkpoint in DIR, on any number of places and threads")

/// @brief Runtime settings. Defaults, then APGAS_* environment variables, then flags win. One
/// member per line of APGAS_OPTIONS, with its default; help_text() says what each means.
struct options {
#define APGAS_OPTION_MEMBER(type, member, default_value, ...) type member = default_value;
  APGAS_OPTIONS(APGAS_OPTION_MEMBER)
#undef APGAS_OPTION_MEMBER

  /// @brief Reads APGAS_* variables, then consumes the runtime's flags from argv (argc and
  /// argv are rewritten so that only the program's own arguments remain).
  /// @throws usage_error on a malformed value.
  static options from_env_and_args(int& argc, char** argv);
  /// @brief Reads APGAS_* variables only.
  static options from_env();
  /// @brief One line an option: flag, variable, meaning, default (for --help texts).
  static std::string help_text();
  /// @brief APGAS_* variables of this process's environment that are no runtime option nor a
  /// variable of apgas's tools (a misspelling, say), each with the option it is close to if
  /// any: "APGAS_THRAEDS (did you mean APGAS_THREADS?)".
  static std::vector<std::string> unknown_variables();
  /// @brief The program's arguments (argv after from_env_and_args, up to a "--") that are
  /// within two edits of a runtime flag, each with that flag: "--thread (did you mean
  /// --threads?)". They stay the program's; this only names them for a warning.
  static std::vector<std::string> near_miss_flags(int argc, const char* const* argv);
};

} // namespace apgas
