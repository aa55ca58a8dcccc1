# Shared helpers for apgas targets and tests.
#
#   apgas_set_warnings(target)
#   apgas_add_unit_test(NAME n [TARGET t] SOURCES a.cpp... [LIBS l...] [LABELS l...] [TIMEOUT s])
#   apgas_add_mpi_test(NAME n COMMAND target [args...] RANKS 1 2 4 [LABELS l...] [TIMEOUT s])
#   apgas_add_compile_fail_test(NAME n SOURCE f.cpp EXPECT "regex" [LIBS l...] [TIMEOUT s])
#
# Test names: <area>.<suite>[.<variant>][.npN], lower case, words joined by underscores, the
# parts by dots. The area is the folder of what is tested (core, places, clocks, glb, scaling,
# apps, docs, bench, launch, package, format); the suite names what is tested (its source file
# without _test); a variant says how it runs (2_workers, tree, help_first, a case's name); .npN
# the number of places (added by apgas_add_mpi_test). E.g. places.serialization,
# clocks.clock.home_tally.np4. `ctest -R '^places[.]'` then runs one area, `-L` one label.
#
# Every test these register gets ${APGAS_TEST_ENVIRONMENT} (sanitizer options with
# the suppression files in cmake/sanitizers/); MPI tests also get Open MPI settings.

include_guard(GLOBAL)

set(APGAS_HELPERS_DIR "${CMAKE_CURRENT_LIST_DIR}")
set(APGAS_SANITIZER_DIR "${CMAKE_CURRENT_LIST_DIR}/sanitizers")

# Sanitizer runtime options, harmless in builds without sanitizers.
set(APGAS_TEST_ENVIRONMENT
  "TSAN_OPTIONS=suppressions=${APGAS_SANITIZER_DIR}/tsan.supp:halt_on_error=1:second_deadlock_stack=1"
  "ASAN_OPTIONS=detect_leaks=1:abort_on_error=0"
  "LSAN_OPTIONS=suppressions=${APGAS_SANITIZER_DIR}/lsan.supp"
  "UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1"
)

# Open MPI settings for tests: shared memory + self only (no network probing),
# any number of ranks on this machine, and root allowed (containers, CI).
set(APGAS_MPI_TEST_ENVIRONMENT
  "OMPI_MCA_btl=self,vader"
  "OMPI_MCA_pml=ob1"
  "OMPI_MCA_rmaps_base_oversubscribe=1"
  "OMPI_ALLOW_RUN_AS_ROOT=1"
  "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1"
)
# Open MPI dlclose()s its mca_*.so components in MPI_Finalize, so LeakSanitizer (which reports
# at exit) would show their leaks as `<unknown module>`, which no suppression matches. In the
# ASan build the MPI tests preload keep_libraries_loaded.c (built in tests/, without sanitizer
# flags), whose dlclose() does nothing; then lsan.supp matches the components by name and
# ASan keeps its fast unwinder. verify_asan_link_order=0: the preloaded library comes before
# the ASan runtime, which is harmless because it defines nothing ASan intercepts.
set(APGAS_KEEP_LIBRARIES_LOADED "${PROJECT_BINARY_DIR}/cmake/libapgas_keep_libraries_loaded.so")
set(APGAS_MPI_ASAN_OPTIONS "ASAN_OPTIONS=detect_leaks=1:abort_on_error=0")
# Jobs that start places on other (network namespace) nodes through apgasrun do not pass
# LD_PRELOAD on (and mpi_session, see tests/places/mpi): those take ASan's slow unwinder
# instead, which reaches the frames of libmpi that lsan.supp matches.
set(APGAS_LAUNCH_ASAN_OPTIONS "ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:fast_unwind_on_malloc=0")
if(CMAKE_CXX_FLAGS MATCHES "-fsanitize=[a-z,]*address")
  set(APGAS_MPI_ASAN_OPTIONS
      "ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:verify_asan_link_order=0"
      "LD_PRELOAD=${APGAS_KEEP_LIBRARIES_LOADED}")
endif()

# Warnings for our own targets only (target-scoped, never global).
function(apgas_set_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wno-interference-size)
endfunction()

