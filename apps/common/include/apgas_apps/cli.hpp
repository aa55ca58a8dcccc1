/// @file The command line, timing and result report every app shares.
///
///     int main(int argc, char** argv) {
///       int n = 0;
///       apgas_apps::cli cli("fib", "Parallel Fibonacci.");
///       cli.positional("N", "which Fibonacci number", n, 0, 92);
///       return cli.run(argc, argv, [&](apgas::runtime& rt, const apgas_apps::common_flags& f) {
///         apgas_apps::report r;  // fill in title, result, verified, seconds, ...
///         return r;
///       });
///     }
///
/// run() constructs the runtime first (it consumes --threads, --policy, ...), parses the app's
/// flags from what remains, runs the body and prints the report. Exit codes: 0 verified,
/// 1 self-check failed, 2 usage error, 3 the run threw. A body that finds flags that do not
/// go together throws apgas::usage_error (at every place alike, before any run): exit 2, the
/// message printed by place 0 as for a bad flag.
///
/// Several places (under mpirun): every place runs main() and so the body, whose rt.run calls
/// are collective (each place gets the run's value). Only place 0 prints: the report, --help,
/// usage errors and the run's failure (a place whose body fails on its own prints that too).
/// Only place 0's report counts, so elsewhere `run_seq` is false: the sequential code runs
/// once, at place 0, and is not slowed down by copies of itself at the other places. At the
/// end the places agree on the exit code (the worst of them), so every place exits with it.
#pragma once

#include <apgas/apgas.hpp>

#include "apgas_apps/json.hpp"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <exception>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace apgas_apps {

inline constexpr int k_exit_ok = 0;
inline constexpr int k_exit_check_failed = 1;
inline constexpr int k_exit_usage = 2;
inline constexpr int k_exit_run_failed = 3;

/// @brief The flags every app has (besides --help).
struct common_flags {
  bool json = false;   ///< --json: one JSON object on stdout instead of the human line
  int repeat = 1;      ///< --repeat R: best time of R runs (each run is checked)
  bool run_seq = true; ///< cleared by --no-seq: skip timing (and checking against) the seq code
};

/// @brief Work done per run, for a throughput figure: `count` `unit`s, e.g. 14.9e6 "tasks".
struct work_amount {
  double count = 0;
  std::string unit;
};

/// @brief What an app computed and how fast; cli::run prints it.
struct report {
  std::string title;                 ///< what was computed, e.g. "fib(35)"
  json_value result;                 ///< the answer
  bool verified = false;             ///< every self-check passed
  std::string failure;               ///< why a self-check failed (printed on stderr)
  double seconds = 0;                ///< best time of the parallel runs
  std::optional<double> seq_seconds; ///< best time of the sequential runs, if run
  std::optional<work_amount> work;   ///< gives `<unit>_per_second`
  json_object extra;                 ///< app-specific keys (n, cutoff, ...)
  std::vector<std::string> details;  ///< lines printed under the human line (not in JSON)
};

/// @brief Parses a whole number (or, for floating T, a finite number) in [lo, hi].
/// @throws apgas::usage_error naming `what` and the accepted range.
template <class T>
T parse_number(std::string_view what, std::string_view text, T lo, T hi);

namespace detail {
/// The index of `text` in `names`. @throws apgas::usage_error naming `what` and the choices.
std::size_t choice_index(std::string_view what, std::string_view text,
                         const std::vector<std::string>& names);
} // namespace detail

/// @brief Declares an app's arguments, then runs it (see the file comment).
class cli {
public:
  using body = std::function<report(apgas::runtime&, const common_flags&)>;

  /// @param app the program name used in messages; @param summary one paragraph for --help.
  cli(std::string app, std::string summary);

  /// @brief A positional number in [lo, hi]; positionals are filled in declaration order.
  template <class T>
  cli& positional(std::string name, std::string help, T& out, T lo, T hi, bool required = true) {
    return add({name, "", std::move(help), true, required,
                [&out, lo, hi, name](std::string_view v) { out = parse_number(name, v, lo, hi); }});
  }
  /// @brief A named flag with a number in [lo, hi]: `--flag V` or `--flag=V`.
  template <class T>
  cli& option(std::string flag, std::string hint, std::string help, T& out, T lo, T hi) {
    return add({flag, std::move(hint), std::move(help), false, false,
                [&out, lo, hi, flag](std::string_view v) { out = parse_number(flag, v, lo, hi); }});
  }
  /// @brief A named switch without a value; sets `out` to `value` when given.
  cli& toggle(std::string flag, std::string help, bool& out, bool value = true);
  /// @brief A named flag whose value is one of `names`: `--sync finish` sets `out` to E(i),
  /// where names[i] is "finish". E is an enumeration whose values 0 .. names.size()-1 match.
  template <class E>
  cli& choice(std::string flag, std::string help, E& out, std::vector<std::string> names) {
    static_assert(std::is_enum_v<E>);
    std::string hint;
    for (const std::string& n : names) hint += (hint.empty() ? "" : "|") + n;
    return add({flag, std::move(hint), std::move(help), false, false,
                [&out, flag, names = std::move(names)](std::string_view v) {
                  out = static_cast<E>(detail::choice_index(flag, v, names));
                }});
  }

