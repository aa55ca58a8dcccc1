// Command-line parsing, help text, error handling and the result report shared by the apps.
#include "apgas_apps/cli.hpp"

#include <fmt/format.h>

#include <cctype>
#include <cstdio>
#include <exception>

namespace apgas_apps {

namespace detail {

void throw_bad_number(std::string_view what, std::string_view text, bool whole,
                      const std::string& lo, const std::string& hi) {
  throw apgas::usage_error(fmt::format("{}: expected {} from {} to {}, got '{}'", what,
                                       whole ? "a whole number" : "a number", lo, hi, text));
}

std::string number_text(double v) { return fmt::format("{}", v); }

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
    out.emplace_back(x.what());
  } catch (...) {
    out.emplace_back("a non-standard exception");
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
    const auto it = std::find_if(m_args.begin(), m_args.end(), [&](const arg& x) {
      return !x.positional && x.name == name;
    });
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
  std::string synopsis = fmt::format("usage: {} [runtime options]", m_app);
  std::string arguments;
  std::string options;
  for (const arg& a : m_args) {
    const std::string shown = a.hint.empty() ? a.name : fmt::format("{} {}", a.name, a.hint);
    if (a.positional) {
      synopsis += a.required ? fmt::format(" {}", shown) : fmt::format(" [{}]", shown);
      arguments += fmt::format("  {:<{}} {}\n", shown, k_help_column - 3, a.help);
    } else {
      synopsis += fmt::format(" [{}]", shown);
      options += fmt::format("  {:<{}} {}\n", shown, k_help_column - 3, a.help);
    }
  }
  options += fmt::format("  {:<{}} {}\n", "-h, --help", k_help_column - 3,
                         "print this help and exit");
  std::string s = fmt::format("{}\n\n{}\n\n", synopsis, m_summary);
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
    o.add("places", 1).add("threads", rt.threads()).add("policy", policy);
    o.add("repeat", m_common.repeat);
    if (r.work) o.add(r.work->unit + "_per_second", per_second);
    o.add(r.extra);
    if (!r.verified) o.add("failure", r.failure);
    fmt::print("{}\n", o.str());
  } else {
    std::string line = fmt::format("{} = {}  {}  {}", r.title, r.result.text(),
                                   r.verified ? "verified" : "FAILED", format_seconds(r.seconds));
    if (m_common.repeat > 1) line += fmt::format(" (best of {})", m_common.repeat);
    line += fmt::format("  ({} thread{}, {})", rt.threads(), rt.threads() == 1 ? "" : "s",
                        policy);
    if (r.work) line += "  " + format_rate(per_second, r.work->unit);
    if (r.seq_seconds) {
      line += fmt::format("  seq {}  speedup {:.2f}x", format_seconds(*r.seq_seconds),
                          r.seconds > 0 ? *r.seq_seconds / r.seconds : 0.0);
    }
    fmt::print("{}\n", line);
  }
  std::fflush(stdout);
}

int cli::run(int argc, char** argv, const body& b) {
  const auto usage_failure = [&](const char* what) {
    fmt::print(stderr, "{}: {} (see --help)\n", m_app, what);
    return k_exit_usage;
  };
  // The runtime first: it removes its own flags from argv and leaves the app's.
  std::optional<apgas::runtime> rt;
  try {
    rt.emplace(argc, argv);
  } catch (const apgas::usage_error& e) {
    return usage_failure(e.what());
  } catch (const std::exception& e) {
    fmt::print(stderr, "{}: cannot start the runtime: {}\n", m_app, e.what());
    return k_exit_run_failed;
  }

  option("--repeat", "R", "run the parallel part R times, report the best time (default 1)",
         m_common.repeat, 1, 1000000);
  toggle("--json", "print one JSON object on stdout instead of a line of text", m_common.json);
  toggle("--no-seq", "skip the sequential version (its time and the check against it)",
         m_common.run_seq, false);
  // --help wins over any other problem with the app's flags.
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (a == "--") break;
    if (a == "--help" || a == "-h") {
      fmt::print("{}", usage());
      return k_exit_ok;
    }
  }
  try {
    parse(argc, argv);
  } catch (const apgas::usage_error& e) {
    return usage_failure(e.what());
  }

  report r;
  try {
    r = b(*rt, m_common);
  } catch (...) {
    std::vector<std::string> errors;
    collect_errors(std::current_exception(), errors);
    if (errors.size() == 1) {
      fmt::print(stderr, "{}: the run failed: {}\n", m_app, errors.front());
    } else {
      fmt::print(stderr, "{}: the run failed: {} errors\n", m_app, errors.size());
      for (const auto& e : errors) fmt::print(stderr, "{}:   {}\n", m_app, e);
    }
    if (m_common.json) {
      json_object o;
      o.add("app", m_app).add("verified", false).add("error", json_value::array(errors));
      fmt::print("{}\n", o.str());
    }
    return k_exit_run_failed;
  }
  print_report(r, *rt);
  if (!r.verified) {
    fmt::print(stderr, "{}: self-check FAILED: {}\n", m_app, r.failure);
    return k_exit_check_failed;
  }
  return k_exit_ok;
}

} // namespace apgas_apps