# apgas_add_unit_test(NAME name [TARGET target] SOURCES ... [LIBS ...] [LABELS ...] [TIMEOUT s])
# An executable linked with GTest::gtest_main (plus LIBS), registered as ctest test
# `name` (label `unit` + LABELS, default timeout 120 s), run in its build directory. The
# executable is TARGET, by default the name with underscores for dots and _test appended
# (places.serialization: places_serialization_test).
function(apgas_add_unit_test)
  cmake_parse_arguments(PARSE_ARGV 0 arg "" "NAME;TARGET;TIMEOUT" "SOURCES;LIBS;LABELS")
  if(NOT arg_NAME OR NOT arg_SOURCES)
    message(FATAL_ERROR "apgas_add_unit_test: NAME and SOURCES are required")
  endif()
  if(arg_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "apgas_add_unit_test(${arg_NAME}): unknown arguments: ${arg_UNPARSED_ARGUMENTS}")
  endif()
  if(NOT DEFINED arg_TIMEOUT)
    set(arg_TIMEOUT 120)
  endif()
  if(NOT arg_TARGET)
    string(REPLACE "." "_" arg_TARGET "${arg_NAME}_test")
  endif()
  if(NOT TARGET GTest::gtest_main)
    # GLOBAL: the imported targets are then visible from every directory.
    find_package(GTest REQUIRED GLOBAL)
  endif()

  # A build against another MPI (the mpich preset) builds and runs only the tests that talk to
  # MPI: a unit test is then a target that is not built.
  set(not_built)
  if(APGAS_TESTS_WITH_MPI_ONLY)
    set(not_built EXCLUDE_FROM_ALL)
  endif()
  add_executable(${arg_TARGET} ${not_built} ${arg_SOURCES})
  target_link_libraries(${arg_TARGET} PRIVATE ${arg_LIBS} GTest::gtest_main)
  if(APGAS_TESTS_WITH_MPI_ONLY)
    return()
  endif()
  apgas_set_warnings(${arg_TARGET})

  set(labels unit ${arg_LABELS})
  add_test(NAME ${arg_NAME} COMMAND ${arg_TARGET})
  set_tests_properties(${arg_NAME} PROPERTIES
    LABELS "${labels}"
    TIMEOUT ${arg_TIMEOUT}
    ENVIRONMENT "${APGAS_TEST_ENVIRONMENT}"
    WORKING_DIRECTORY "${CMAKE_CURRENT_BINARY_DIR}"
  )
endfunction()

# Extra launcher flags for Open MPI's mpiexec (decided once per build directory). With a rank
# count of 1 (optional second argument): also --bind-to none, because Open MPI binds a lone rank
# to one core and its place would run one worker; unbound it gets the machine's PUs, as a
# program started without mpirun does. (Two ranks get a core each on this 2-core machine, four
# run unbound: both as a user's run would.)
function(_apgas_mpiexec_extra_flags out_var)
  if(NOT DEFINED CACHE{APGAS_MPIEXEC_IS_OPENMPI})
    execute_process(COMMAND "${MPIEXEC_EXECUTABLE}" --version
      OUTPUT_VARIABLE _out ERROR_VARIABLE _out RESULT_VARIABLE _rc TIMEOUT 30)
    if(_out MATCHES "Open MPI|OpenRTE")
      set(_is ON)
    else()
      set(_is OFF)
    endif()
    set(APGAS_MPIEXEC_IS_OPENMPI ${_is} CACHE INTERNAL "mpiexec is Open MPI's")
  endif()
  if(APGAS_MPIEXEC_IS_OPENMPI)
    set(flags --oversubscribe --allow-run-as-root)
    if(ARGC GREATER 1 AND ARGV1 EQUAL 1)
      list(APPEND flags --bind-to none)
    endif()
    set(${out_var} ${flags} PARENT_SCOPE)
  else()
    set(${out_var} "" PARENT_SCOPE)
  endif()
endfunction()

