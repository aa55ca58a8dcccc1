// A reference model of X10's clocks (X10 language specification, chapter "Clocks", and
// x10.lang.Clock), random clocked programs, and what each activity of a program observes.
//
// The model is sequential and small on purpose: it is the specification the runtime is
// compared with (clock_differential_test.cpp), not an implementation. A clock has a phase P;
// each registration of an activity on it has a phase ph and a resumed flag (X10's phase and
// its sign). Every registration is in P, or resumed in P - 1 (then it counts in P as not
// resumed yet). P ends when every registration counts as resumed in it. resume sets the
// flag (nothing if set); advance resumes if needed, waits until P > ph, then ph + 1 and the
// flag cleared (exactly one phase); advance_all resumes every clock, then waits for each; a
// clocked child starts with its parent's (ph, resumed); drop and the end of an activity
// deregister. apgas's additions: a reduction carried by an advance (its contribution comes
// with the phase's resume), and a clocked async_at refused to an activity that resumed.
//
// What an activity observes, per operation, is deterministic: its own phases and resumed
// flags, its errors, the value of each phase's reduction (every contribution of the phase),
// and the number of activities at its place that had ended their part of a phase when the
// phase ended (each counts itself just before its resume or drop). So one run of the model,
// in any order, gives what every correct run of the runtime must observe; the model checks
// that two different orders agree.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <vector>

namespace clock_model {

/// The most clocks a program uses (the root makes them all).
inline constexpr int k_clocks = 3;
/// The most phases a program reaches (arrival counters are sized by it).
inline constexpr int k_max_phase = 64;
/// What an operation that throws clock_use_exception records.
inline constexpr std::int64_t k_error = -7777;

enum class op_kind : std::uint8_t { resume, advance, advance_reduce, advance_all, drop, spawn };

/// One operation of an activity's script (bitwise: scripts travel to other places).
struct op {
  op_kind kind = op_kind::resume;
  std::uint8_t clock = 0;  ///< resume, advance, advance_reduce, drop: which clock
  std::uint8_t mask = 0;   ///< spawn: the clocks the child is registered on (bit i: clock i)
  std::uint8_t eager = 0;  ///< advance, advance_reduce: signal::eager
  std::uint8_t remote = 0; ///< spawn: by async_at (to `place`, maybe this one), else async
  std::uint32_t place = 0; ///< spawn with remote: the target place
  std::uint32_t child = 0; ///< spawn: the child's script
  std::int32_t value = 0;  ///< advance_reduce: the contribution
};

/// A program: scripts[0] is the root, which makes `clocks` clocks (registered on each, phase
/// 1) and runs its script; the others run when a spawn starts them (each at most once).
struct program {
  int clocks = 1;
  std::vector<std::vector<op>> scripts;
};

/// The reduction of phase `phase` of clock `c`: sum, min or max, the same for every
/// contribution of the phase (a program never mixes them).
enum class reduce_op : std::uint8_t { sum, min, max };
inline reduce_op reduction_of(int c, std::uint64_t phase) {
  return static_cast<reduce_op>((static_cast<std::uint64_t>(c) * 7 + phase * 13) % 3);
}
inline std::int64_t fold(reduce_op r, std::int64_t a, std::int64_t b) {
  switch (r) {
  case reduce_op::sum:
    return a + b;
  case reduce_op::min:
    return std::min(a, b);
  case reduce_op::max:
    return std::max(a, b);
  }
  return 0;
}

/// What every activity observes: its trace (one entry or more per operation, see
/// model::run), by script index; a script never started has none.
struct outcome {
  std::vector<std::optional<std::vector<std::int64_t>>> traces;
  bool deadlock = false; ///< some activity waits forever (the program is not used)
  friend bool operator==(const outcome&, const outcome&) = default;
};

/// Where each script runs (its spawner's place, or the spawn's target).
std::vector<std::uint32_t> places_of(const program& p);

class model {
public:
  /// Runs `p` to its end, choosing the next runnable activity with `order` (a seed; 0: always
  /// the oldest).
  static outcome run(const program& p, std::uint64_t order);

private:
  struct registration {
    std::uint64_t ph = 1;
    bool resumed = false;
  };
  struct activity {
    int script = 0;
    std::uint32_t place = 0;
    std::size_t pc = 0;
    bool waiting = false; ///< in an advance (or advance_all) that has resumed
    std::array<std::optional<registration>, k_clocks> regs;
    std::vector<std::int64_t> trace;
  };
  struct clock_state {
    std::uint64_t phase = 1;
    /// Contributions per phase (the result is known once the phase has ended).
    std::vector<std::vector<std::int64_t>> contributions =
        std::vector<std::vector<std::int64_t>>(k_max_phase + 2);
    /// Arrivals per phase and place: resumes and drops of registrations not resumed.
    std::vector<std::vector<std::int64_t>> arrivals;
  };

  explicit model(const program& p);
  void arrive(std::uint32_t place, int c, std::uint64_t phase);
  void resume_one(activity& a, int c);
  void drop_one(activity& a, int c);
  void end_phases();
  bool can_finish_wait(const activity& a) const;
  /// Runs one step of `a` (an operation, or the end of a wait). False if it is blocked.
  bool step(std::size_t index);
  void record_state(activity& a);
  std::int64_t result_of(int c, std::uint64_t phase) const;

  const program& m_program;
  std::vector<std::uint32_t> m_places;
  std::vector<activity> m_live;
  std::vector<clock_state> m_clocks;
  outcome m_out;
  /// Reductions to fill in once every phase has ended: (script, trace index, clock, phase).
  struct pending_result {
    int script;
    std::size_t at;
    int clock;
    std::uint64_t phase;
  };
  std::vector<pending_result> m_results;
};

/// Knobs of the generator.
struct shape {
  std::uint32_t places = 1;
  int max_activities = 8;
  int max_ops = 8;
  int remote_percent = 50; ///< of spawns, by async_at
  int misuse_percent = 5;  ///< of operations, on a dropped clock or reducing after resume
  /// Of operations, a run of 2 to 6 advances on one clock instead: with several activities
  /// doing so, phases in which no registration changes follow each other (a clock's
  /// collective path), and the other activities' spawns and drops break them.
  int run_percent = 15;
};

/// A random program that the model runs to its end (retrying seeds derived from `seed`),
/// and the seed that made it.
program generate(std::uint64_t seed, const shape& s);

/// The program as text (for a failure's report).
std::string describe(const program& p);

/// Smaller programs than `p` (one script's operation removed, a spawn and its subtree
/// removed, a clock fewer), each a candidate for shrinking a failure.
std::vector<program> shrink_candidates(const program& p);

} // namespace clock_model
