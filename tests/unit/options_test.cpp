// The options table: flags, APGAS_* variables, and clear errors on bad values.
#include <apgas/exceptions.hpp>
#include <apgas/options.hpp>

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
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
  for (const auto& bad : std::vector<std::vector<std::string>>{{"app", "--threads", "zero"},
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

TEST(options, help_text_lists_every_flag_with_its_variable) {
  const std::string help = apgas::options::help_text();
  for (const char* s : {"--threads", "APGAS_THREADS", "--policy", "APGAS_POLICY", "--stats",
                        "APGAS_STATS", "--pin", "--spin-us", "APGAS_SPIN_US"})
    EXPECT_NE(help.find(s), std::string::npos) << s;
}

} // namespace
