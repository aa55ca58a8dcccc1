// The build identity every place states at start-up, and place 0's report when they differ.
#include "build_identity.hpp"
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

namespace {

using apgas::detail::build_identity;
using apgas::detail::build_path;
using apgas::detail::describe_build_mismatch;

TEST(build_identity, is_the_same_on_every_call_and_names_this_test_binary) {
  EXPECT_NE(build_identity(), 0U);
  EXPECT_EQ(build_identity(), build_identity());
  EXPECT_NE(build_path().find("places_build_identity_test"), std::string::npos) << build_path();
}

TEST(build_identity, equal_builds_are_no_mismatch) {
  EXPECT_EQ(describe_build_mismatch(std::vector<std::uint64_t>{7}), "");
  EXPECT_EQ(describe_build_mismatch(std::vector<std::uint64_t>{7, 7, 7}), "");
}

TEST(build_identity, a_mismatch_names_each_build_and_its_places_in_ranges) {
  const std::string s =
      describe_build_mismatch(std::vector<std::uint64_t>{0xa, 0xa, 0xb, 0xa, 0xa, 0xc, 0xb});
  const std::string expected_end = ": places 0-1, 3-4 run build 000000000000000a; places 2, 6 run "
                                   "build 000000000000000b; place 5 runs build 000000000000000c";
  ASSERT_GE(s.size(), expected_end.size()) << s;
  EXPECT_EQ(s.substr(s.size() - expected_end.size()), expected_end) << s;
  EXPECT_EQ(s.rfind("apgas: the places run different builds of the program", 0), 0U) << s;
}

} // namespace
