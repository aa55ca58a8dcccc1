# apgas embedded in a project of its own (embed/CMakeLists.txt), from the source tree: configured
# where GoogleTest, Google Benchmark, TBB, OpenMP and Python cannot be found (apgas's tests,
# benchmarks and apps would need them; OpenSSL's libcrypto the checkpoint library needs), with
# BUILD_TESTING on. Checks that the build has
# apgas's libraries and the project's program and nothing else of apgas (targets, ctest tests,
# warning flags on the program, install rules unless APGAS_INSTALL is on, cpack); builds it and
# runs the program at 1 and 2 places; installs it.
#
#   -DSOURCE_DIR= -DWORK= -DEMBED=subdirectory|fetchcontent -DGENERATOR= -DCXX=
#   -DLIBRARIES=a|b|c (apgas's) -DMPIEXEC= -DMPIEXEC_FLAGS=a|b|c [-DAPGAS_INSTALL=ON|OFF]
cmake_minimum_required(VERSION 3.25)
include("${CMAKE_CURRENT_LIST_DIR}/check_steps.cmake")
string(REPLACE "|" ";" mpiexec_flags "${MPIEXEC_FLAGS}")
string(REPLACE "|" ";" libraries "${LIBRARIES}")
set(build "${WORK}/build")
set(prefix "${WORK}/prefix")

set(options)
if(DEFINED APGAS_INSTALL)
  list(APPEND options "-DAPGAS_INSTALL=${APGAS_INSTALL}")
endif()
foreach(package GTest benchmark TBB OpenMP Python3)
  list(APPEND options "-DCMAKE_DISABLE_FIND_PACKAGE_${package}=ON")
endforeach()

# Both ways compile the same sources with the same flags: with ccache at hand (launch/setup
# installs it), the second compiles none of them again. The cache is the tests' own.
find_program(ccache ccache)
if(ccache)
  list(APPEND options "-DCMAKE_CXX_COMPILER_LAUNCHER=${ccache}")
  get_filename_component(cache "${WORK}/../embed-ccache" ABSOLUTE)
  set(ENV{CCACHE_DIR} "${cache}")
endif()

file(REMOVE_RECURSE "${WORK}")
file(WRITE "${build}/.cmake/api/v1/query/codemodel-v2" "")
step("configure a project that embeds apgas (${EMBED})"
     ${CMAKE_COMMAND} -S "${SOURCE_DIR}/tests/package/embed" -B "${build}" -G "${GENERATOR}"
     "-DCMAKE_CXX_COMPILER=${CXX}" -DCMAKE_EXPORT_COMPILE_COMMANDS=ON -DBUILD_TESTING=ON
     "-DAPGAS_EMBED=${EMBED}" "-DAPGAS_SOURCE_DIR=${SOURCE_DIR}" ${options})

# Its targets, as CMake's file API lists them: apgas's libraries and the program, no other.
file(GLOB index "${build}/.cmake/api/v1/reply/index-*.json")
file(READ "${index}" index)
string(JSON codemodel GET "${index}" reply codemodel-v2 jsonFile)
file(READ "${build}/.cmake/api/v1/reply/${codemodel}" codemodel)
string(JSON count LENGTH "${codemodel}" configurations 0 targets)
set(targets)
math(EXPR last "${count} - 1")
foreach(i RANGE ${last})
  string(JSON name GET "${codemodel}" configurations 0 targets ${i} name)
  list(APPEND targets ${name})
endforeach()
set(expected ${libraries} embed_hello)
list(SORT targets)
list(SORT expected)
if(NOT targets STREQUAL expected)
  message(FATAL_ERROR "targets: ${targets}\nexpected apgas's libraries and the program: ${expected}")
endif()

# The program's compile command has none of apgas's warning flags (the project sets none).
file(READ "${build}/compile_commands.json" commands)
string(REGEX MATCH "\"command\": \"[^\"]*hello_places\\.cpp\"" command "${commands}")
if(NOT command)
  message(FATAL_ERROR "no compile command for hello_places.cpp in compile_commands.json")
endif()
if(command MATCHES " -W")
  message(FATAL_ERROR "apgas's flags reach the project's program: ${command}")
endif()

# ctest: the project's one test, none of apgas's.
execute_process(COMMAND ${CMAKE_CTEST_COMMAND} --test-dir "${build}" -N OUTPUT_VARIABLE tests)
if(NOT tests MATCHES "Total Tests: 1\n")
  message(FATAL_ERROR "the project's ctest lists more than its own test:\n${tests}")
endif()

step("build (the libraries and the program)" ${CMAKE_COMMAND} --build "${build}" --parallel 2)
expect("embed_hello" "1 place\\(s\\): total = 11" "${build}/embed_hello" --threads 2)
expect("embed_hello, 2 places" "2 place\\(s\\): total = 22"
       ${MPIEXEC} -n 2 ${mpiexec_flags} "${build}/embed_hello" --threads 1)

# Installing the project installs apgas only if it asked for it; cpack stays its own.
step("cmake --install" ${CMAKE_COMMAND} --install "${build}" --prefix "${prefix}")
file(GLOB_RECURSE installed RELATIVE "${prefix}" "${prefix}/*")
if(APGAS_INSTALL)
  foreach(file include/apgas/apgas.hpp cmake/apgas/apgasConfig.cmake pkgconfig/apgas.pc)
    if(NOT installed MATCHES "(^|;)([^;]*/)?${file}(;|$)")
      message(FATAL_ERROR "APGAS_INSTALL is on but ${file} is not installed: ${installed}")
    endif()
  endforeach()
elseif(installed)
  message(FATAL_ERROR "installed without APGAS_INSTALL: ${installed}")
endif()
if(EXISTS "${build}/CPackConfig.cmake")
  message(FATAL_ERROR "apgas set up cpack for the project that embeds it")
endif()
