# Run by ctest for apgas_add_compile_fail_test (cmake -P). Builds one target that
# must NOT compile; succeeds iff the build fails and its output matches the regex.
#   -DAPGAS_CF_BUILD_DIR=... -DAPGAS_CF_TARGET=... -DAPGAS_CF_CONFIG=...
#   -DAPGAS_CF_EXPECT_FILE=<file holding the CMake regex>
foreach(v APGAS_CF_BUILD_DIR APGAS_CF_TARGET APGAS_CF_EXPECT_FILE)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "apgas_compile_fail.cmake: ${v} not set")
  endif()
endforeach()
file(READ "${APGAS_CF_EXPECT_FILE}" expect)

set(config_args "")
if(APGAS_CF_CONFIG)
  set(config_args --config "${APGAS_CF_CONFIG}")
endif()
execute_process(
  COMMAND "${CMAKE_COMMAND}" --build "${APGAS_CF_BUILD_DIR}" --target "${APGAS_CF_TARGET}" ${config_args}
  RESULT_VARIABLE rc
  OUTPUT_VARIABLE out
  ERROR_VARIABLE out)

if(rc EQUAL 0)
  message("${out}")
  message(FATAL_ERROR "compile-fail test: target ${APGAS_CF_TARGET} COMPILED, but it must not")
endif()
if(NOT out MATCHES "${expect}")
  message("${out}")
  message(FATAL_ERROR "compile-fail test: ${APGAS_CF_TARGET} failed to build as required, "
                      "but the output does not match the expected regex: ${expect}")
endif()
message("compile-fail test: ${APGAS_CF_TARGET} failed to compile as expected (matched: ${expect})")
