// The options table: flags, APGAS_* variables, and clear errors on bad values.
#include <apgas/exceptions.hpp>
#include <apgas/options.hpp>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <string>
#include <type_traits>
#include <vector>

namespace {

struct argv_builder { // owns mutable argv storage for from_env_and_args
  explicit argv_builder(std::vector<std::string> args) : m_args(std::move(args)) {
    for (auto& a : m_args) m_ptrs.push_back(a.data());
    m_ptrs.push_back(nullptr);
    argc = static_cast<int>(m_args.size());
  }
  char** argv() { return m_ptrs.data(); }
  int argc;
  std::vector<std::string> m_args;
  std::vector<char*> m_ptrs;
};

TEST(options, flags_are_consumed_and_the_rest_is_left_in_order) {
  argv_builder a({"app", "35", "--threads", "3", "--json", "--policy=help-first", "--stats"});
  const apgas::options o = apgas::options::from_env_and_args(a.argc, a.argv());
  EXPECT_EQ(o.threads, 3U);
  EXPECT_EQ(o.default_policy, apgas::policy::help_first);
  EXPECT_TRUE(o.stats);
  ASSERT_EQ(a.argc, 3);
  EXPECT_STREQ(a.argv()[1], "35");
  EXPECT_STREQ(a.argv()[2], "--json");
  EXPECT_EQ(a.argv()[3], nullptr);
}

TEST(options, the_policy_is_one_of_three) {
  for (const auto& [text, p] : {std::pair{"work-first", apgas::policy::work_first},
                                std::pair{"help-first", apgas::policy::help_first},
                                std::pair{"adaptive", apgas::policy::adaptive}}) {
    argv_builder a({"app", "--policy", text});
    EXPECT_EQ(apgas::options::from_env_and_args(a.argc, a.argv()).default_policy, p) << text;
    EXPECT_EQ(apgas::to_string(p), text);
  }
  argv_builder bad({"app", "--policy", "eager"});
  EXPECT_THROW((void)apgas::options::from_env_and_args(bad.argc, bad.argv()), apgas::usage_error);
}

TEST(options, environment_variables_set_defaults_and_flags_win) {
  ::setenv("APGAS_THREADS", "5", 1);
  ::setenv("APGAS_POLICY", "help-first", 1);
  argv_builder a({"app", "--threads", "2"});
  const apgas::options o = apgas::options::from_env_and_args(a.argc, a.argv());
  ::unsetenv("APGAS_THREADS");
  ::unsetenv("APGAS_POLICY");
  EXPECT_EQ(o.threads, 2U);
  EXPECT_EQ(o.default_policy, apgas::policy::help_first);
}

TEST(options, the_coalescing_memory_budget_is_a_knob) {
  EXPECT_EQ(apgas::options{}.coalesce_memory_mib, 256U);
  argv_builder a({"app", "--coalesce-memory-mib", "16", "x"});
  const apgas::options o = apgas::options::from_env_and_args(a.argc, a.argv());
  EXPECT_EQ(o.coalesce_memory_mib, 16U);
  EXPECT_EQ(a.argc, 2);
}

TEST(options, bad_values_are_usage_errors_that_name_the_knob) {
  for (const auto& bad :
       std::vector<std::vector<std::string>>{{"app", "--threads", "zero"},
                                             {"app", "--threads", "0"},
                                             {"app", "--threads=-3"},
                                             {"app", "--policy", "fastest"},
                                             {"app", "--pin", "maybe"},
                                             {"app", "--coalesce-memory-mib", "0"},
                                             {"app", "--threads"}}) {
    argv_builder a(bad);
    try {
      (void)apgas::options::from_env_and_args(a.argc, a.argv());
      ADD_FAILURE() << "accepted " << bad.back();
    } catch (const apgas::usage_error& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("--"), std::string::npos) << what;
    }
  }
  ::setenv("APGAS_POLICY", "sideways", 1);
  EXPECT_THROW((void)apgas::options::from_env(), apgas::usage_error);
  ::unsetenv("APGAS_POLICY");
}

