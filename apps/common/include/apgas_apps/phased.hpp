/// @file What the phased apps (averaging, heat, leader-election) share: the --sync flag, which
/// runs the computation with one clock (its activities live through every phase) or with one
/// finish per phase, or both in one run; and the report of their times side by side.
///
///     apgas_apps::sync_mode sync = apgas_apps::sync_mode::clock;
///     apgas_apps::add_sync_flag(cli, sync);
///     ...
///     const apgas_apps::sync_times t = apgas_apps::time_modes(sync, flags.repeat,
///         [&](bool clocked) { return rt.run(solve(clocked)).seconds; });
///     apgas_apps::report_sync(r, t);
#pragma once

#include <apgas/clock.hpp>

#include "apgas_apps/cli.hpp"

#include <algorithm>
#include <cstdint>
#include <optional>

namespace apgas_apps {

/// @brief How the phases of a phased app are synchronised.
enum class sync_mode : std::uint8_t {
  clock,  ///< one clock; the activities live through every phase
  finish, ///< one finish per phase, new activities each phase
  both,   ///< both, one after the other, and their ratio
};

/// @brief Declares --sync clock|finish|both on `c` (default: what `mode` holds).
void add_sync_flag(cli& c, sync_mode& mode);

/// @brief Declares --signal lazy|eager on `c`: the clock's way of waiting (default: what
/// `s` holds).
void add_signal_flag(cli& c, apgas::signal& s);

/// @brief The best times of the modes that ran.
struct sync_times {
  std::optional<double> clock;
  std::optional<double> finish;
};

/// @brief Calls `run(clocked)`, which returns the seconds a run took, for the modes `mode`
/// selects, `repeat` times each, and keeps the best time of each. Clock and finish runs
/// alternate, the first of a pair being clock, then finish, then clock..., so that neither
/// always pays for the first run of the process or meets the same change of load.
template <class Run>
sync_times time_modes(sync_mode mode, int repeat, Run&& run) {
  sync_times t;
  const auto one = [&](bool clocked) {
    std::optional<double>& best = clocked ? t.clock : t.finish;
    const double s = run(clocked);
    best = best ? std::min(*best, s) : s;
  };
  for (int i = 0; i < repeat; ++i) {
    const bool clock_first = i % 2 == 0;
    if (mode != sync_mode::finish && clock_first) one(true);
    if (mode != sync_mode::clock) one(false);
    if (mode != sync_mode::finish && !clock_first) one(true);
  }
  return t;
}

/// @brief Reports the times: r.seconds is the clock run's (the finish run's if only it ran);
/// r.extra gets clock_seconds, finish_seconds and clock_over_finish (the ratio of the two,
/// when both ran), and r.details a line with them.
void report_sync(report& r, const sync_times& t);

} // namespace apgas_apps
