// The options table: the parser and the help line of every option, made from APGAS_OPTIONS.
#include "apgas/options.hpp"

#include "apgas/detail/text_wrap.hpp"
#include "apgas/exceptions.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

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
  static_assert(std::is_unsigned_v<T> || std::is_floating_point_v<T>,
                "apgas: an option is a yes/no, a policy, a path, a count or a number");
  T v = 0;
  const auto* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, v);
  // `!(low <= v)`: a NaN is out of range too.
  if (ec != std::errc{} || ptr != end || !(low <= v) || v > high)
    throw usage_error(fmt::format("{}: expected a {} from {} to {}, got '{}'", what,
                                  std::is_floating_point_v<T> ? "number" : "whole number", low,
                                  high, text));
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
  if constexpr (std::is_same_v<T, std::string>) {
    if (text.empty()) throw usage_error(fmt::format("{}: expected a path, got nothing", what));
    return std::string(text);
  } else if constexpr (std::is_same_v<T, bool>) return parse_bool(what, text);
  else if constexpr (std::is_same_v<T, policy>) return parse_policy(what, text);
  else return parse_number(what, text, low, high);
}

/// A default as help_text() shows it (see APGAS_OPTIONS for `auto`).
template <class T>
std::string show_value(T value, [[maybe_unused]] T low) {
  if constexpr (std::is_same_v<T, bool>) return value ? "yes" : "no";
  else if constexpr (std::is_same_v<T, std::string>) return value.empty() ? "none" : value;
  else if constexpr (std::is_same_v<T, policy>) return std::string(to_string(value));
  else if constexpr (std::is_floating_point_v<T>) return fmt::format("{}", value);
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

namespace {

/// Variables of apgas's tools (launch/, bench/), not the runtime's: never reported.
constexpr const char* k_tool_variables[] = {
    "APGAS_MPI_MCA",         "APGAS_PRESET",          "APGAS_APPS_DIR",
    "APGAS_BENCH_THREADS_1", "APGAS_BENCH_THREADS_N", "APGAS_PLACES_BENCH_DIR",
};

/// Edits (insert, delete, replace, swap two neighbours) from a to b, capped at 3.
std::size_t distance(std::string_view a, std::string_view b) {
  if (a.size() > b.size() + 3 || b.size() > a.size() + 3) return 3;
  std::vector<std::size_t> prev2(b.size() + 1), prev(b.size() + 1), cur(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      cur[j] =
          std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        cur[j] = std::min(cur[j], prev2[j - 2] + 1);
    }
    prev2.swap(prev);
    prev.swap(cur);
  }
  return std::min<std::size_t>(prev[b.size()], 3);
}

/// The knob whose name (flag or variable) is fewest edits from `name`, under 3, and that
/// distance; nullptr if none is that close.
std::pair<const knob*, std::size_t> closest_knob(std::string_view name, const char* knob::*which) {
  const knob* closest = nullptr;
  std::size_t best = 3;
  for (const knob& k : k_knobs)
    if (const std::size_t d = distance(name, k.*which); d < best) {
      best = d;
      closest = &k;
    }
  return {closest, best};
}

} // namespace

std::vector<std::string> options::unknown_variables() {
  std::vector<std::string> out;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const std::string_view entry = *e;
    const std::string_view name = entry.substr(0, entry.find('='));
    if (name.substr(0, 6) != "APGAS_") continue;
    const auto is = [&](const char* known) { return name == known; };
    if (std::any_of(std::begin(k_knobs), std::end(k_knobs),
                    [&](const knob& k) { return is(k.variable); }) ||
        std::any_of(std::begin(k_tool_variables), std::end(k_tool_variables), is))
      continue;
    const knob* closest = closest_knob(name, &knob::variable).first;
    out.push_back(closest == nullptr
                      ? std::string(name)
                      : fmt::format("{} (did you mean {}?)", name, closest->variable));
  }
  return out;
}

std::vector<std::string> options::near_miss_flags(int argc, const char* const* argv) {
  std::vector<std::string> out;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--") break; // the program's own, by the user's say
    if (arg.size() < 3 || arg.substr(0, 2) != "--") continue;
    const std::string_view name = arg.substr(0, arg.find('='));
    const auto [closest, best] = closest_knob(name, &knob::flag);
    // Two edits only between longer names: a program's --fib-n is no misspelt --glb-n.
    if (closest == nullptr || best == 0 || (best == 2 && std::strlen(closest->flag) < 8)) continue;
    out.push_back(fmt::format("{} (did you mean {}?)", name, closest->flag));
  }
  return out;
}

std::string options::help_text() {
  constexpr std::size_t k_text_indent = 6; // of an option's text under its flag
  std::string s = "Runtime options (flag, or environment variable):\n";
  const options defaults;
  for (const knob& k : k_knobs) {
    // The flag and the variable on one line where they fit, then the text and the default.
    std::string head = fmt::format("  {}", k.flag);
    if (k.value_hint != nullptr) head += fmt::format(" {}", k.value_hint);
    const std::size_t column = std::max<std::size_t>(38, head.size() + 1);
    if (column + std::strlen(k.variable) <= detail::k_help_width)
      s += fmt::format("{:<{}}{}\n", head, column, k.variable);
    else s += fmt::format("{}\n{:{}}{}\n", head, "", k_text_indent, k.variable);
    std::vector<std::string> words = detail::words_of(k.help);
    words.push_back(fmt::format("[default: {}]", k.show(defaults))); // kept whole
    s += detail::hanging("", k_text_indent, words);
  }
  return s;
}

} // namespace apgas
