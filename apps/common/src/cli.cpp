// Command-line parsing, help text, error handling and the result report shared by the apps.
#include "apgas_apps/cli.hpp"

#include <apgas/checkpoint.hpp>
#include <apgas/detail/text_wrap.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <optional>
#include <string>
#include <vector>

namespace apgas_apps {

namespace detail {

void throw_bad_number(std::string_view what, std::string_view text, bool whole,
                      const std::string& lo, const std::string& hi) {
  throw apgas::usage_error(fmt::format("{}: expected {} from {} to {}, got '{}'", what,
                                       whole ? "a whole number" : "a number", lo, hi, text));
}

std::string number_text(double v) { return fmt::format("{}", v); }

std::size_t choice_index(std::string_view what, std::string_view text,
                         const std::vector<std::string>& names) {
  for (std::size_t i = 0; i < names.size(); ++i)
    if (names[i] == text) return i;
  std::string expected;
  for (std::size_t i = 0; i < names.size(); ++i)
    expected += (i == 0 ? "" : i + 1 == names.size() ? " or " : ", ") + names[i];
  throw apgas::usage_error(fmt::format("{}: expected {}, got '{}'", what, expected, text));
}

std::string seq_mismatch(std::string_view title, const std::string& result,
                         std::string_view seq_name, const std::string& value) {
  return fmt::format("{} = {} but {} gives {}", title, result, seq_name, value);
}

} // namespace detail

namespace {

constexpr int k_help_column = 24;
/// "-5" and "-.5" are (bad) numbers for a positional, not flags.
bool looks_like_flag(std::string_view a) {
  return a.size() >= 2 && a[0] == '-' && !std::isdigit(static_cast<unsigned char>(a[1])) &&
         a[1] != '.';
}

std::string format_seconds(double s) {
  if (s >= 1.0) return fmt::format("{:.3f} s", s);
  if (s >= 1e-3) return fmt::format("{:.3f} ms", s * 1e3);
  return fmt::format("{:.1f} us", s * 1e6);
}

std::string format_rate(double per_second, const std::string& unit) {
  static constexpr const char* k_prefixes[] = {"", " k", " M", " G", " T"};
  std::size_t i = 0;
  for (; per_second >= 1000.0 && i + 1 < std::size(k_prefixes); ++i) per_second /= 1000.0;
  return fmt::format("{:.1f}{} {}/s", per_second, k_prefixes[i], unit);
}

/// Every failure inside `e`, with nested multiple_exceptions (a finish inside an activity
/// that failed) flattened, so each original error is listed once.
void collect_errors(const std::exception_ptr& e, std::vector<std::string>& out) {
  try {
    std::rethrow_exception(e);
  } catch (const apgas::multiple_exceptions& m) {
    for (const auto& inner : m.exceptions()) collect_errors(inner, out);
  } catch (const std::exception& x) {
    const apgas::remote_origin* origin = apgas::origin_of(x); // named with its place
    out.emplace_back(origin != nullptr ? origin->describe() : x.what());
  } catch (...) {
    out.emplace_back("a non-standard exception");
  }
}

/// The message of a failure made of usage errors alone (a bad checkpoint found inside the
/// run, say), or nothing: such a run ends as a bad flag does, with one line and exit code 2.
std::optional<std::string> usage_error_in(const std::exception_ptr& e) {
  try {
    std::rethrow_exception(e);
  } catch (const apgas::multiple_exceptions& m) {
    std::optional<std::string> first;
    for (const auto& inner : m.exceptions()) {
      std::optional<std::string> what = usage_error_in(inner);
      if (!what) return std::nullopt;
      if (!first) first = std::move(what);
    }
    return first;
  } catch (const apgas::usage_error& u) {
    return std::string(u.what());
  } catch (...) {
    return std::nullopt;
  }
}

/// This place's exit code, read by place 0 when the places agree on one (an `at` body cannot
/// capture it, and there is one cli::run per process).
std::atomic<int> g_exit_code{k_exit_ok};

/// The rank the MPI launcher gave this process (Open MPI, PMIx, MPICH/Hydra), 0 if none.
int launcher_rank() {
  for (const char* name : {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK"}) {
    if (const char* v = std::getenv(name)) return std::atoi(v);
  }
  return 0;
}

/// Collective: the worst (largest) exit code of all places, at every place. One extra run:
/// place 0 asks every place at once, and the run's value reaches every place.
int agree_on_exit_code(apgas::runtime& rt, int mine) {
  g_exit_code.store(mine);
  if (rt.places() == 1) return mine;
  try {
    return rt.run([]() -> apgas::task<int> {
      const std::vector<int> codes =
          co_await apgas::at_each_place([] { return g_exit_code.load(); });
      co_return std::max(k_exit_ok, *std::max_element(codes.begin(), codes.end()));
    });
  } catch (const std::exception& e) {
    fmt::print(stderr, "apgas_apps: place {}: the places could not agree on an exit code: {}\n",
               rt.here(), e.what());
    return k_exit_run_failed;
  }
}

} // namespace

cli::cli(std::string app, std::string summary)
    : m_app(std::move(app)), m_summary(std::move(summary)) {}

cli& cli::toggle(std::string flag, std::string help, bool& out, bool value) {
  return add({std::move(flag), "", std::move(help), false, false,
              [&out, value](std::string_view) { out = value; }});
}

cli& cli::add(arg a) {
  m_args.push_back(std::move(a));
  return *this;
}

void cli::parse(int argc, char** argv) {
  std::vector<const arg*> positionals;
  for (const arg& a : m_args)
    if (a.positional) positionals.push_back(&a);
  std::size_t next = 0;
  bool only_positionals = false;
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (!only_positionals && a == "--") { // the runtime leaves it in: the rest is positional
      only_positionals = true;
      continue;
    }
    if (only_positionals || !looks_like_flag(a)) {
      if (next == positionals.size())
        throw apgas::usage_error(fmt::format("unexpected argument '{}'", a));
      positionals[next++]->set(a);
      continue;
    }
    const std::size_t eq = a.find('=');
    const std::string_view name = a.substr(0, eq);
    const auto it = std::find_if(m_args.begin(), m_args.end(),
                                 [&](const arg& x) { return !x.positional && x.name == name; });
    if (it == m_args.end()) throw apgas::usage_error(fmt::format("unknown flag '{}'", name));
    if (it->hint.empty()) {
      if (eq != std::string_view::npos)
        throw apgas::usage_error(fmt::format("{} takes no value", name));
      it->set({});
    } else if (eq != std::string_view::npos) {
      it->set(a.substr(eq + 1));
    } else if (i + 1 < argc) {
      it->set(argv[++i]);
    } else {
      throw apgas::usage_error(fmt::format("{} needs a value ({})", name, it->hint));
    }
  }
  for (; next < positionals.size(); ++next) {
    if (positionals[next]->required)
      throw apgas::usage_error(fmt::format("missing argument {}", positionals[next]->name));
  }
}

std::string cli::usage() const {
  using apgas::detail::hanging;
  using apgas::detail::words_of;
  std::vector<std::string> synopsis{"[runtime", "options]"};
  std::string arguments;
  std::string options;
  // An argument's text starts at k_help_column - 1, after its name.
  const std::size_t column = k_help_column - 1;
  for (const arg& a : m_args) {
    const std::string shown = a.hint.empty() ? a.name : fmt::format("{} {}", a.name, a.hint);
    // A synopsis item is one word for the wrapping: never split.
    synopsis.push_back(a.positional && a.required ? shown : fmt::format("[{}]", shown));
    (a.positional ? arguments : options) += hanging("  " + shown, column, words_of(a.help));
  }
  options += hanging("  -h, --help", column, words_of("print this help and exit"));
  const std::string usage_head = fmt::format("usage: {}", m_app);
  const std::string usage = hanging(usage_head, usage_head.size() + 1, synopsis);
  std::string s = fmt::format("{}\n{}\n\n", usage, m_summary);
  if (!arguments.empty()) s += "Arguments:\n" + arguments;
  s += "Options:\n" + options;
  s += "\nExit status: 0 result verified, 1 self-check failed, 2 usage error, 3 the run "
       "failed.\n\n";
  s += apgas::options::help_text();
  return s;
}

void cli::print_report(const report& r, const apgas::runtime& rt) const {
  const std::string policy(apgas::to_string(rt.opts().default_policy));
  const double per_second = r.work && r.seconds > 0 ? r.work->count / r.seconds : 0.0;
  if (m_common.json) {
    json_object o;
    o.add("app", m_app).add("result", r.result).add("verified", r.verified);
    o.add("seconds", r.seconds);
    if (r.seq_seconds) {
      o.add("seq_seconds", *r.seq_seconds);
      o.add("speedup", r.seconds > 0 ? *r.seq_seconds / r.seconds : 0.0);
    }
    o.add("places", rt.places()).add("threads", rt.threads()).add("policy", policy);
    o.add("repeat", m_common.repeat);
    if (r.work) o.add(r.work->unit + "_per_second", per_second);
    o.add(r.extra);
    if (!r.verified) o.add("failure", r.failure);
    fmt::print("{}\n", o.str());
  } else {
    std::string line = fmt::format("{} = {}  {}  {}", r.title, r.result.text(),
                                   r.verified ? "verified" : "FAILED", format_seconds(r.seconds));
    if (m_common.repeat > 1) line += fmt::format(" (best of {})", m_common.repeat);
    // One place keeps the line it always had; more show how many ("2 places x 4 threads").
    const std::string places =
        rt.places() == 1 ? std::string() : fmt::format("{} places x ", rt.places());
    line += fmt::format("  ({}{} thread{}, {})", places, rt.threads(), rt.threads() == 1 ? "" : "s",
                        policy);
    if (r.work) line += "  " + format_rate(per_second, r.work->unit);
    if (r.seq_seconds) {
      line += fmt::format("  seq {}  speedup {:.2f}x", format_seconds(*r.seq_seconds),
                          r.seconds > 0 ? *r.seq_seconds / r.seconds : 0.0);
    }
    fmt::print("{}\n", line);
    for (const std::string& d : r.details) fmt::print("  {}\n", d);
  }
  std::fflush(stdout);
}

int cli::run(int argc, char** argv, const body& b) {
  option("--repeat", "R", "run the parallel part R times, report the best time (default 1)",
         m_common.repeat, 1, 1000000);
  toggle("--json", "print one JSON object on stdout instead of a line of text", m_common.json);
  toggle("--no-seq", "skip the sequential version (its time and the check against it)",
         m_common.run_seq, false);
  // --help wins over any other problem with the flags, and comes before the runtime, which
  // would answer it with its own options only (the usage ends with them). No MPI yet: the
  // launcher's rank variable says which process prints it.
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (a == "--") break;
    if (a == "--help" || a == "-h") {
      if (launcher_rank() == 0) fmt::print("{}", usage());
      return k_exit_ok;
    }
  }
  // The runtime first: it removes its own flags from argv and leaves the app's. It throws
  // before it knows which place this is (MPI is not started yet): the launcher's rank variable
  // says, so that a bad runtime flag is reported once, not once per place.
  std::optional<apgas::runtime> rt;
  try {
    rt.emplace(argc, argv);
  } catch (const apgas::usage_error& e) {
    if (launcher_rank() == 0) fmt::print(stderr, "{}: {} (see --help)\n", m_app, e.what());
    return k_exit_usage;
  } catch (const std::exception& e) {
    fmt::print(stderr, "{}: cannot start the runtime: {}\n", m_app, e.what());
    return k_exit_run_failed;
  }
  // From here on every place takes the same path (same argv, same environment), so the
  // collective calls below (the runs, the exit-code agreement, ~runtime) match up.
  const bool lead = rt->here() == 0;
  const auto usage_failure = [&](const char* what) {
    if (lead) fmt::print(stderr, "{}: {} (see --help)\n", m_app, what);
    return k_exit_usage;
  };

