// The options table: the parser and the help line of every option, made from APGAS_OPTIONS.
#include "apgas/options.hpp"

#include "apgas/exceptions.hpp"

#include <fmt/format.h>

#include <charconv>
#include <cstdlib>
#include <cstring>
#include <type_traits>

namespace apgas {

std::string_view to_string(policy p) noexcept {
  switch (p) {
  case policy::work_first:
    return "work-first";
  case policy::help_first:
    return "help-first";
  case policy::adaptive:
    return "adaptive";
  }
  return "?";
}

namespace {

template <class T>
T parse_number(std::string_view what, std::string_view text, T low, T high) {
  static_assert(std::is_unsigned_v<T>, "apgas: an option is a yes/no, a policy or a count");
  T v = 0;
  const auto* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, v);
  if (ec != std::errc{} || ptr != end || v < low || v > high)
    throw usage_error(
        fmt::format("{}: expected a whole number from {} to {}, got '{}'", what, low, high, text));
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
  if (text == "adaptive" || text == "ad") return policy::adaptive;
  throw usage_error(
      fmt::format("{}: expected work-first, help-first or adaptive, got '{}'", what, text));
}

/// The value of option `what` given as `text`; a yes/no or a policy has no other values than
/// its range's, so only numbers are checked against low and high.
template <class T>
T parse_value(std::string_view what, std::string_view text, [[maybe_unused]] T low,
              [[maybe_unused]] T high) {
  if constexpr (std::is_same_v<T, bool>) return parse_bool(what, text);
  else if constexpr (std::is_same_v<T, policy>) return parse_policy(what, text);
  else return parse_number(what, text, low, high);
}

/// A default as help_text() shows it (see APGAS_OPTIONS for `auto`).
template <class T>
std::string show_value(T value, [[maybe_unused]] T low) {
  if constexpr (std::is_same_v<T, bool>) return value ? "yes" : "no";
  else if constexpr (std::is_same_v<T, policy>) return std::string(to_string(value));
  else return value < low ? std::string("auto") : std::to_string(value);
}

struct knob {
  const char* flag;       // "--threads"
  const char* variable;   // "APGAS_THREADS"
  const char* value_hint; // "N", or nullptr for a switch that takes no value on the command line
  const char* help;
  void (*set)(options& o, std::string_view what, std::string_view value);
  std::string (*show)(const options& o);
};

#define APGAS_KNOB(type, member, default_value, low, high, flag, variable, hint, help)             \
  knob{flag,                                                                                       \
       variable,                                                                                   \
       hint,                                                                                       \
       help,                                                                                       \
       [](options& o, std::string_view what, std::string_view value) {                             \
         o.member = parse_value<type>(what, value, low, high);                                     \
       },                                                                                          \
       [](const options& o) { return show_value<type>(o.member, low); }},
constexpr knob k_knobs[] = {APGAS_OPTIONS(APGAS_KNOB)};
#undef APGAS_KNOB

void apply_env(options& o) {
  for (const knob& k : k_knobs) {
    // Set but empty is a bad value like any other (a typo such as APGAS_THREADS=$T with T
    // unset), not the default.
    const char* v = std::getenv(k.variable);
    if (v != nullptr) k.set(o, k.variable, v);
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
    for (const knob& k : k_knobs) {
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
  for (const knob& k : k_knobs) {
    std::string flag = k.flag;
    if (k.value_hint != nullptr) flag += fmt::format(" {}", k.value_hint);
    s += fmt::format("  {:<34} {:<15} {} [default: {}]\n", flag, k.variable, k.help,
                     k.show(defaults));
  }
  return s;
}

} // namespace apgas
