// The options table: every runtime knob, its flag, its APGAS_* variable and its parser.
#include "apgas/options.hpp"

#include "apgas/exceptions.hpp"

#include <fmt/format.h>

#include <charconv>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <span>

namespace apgas {

std::string_view to_string(policy p) noexcept {
  return p == policy::work_first ? "work-first" : "help-first";
}

namespace {

unsigned parse_unsigned(std::string_view what, std::string_view text, unsigned lo, unsigned hi) {
  unsigned v = 0;
  const auto* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, v);
  if (ec != std::errc{} || ptr != end || v < lo || v > hi)
    throw usage_error(fmt::format("{}: expected a whole number from {} to {}, got '{}'", what, lo,
                                  hi, text));
  return v;
}

bool parse_bool(std::string_view what, std::string_view text) {
  if (text == "1" || text == "yes" || text == "true" || text == "on") return true;
  if (text == "0" || text == "no" || text == "false" || text == "off") return false;
  throw usage_error(fmt::format("{}: expected yes or no, got '{}'", what, text));
}

policy parse_policy(std::string_view what, std::string_view text) {
  if (text == "work-first" || text == "wf" || text == "work_first") return policy::work_first;
  if (text == "help-first" || text == "hf" || text == "help_first") return policy::help_first;
  throw usage_error(fmt::format("{}: expected work-first or help-first, got '{}'", what, text));
}

struct knob {
  const char* flag;       // "--threads"
  const char* variable;   // "APGAS_THREADS"
  const char* value_hint; // "N", or nullptr for a switch that takes no value on the command line
  const char* help;
  std::function<void(options&, std::string_view what, std::string_view value)> set;
  std::function<std::string(const options&)> show;
};

const std::span<const knob> knobs() {
  static const knob table[] = {
      {"--threads", "APGAS_THREADS", "N", "worker threads per place (default: PUs of the cpuset)",
       [](options& o, std::string_view w, std::string_view v) {
         o.threads = parse_unsigned(w, v, 1, 4096);
       },
       [](const options& o) { return o.threads == 0 ? std::string("auto") : std::to_string(o.threads); }},
      {"--policy", "APGAS_POLICY", "work-first|help-first", "default scheduling policy of finishes",
       [](options& o, std::string_view w, std::string_view v) { o.default_policy = parse_policy(w, v); },
       [](const options& o) { return std::string(to_string(o.default_policy)); }},
      {"--stats", "APGAS_STATS", nullptr, "print per-worker statistics at exit",
       [](options& o, std::string_view w, std::string_view v) { o.stats = parse_bool(w, v); },
       [](const options& o) { return std::string(o.stats ? "yes" : "no"); }},
      {"--pin", "APGAS_PIN", "yes|no", "bind each worker to one PU of the process cpuset",
       [](options& o, std::string_view w, std::string_view v) { o.pin_workers = parse_bool(w, v); },
       [](const options& o) { return std::string(o.pin_workers ? "yes" : "no"); }},
      {"--spin-us", "APGAS_SPIN_US", "N",
       "microseconds an idle worker keeps looking for work (and messages) before it parks",
       [](options& o, std::string_view w, std::string_view v) {
         o.spin_us = parse_unsigned(w, v, 0, 1000000);
       },
       [](const options& o) { return std::to_string(o.spin_us); }},
      {"--progress-ms", "APGAS_PROGRESS_MS", "N",
       "print a progress line (tasks, steals, messages) to stderr every N ms; 0: never",
       [](options& o, std::string_view w, std::string_view v) {
         o.progress_ms = parse_unsigned(w, v, 0, 86400000);
       },
       [](const options& o) { return std::to_string(o.progress_ms); }},
      {"--coalesce-bytes", "APGAS_COALESCE_BYTES", "N",
       "coalescing buffer per destination place, in bytes",
       [](options& o, std::string_view w, std::string_view v) {
         o.coalesce_bytes = parse_unsigned(w, v, 64, 1U << 30);
       },
       [](const options& o) { return std::to_string(o.coalesce_bytes); }},
      {"--coalesce-memory-mib", "APGAS_COALESCE_MEMORY_MIB", "N",
       "coalescing buffers of a place, all destinations together, in MiB: at many places the "
       "buffer per destination shrinks to fit (not below 1 KiB)",
       [](options& o, std::string_view w, std::string_view v) {
         o.coalesce_memory_mib = parse_unsigned(w, v, 1, 1U << 20);
       },
       [](const options& o) { return std::to_string(o.coalesce_memory_mib); }},
      {"--flush-us", "APGAS_FLUSH_US", "N",
       "a buffered message leaves after at most N microseconds",
       [](options& o, std::string_view w, std::string_view v) {
         o.flush_us = parse_unsigned(w, v, 1, 10000000);
       },
       [](const options& o) { return std::to_string(o.flush_us); }},
      {"--report-delay-us", "APGAS_REPORT_DELAY_US", "N",
       "longest a place holds a finish's report its home did not ask for (0: none held)",
       [](options& o, std::string_view w, std::string_view v) {
         o.report_delay_us = parse_unsigned(w, v, 0, 10000000);
       },
       [](const options& o) { return std::to_string(o.report_delay_us); }},
      {"--coalesce", "APGAS_COALESCE", "yes|no",
       "gather small messages to one place into one MPI message",
       [](options& o, std::string_view w, std::string_view v) { o.coalesce = parse_bool(w, v); },
       [](const options& o) { return std::string(o.coalesce ? "yes" : "no"); }},
  };
  return table;
}

void apply_env(options& o) {
  for (const knob& k : knobs()) {
    const char* v = std::getenv(k.variable);
    if (v != nullptr && *v != '\0') k.set(o, k.variable, v);
  }
}

} // namespace

options options::from_env() {
  options o;
  apply_env(o);
  return o;
}

options options::from_env_and_args(int& argc, char** argv) {
  options o = from_env();
  int out = 1;
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    if (arg == "--") { // everything after belongs to the program
      for (; i < argc; ++i) argv[out++] = argv[i];
      break;
    }
    const knob* match = nullptr;
    std::string_view value;
    bool has_inline_value = false;
    for (const knob& k : knobs()) {
      const std::size_t n = std::strlen(k.flag);
      if (arg.substr(0, n) != k.flag) continue;
      if (arg.size() == n) {
        match = &k;
      } else if (arg[n] == '=') {
        match = &k;
        value = arg.substr(n + 1);
        has_inline_value = true;
      }
      if (match != nullptr) break;
    }
    if (match == nullptr) {
      argv[out++] = argv[i];
      continue;
    }
    if (!has_inline_value) {
      if (match->value_hint == nullptr) {
        value = "yes";
      } else if (i + 1 < argc) {
        value = argv[++i];
      } else {
        throw usage_error(fmt::format("{} needs a value ({})", match->flag, match->value_hint));
      }
    }
    match->set(o, match->flag, value);
  }
  argc = out;
  argv[argc] = nullptr;
  return o;
}

std::string options::help_text() {
  std::string s = "Runtime options (flag, or environment variable):\n";
  const options defaults;
  for (const knob& k : knobs()) {
    std::string flag = k.flag;
    if (k.value_hint != nullptr) flag += fmt::format(" {}", k.value_hint);
    s += fmt::format("  {:<34} {:<15} {} [default: {}]\n", flag, k.variable, k.help, k.show(defaults));
  }
  return s;
}

} // namespace apgas