  try {
    parse(argc, argv);
  } catch (const apgas::usage_error& e) {
    return usage_failure(e.what());
  }

  common_flags flags = m_common;
  if (!lead) flags.run_seq = false; // only place 0 reports (see the file comment)
  int code = k_exit_ok;
  try {
    const report r = b(*rt, flags);
    if (lead) {
      print_report(r, *rt);
      if (!r.verified) fmt::print(stderr, "{}: self-check FAILED: {}\n", m_app, r.failure);
    }
    code = r.verified || !lead ? k_exit_ok : k_exit_check_failed;
  } catch (const apgas::checkpoint_error& e) {
    if (lead) fmt::print(stderr, "{}: {}\n", m_app, e.what()); // --help would not help
    code = k_exit_usage;
  } catch (const apgas::usage_error& e) {
    code = usage_failure(e.what()); // flags that do not go together, found by the body
  } catch (...) {
    if (const std::optional<std::string> what = usage_error_in(std::current_exception())) {
      if (lead) fmt::print(stderr, "{}: {}\n", m_app, *what);
      code = k_exit_usage;
    } else {
      code = k_exit_run_failed;
      report_failure(std::current_exception(), rt->here());
    }
  }
  const int agreed = agree_on_exit_code(*rt, code);
  if (lead && agreed != code) {
    fmt::print(stderr, "{}: another place failed (exit status {}, see its messages)\n", m_app,
               agreed);
  }
  return agreed;
}