# apgas_add_mpi_test(NAME name COMMAND target [args...] RANKS 1 2 4 [LABELS ...] [TIMEOUT s])
# For each rank count N: ctest test `name.npN` = mpiexec -n N <target> args...,
# label `mpi` (+ LABELS), default timeout 180 s, PROCESSORS N (ctest clamps it to -j).
function(apgas_add_mpi_test)
  cmake_parse_arguments(PARSE_ARGV 0 arg "" "NAME;TIMEOUT" "COMMAND;RANKS;LABELS")
  if(NOT arg_NAME OR NOT arg_COMMAND OR NOT arg_RANKS)
    message(FATAL_ERROR "apgas_add_mpi_test: NAME, COMMAND and RANKS are required")
  endif()
  if(arg_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "apgas_add_mpi_test(${arg_NAME}): unknown arguments: ${arg_UNPARSED_ARGUMENTS}")
  endif()
  if(NOT MPIEXEC_EXECUTABLE)
    message(FATAL_ERROR "apgas_add_mpi_test(${arg_NAME}): MPIEXEC_EXECUTABLE is not set (find_package(MPI) first)")
  endif()
  if(NOT DEFINED arg_TIMEOUT)
    set(arg_TIMEOUT 180)
  endif()
  list(POP_FRONT arg_COMMAND target)
  if(NOT TARGET ${target})
    message(FATAL_ERROR "apgas_add_mpi_test(${arg_NAME}): COMMAND must start with a target, got `${target}`")
  endif()
  if(MPIEXEC_NUMPROC_FLAG)
    set(np_flag ${MPIEXEC_NUMPROC_FLAG})
  else()
    set(np_flag -n)
  endif()
  foreach(n IN LISTS arg_RANKS)
    if(NOT n MATCHES "^[1-9][0-9]*$")
      message(FATAL_ERROR "apgas_add_mpi_test(${arg_NAME}): bad rank count `${n}`")
    endif()
    _apgas_mpiexec_extra_flags(extra ${n})
    set(test_name "${arg_NAME}.np${n}")
    set(labels mpi ${arg_LABELS})
    add_test(NAME ${test_name}
      COMMAND ${MPIEXEC_EXECUTABLE} ${np_flag} ${n} ${extra} ${MPIEXEC_PREFLAGS}
              $<TARGET_FILE:${target}> ${arg_COMMAND} ${MPIEXEC_POSTFLAGS})
    set_tests_properties(${test_name} PROPERTIES
      LABELS "${labels}"
      TIMEOUT ${arg_TIMEOUT}
      PROCESSORS ${n}
      # Later entries win: the MPI ASAN_OPTIONS replaces the generic one.
      ENVIRONMENT "${APGAS_MPI_TEST_ENVIRONMENT};${APGAS_TEST_ENVIRONMENT};${APGAS_MPI_ASAN_OPTIONS}"
      WORKING_DIRECTORY "${CMAKE_CURRENT_BINARY_DIR}"
    )
  endforeach()
endfunction()

# apgas_add_compile_fail_test(NAME name SOURCE file.cpp EXPECT "regex" [LIBS ...] [TIMEOUT s])
# Test `name` passes iff building `file.cpp` (target name_cf, its dots made underscores, linked
# to apgas::apgas and LIBS, never part of the default build) FAILS and the compiler output matches
# EXPECT (CMake regex, matched against the whole build output). Label `compile_fail`.
# All such tests share RESOURCE_LOCK apgas_build_tree: one build-system run at a time.
function(apgas_add_compile_fail_test)
  cmake_parse_arguments(PARSE_ARGV 0 arg "" "NAME;SOURCE;EXPECT;TIMEOUT" "LIBS")
  if(NOT arg_NAME OR NOT arg_SOURCE OR NOT DEFINED arg_EXPECT OR arg_EXPECT STREQUAL "")
    message(FATAL_ERROR "apgas_add_compile_fail_test: NAME, SOURCE and EXPECT are required")
  endif()
  if(arg_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "apgas_add_compile_fail_test(${arg_NAME}): unknown arguments: ${arg_UNPARSED_ARGUMENTS}")
  endif()
  if(NOT DEFINED arg_TIMEOUT)
    set(arg_TIMEOUT 120)
  endif()
  string(REPLACE "." "_" target "${arg_NAME}_cf")
  add_executable(${target} EXCLUDE_FROM_ALL ${arg_SOURCE})
  set_target_properties(${target} PROPERTIES EXCLUDE_FROM_DEFAULT_BUILD ON)
  if(TARGET apgas::apgas)
    target_link_libraries(${target} PRIVATE apgas::apgas)
  endif()
  target_link_libraries(${target} PRIVATE ${arg_LIBS})

  # The regex goes through a file: no quoting or list-separator surprises.
  set(expect_file "${CMAKE_CURRENT_BINARY_DIR}/${target}.expect")
  file(WRITE "${expect_file}" "${arg_EXPECT}")
  add_test(NAME ${arg_NAME}
    COMMAND ${CMAKE_COMMAND}
      "-DAPGAS_CF_BUILD_DIR=${CMAKE_BINARY_DIR}"
      "-DAPGAS_CF_TARGET=${target}"
      "-DAPGAS_CF_CONFIG=$<CONFIG>"
      "-DAPGAS_CF_EXPECT_FILE=${expect_file}"
      -P "${APGAS_HELPERS_DIR}/apgas_compile_fail.cmake")
  # Pass/fail is the script's exit code (0 only if the build failed AND the output
  # matched), which is stricter than PASS_REGULAR_EXPRESSION alone.
  set_tests_properties(${arg_NAME} PROPERTIES
    LABELS compile_fail
    TIMEOUT ${arg_TIMEOUT}
    RESOURCE_LOCK apgas_build_tree
  )
endfunction()
