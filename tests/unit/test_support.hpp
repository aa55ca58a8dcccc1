// Shared fixtures: every semantic test runs under every policy and several worker counts.
#pragma once

#include <apgas/core.hpp>

#include <gtest/gtest.h>

#include <string>
#include <tuple>

namespace apgas_test {

/// Sanitized builds run every spawn 5-20x slower (TSan the most): they use smaller problem
/// sizes (divide by this), keeping every code path.
#if defined(__SANITIZE_THREAD__)
inline constexpr int k_sanitizer_slowdown = 16;
#elif defined(__SANITIZE_ADDRESS__)
inline constexpr int k_sanitizer_slowdown = 4;
#else
inline constexpr int k_sanitizer_slowdown = 1;
#endif

/// (policy, threads): 1 worker checks the sequential paths, 2 and 4 the stealing ones (4
/// oversubscribes this 2-core machine on purpose).
using config = std::tuple<apgas::policy, unsigned>;

inline apgas::options make_options(const config& c) {
  apgas::options o;
  o.default_policy = std::get<0>(c);
  o.threads = std::get<1>(c);
  o.pin_workers = false; // several runtimes in one process, one after another
  return o;
}

inline std::string config_name(const testing::TestParamInfo<config>& info) {
  std::string name(apgas::to_string(std::get<0>(info.param)));
  for (char& c : name)
    if (c == '-') c = '_';
  return name + "_" + std::to_string(std::get<1>(info.param)) + "_workers";
}

/// A fixture owning one runtime per test.
class runtime_test : public testing::TestWithParam<config> {
protected:
  apgas::local_runtime& rt() { return m_rt; }
  apgas::policy policy() const { return std::get<0>(GetParam()); }
  unsigned threads() const { return std::get<1>(GetParam()); }

private:
  apgas::local_runtime m_rt{make_options(GetParam())};
};

#define APGAS_INSTANTIATE_CONFIGS(suite)                                                           \
  INSTANTIATE_TEST_SUITE_P(                                                                        \
      policies, suite,                                                                             \
      testing::Combine(testing::Values(apgas::policy::work_first, apgas::policy::help_first,       \
                                       apgas::policy::adaptive),                                   \
                       testing::Values(1U, 2U, 4U)),                                               \
      apgas_test::config_name)

} // namespace apgas_test
