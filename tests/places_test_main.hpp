// The main of every multi-place GoogleTest binary (run by ctest under mpiexec): one runtime for
// the whole process, made after GoogleTest took its flags, and reachable from the tests while
// they run; places other than 0 print only failures.
#pragma once

#include <apgas/apgas.hpp>

#include <gtest/gtest.h>

namespace apgas_test {

/// @brief Runs every test with a runtime made from the remaining flags, which `current` points
/// to meanwhile. @return the exit status (non-zero if a test failed).
inline int run_places_tests(int argc, char** argv, apgas::runtime*& current) {
  testing::InitGoogleTest(&argc, argv);
  apgas::runtime rt(argc, argv);
  current = &rt;
  if (rt.here() != 0) GTEST_FLAG_SET(brief, true); // the other places print only failures
  const int failed = RUN_ALL_TESTS();
  current = nullptr;
  return failed;
}

} // namespace apgas_test