  /// @brief Runs the app. @return the process exit code.
  int run(int argc, char** argv, const body& b);

private:
  struct arg {
    std::string name; ///< "--cutoff", or "N" for a positional
    std::string hint; ///< value placeholder ("C"); empty for a switch
    std::string help;
    bool positional = false;
    bool required = false;
    std::function<void(std::string_view)> set;
  };
  cli& add(arg a);
  void parse(int argc, char** argv);
  std::string usage() const;
  void print_report(const report& r, const apgas::runtime& rt) const;
  void report_failure(const std::exception_ptr& failure, apgas::place_id here) const;

  std::string m_app;
  std::string m_summary;
  std::vector<arg> m_args;
  common_flags m_common;
};

/// @brief Hides `v` from the optimiser, so that calls to pure functions (fib_seq, ...) are
/// neither folded nor hoisted out of a timed loop.
template <class T>
inline void opaque(T& v) {
  asm volatile("" : "+m"(v) : : "memory");
}

/// @brief Wall-clock seconds `f()` takes.
template <class F>
double seconds_of(F&& f) {
  const auto start = std::chrono::steady_clock::now();
  f();
  const std::chrono::duration<double> d = std::chrono::steady_clock::now() - start;
  return d.count();
}

/// @brief The best of `repeat` timed calls of `f()`.
template <class F>
double best_seconds(int repeat, F&& f) {
  double best = std::numeric_limits<double>::infinity();
  for (int i = 0; i < repeat; ++i) best = std::min(best, seconds_of(f));
  return best;
}

/// @brief |a - b| / |b|, or |a - b| when b is 0.
inline double relative_error(double a, double b) {
  const double d = std::fabs(a - b);
  return b == 0 ? d : d / std::fabs(b);
}

namespace detail {
[[noreturn]] void throw_bad_number(std::string_view what, std::string_view text, bool whole,
                                   const std::string& lo, const std::string& hi);
std::string number_text(double v);
template <class T>
std::string number_text(T v) {
  if constexpr (std::is_integral_v<T>) return std::to_string(v);
  else return number_text(static_cast<double>(v));
}
std::string seq_mismatch(std::string_view title, const std::string& result,
                         std::string_view seq_name, const std::string& value);
} // namespace detail

/// @brief The sequential half of a report, skipped under --no-seq: times `seq(input)`, the best
/// of --repeat calls, into r.seq_seconds (which gives the printed speedup) and compares its
/// value with the parallel `result`. If `same(result, value)` is false, r's failure becomes
/// "<r.title> = <result> but <seq_name> gives <value>", unless it has one already. `input` and
/// the value are hidden from the optimiser, so every call is made and timed. pre: r.title set.
/// @return the sequential value, or nullopt under --no-seq.
///
///     r.title = fmt::format("fib({})", n);
///     run_seq_and_compare(r, flags, result, "fib_seq", apgas_apps::fib_seq, n);
template <class R, class Seq, class In, class Same = std::equal_to<>>
auto run_seq_and_compare(report& r, const common_flags& flags, const R& result,
                         std::string_view seq_name, Seq seq, In input, Same same = {})
    -> std::optional<std::invoke_result_t<Seq&, In&>> {
  using value_type = std::invoke_result_t<Seq&, In&>;
  if (!flags.run_seq) return std::nullopt;
  value_type value{};
  r.seq_seconds = best_seconds(flags.repeat, [&] {
    In in = input;
    opaque(in);
    value = seq(in);
    opaque(value);
  });
  if (!same(result, value) && r.failure.empty()) {
    r.failure = detail::seq_mismatch(r.title, detail::number_text(result), seq_name,
                                     detail::number_text(value));
  }
  return value;
}

template <class T>
T parse_number(std::string_view what, std::string_view text, T lo, T hi) {
  static_assert(std::is_arithmetic_v<T> && !std::is_same_v<T, bool>);
  T v{};
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, v);
  bool ok = !text.empty() && ec == std::errc{} && ptr == end && !(v < lo) && !(hi < v);
  if constexpr (std::is_floating_point_v<T>) ok = ok && std::isfinite(v);
  if (!ok) {
    detail::throw_bad_number(what, text, std::is_integral_v<T>, detail::number_text(lo),
                             detail::number_text(hi));
  }
  return v;
}

} // namespace apgas_apps