TEST(options, a_variable_set_but_empty_is_a_bad_value_not_the_default) {
  for (const char* variable : {"APGAS_THREADS", "APGAS_POLICY", "APGAS_STATS"}) {
    ::setenv(variable, "", 1);
    try {
      (void)apgas::options::from_env();
      ADD_FAILURE() << variable << "= was accepted";
    } catch (const apgas::usage_error& e) {
      EXPECT_NE(std::string(e.what()).find(variable), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("''"), std::string::npos) << e.what();
    }
    ::unsetenv(variable);
  }
}

TEST(options, apgas_variables_that_are_no_option_are_named_with_the_closest_option) {
  ::setenv("APGAS_THRAEDS", "2", 1);         // two letters swapped
  ::setenv("APGAS_NOTHING_LIKE_IT", "1", 1); // nothing close
  ::setenv("APGAS_MPI_MCA", "", 1);          // apgasrun's own
  const std::vector<std::string> unknown = apgas::options::unknown_variables();
  ::unsetenv("APGAS_THRAEDS");
  ::unsetenv("APGAS_NOTHING_LIKE_IT");
  ::unsetenv("APGAS_MPI_MCA");
  EXPECT_NE(
      std::find(unknown.begin(), unknown.end(), "APGAS_THRAEDS (did you mean APGAS_THREADS?)"),
      unknown.end());
  EXPECT_NE(std::find(unknown.begin(), unknown.end(), "APGAS_NOTHING_LIKE_IT"), unknown.end());
  for (const std::string& u : unknown) EXPECT_EQ(u.find("APGAS_MPI_MCA"), std::string::npos);
  EXPECT_EQ(unknown.size(), 2U);
}

TEST(options, program_arguments_close_to_a_runtime_flag_are_named_and_stay_the_programs) {
  std::array<const char*, 10> args = {"prog",      "--thread", "1",       "--polcy=help-first",
                                      "--threads", "2",        "--fib-n", "--totally-different",
                                      "--",        "--thred"};
  int argc = static_cast<int>(args.size());
  std::vector<char*> argv;
  for (const char* a : args) argv.push_back(const_cast<char*>(a));
  argv.push_back(nullptr);
  const apgas::options o = apgas::options::from_env_and_args(argc, argv.data());
  EXPECT_EQ(o.threads, 2U);
  // The runtime's --threads 2 is consumed; everything else is the program's.
  ASSERT_EQ(argc, 8);
  EXPECT_STREQ(argv[1], "--thread");
  EXPECT_STREQ(argv[3], "--polcy=help-first");
  const std::vector<std::string> near = apgas::options::near_miss_flags(argc, argv.data());
  // --fib-n is two edits from --glb-n, too short a name to call it a slip; after -- nothing.
  EXPECT_EQ(near, (std::vector<std::string>{"--thread (did you mean --threads?)",
                                            "--polcy (did you mean --policy?)"}));
}

TEST(options, help_text_lists_every_flag_with_its_variable) {
  const std::string help = apgas::options::help_text();
  for (const char* s : {"--threads", "APGAS_THREADS", "--policy", "APGAS_POLICY", "--stats",
                        "APGAS_STATS", "--pin", "--spin-us", "APGAS_SPIN_US"})
    EXPECT_NE(help.find(s), std::string::npos) << s;
}

/// How a flag or a variable gives `value`.
template <class T>
std::string text_of(T value) {
  if constexpr (std::is_same_v<T, std::string>) return value.empty() ? "none" : value;
  else if constexpr (std::is_same_v<T, bool>) return value ? "yes" : "no";
  else if constexpr (std::is_same_v<T, apgas::policy>) return std::string(apgas::to_string(value));
  else if constexpr (std::is_floating_point_v<T>) return fmt::format("{}", value); // as --help
  else return std::to_string(value);
}

/// One line of APGAS_OPTIONS, for the tests below (`get` reads its member).
template <class T, class Get>
struct option_line {
  const char* member;
  T default_value;
  T low;
  T high;
  const char* flag;
  const char* variable;
  const char* help;
  Get get;
};

