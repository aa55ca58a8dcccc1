# Steps of the package tests' scripts (cmake -P), included by install_check.cmake and
# embed_check.cmake.
#
#   step(what command...)          runs a command, which must exit with 0
#   expect(what regex command...)  runs a program, which must exit with 0 and print something
#                                  matching regex

function(step what)
  message("-- ${what}")
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT rc STREQUAL "0")
    message(FATAL_ERROR "${what} failed (${rc}):\n${out}")
  endif()
endfunction()

function(expect what regex)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err
                  TIMEOUT 120)
  message("-- ${what}: ${out}")
  if(NOT rc STREQUAL "0" OR NOT out MATCHES "${regex}")
    message(FATAL_ERROR "${what}: exit code ${rc}, expected 0 and output matching `${regex}`\n"
                        "${out}${err}")
  endif()
endfunction()