void cli::report_failure(const std::exception_ptr& failure, apgas::place_id here) const {
  // A run that failed throws at every place: at place 0 as it failed, elsewhere as it arrived
  // from place 0 (a multiple_exceptions, or an exception that came from another place). Place
  // 0 reports it; the others stay quiet unless their failure is their own.
  if (here != 0) {
    try {
      std::rethrow_exception(failure);
    } catch (const apgas::multiple_exceptions&) {
      return;
    } catch (const std::exception& e) {
      if (apgas::origin_of(e) != nullptr) return;
    } catch (...) {
    }
  }
  const std::string who = here == 0 ? m_app : fmt::format("{} (place {})", m_app, here);
  std::vector<std::string> errors;
  collect_errors(failure, errors);
  if (errors.size() == 1) {
    fmt::print(stderr, "{}: the run failed: {}\n", who, errors.front());
  } else {
    fmt::print(stderr, "{}: the run failed: {} errors\n", who, errors.size());
    for (const auto& e : errors) fmt::print(stderr, "{}:   {}\n", who, e);
  }
  if (m_common.json && here == 0) {
    json_object o;
    o.add("app", m_app).add("verified", false).add("error", json_value::array(errors));
    fmt::print("{}\n", o.str());
  }
  std::fflush(stdout);
}

} // namespace apgas_apps