/// Calls `check(option_line)` for every option.
template <class Check>
void for_each_option(Check check) {
#define APGAS_OPTION_LINE(type, member, default_value, low, high, flag, variable, hint, help)      \
  check(option_line<type, type (*)(const apgas::options&)>{                                        \
      #member, default_value, low, high, flag, variable, help,                                     \
      [](const apgas::options& o) { return o.member; }});
  APGAS_OPTIONS(APGAS_OPTION_LINE)
#undef APGAS_OPTION_LINE
}

TEST(options, every_default_lies_in_its_range_and_only_threads_is_decided_at_start) {
  const apgas::options o;
  for_each_option([&](const auto& line) {
    EXPECT_TRUE(line.low <= line.high) << line.member;
    EXPECT_TRUE(line.get(o) == line.default_value) << line.member;
    EXPECT_TRUE(line.default_value <= line.high) << line.member;
    if (line.default_value < line.low) {
      EXPECT_EQ(std::string(line.member), "threads") << "a default below its range";
    }
  });
}

TEST(options, help_text_gives_each_option_its_variable_help_and_default_in_100_columns) {
  const std::string help = apgas::options::help_text();
  std::size_t options = 0;
  for_each_option([&](const auto& line) {
    ++options;
    // An option's entry: from its flag to the next flag, its text's lines joined.
    const std::size_t at = help.find(std::string("\n  ") + line.flag + " ");
    ASSERT_NE(at, std::string::npos) << line.flag;
    const std::size_t next = help.find("\n  --", at);
    std::string text =
        help.substr(at + 1, next == std::string::npos ? std::string::npos : next - at - 1);
    for (std::size_t nl; (nl = text.find("\n      ")) != std::string::npos;)
      text.replace(nl, 7, " ");
    EXPECT_NE(text.find(line.variable), std::string::npos) << text;
    EXPECT_NE(text.find(line.help), std::string::npos) << text;
    const std::string shown =
        line.default_value < line.low ? std::string("auto") : text_of(line.default_value);
    EXPECT_NE(text.find("[default: " + shown + "]"), std::string::npos) << text;
  });
  std::size_t flags = 0;
  for (std::size_t at = 0, end; at < help.size(); at = end + 1) {
    end = help.find('\n', at);
    const std::string one = help.substr(at, end - at);
    EXPECT_LE(one.size(), 100U) << one;
    flags += one.rfind("  --", 0) == 0 ? 1 : 0;
  }
  EXPECT_EQ(flags, options) << "a line that starts with a flag for every option, no other";
}

TEST(options, every_option_takes_its_range_from_a_flag_and_a_variable_and_nothing_beyond) {
  for_each_option([](const auto& line) {
    if constexpr (std::is_same_v<decltype(line.default_value), std::string>) return; // below
    argv_builder a({"app", std::string(line.flag) + "=" + text_of(line.high)});
    EXPECT_TRUE(line.get(apgas::options::from_env_and_args(a.argc, a.argv())) == line.high)
        << line.flag;
    ::setenv(line.variable, text_of(line.low).c_str(), 1);
    EXPECT_TRUE(line.get(apgas::options::from_env()) == line.low) << line.variable;
    ::setenv(line.variable, (text_of(line.high) + "0").c_str(), 1);
    EXPECT_THROW((void)apgas::options::from_env(), apgas::usage_error) << line.variable;
    ::unsetenv(line.variable);
  });
}

TEST(options, a_text_option_takes_any_text_but_none) {
  argv_builder a({"app", "--trace", "out/dir", "rest"});
  const apgas::options o = apgas::options::from_env_and_args(a.argc, a.argv());
  EXPECT_EQ(o.trace, "out/dir");
  EXPECT_EQ(a.argc, 2);
  EXPECT_EQ(apgas::options{}.trace, "") << "off by default";
  ::setenv("APGAS_TRACE", "from/env", 1);
  EXPECT_EQ(apgas::options::from_env().trace, "from/env");
  ::setenv("APGAS_TRACE", "", 1);
  EXPECT_THROW((void)apgas::options::from_env(), apgas::usage_error);
  ::unsetenv("APGAS_TRACE");
  EXPECT_NE(apgas::options::help_text().find("[default: none]"), std::string::npos);
}

} // namespace
