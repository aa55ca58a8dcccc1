# Runs COMMAND (a |-separated list) and checks its exit code and output (stdout without its
# trailing newline):
#   -DCOMMAND=a|b|c  -DRC=n  [-DOUT=regex] [-DERR=regex]
#   [-DHOSTFILE=path -DHOSTS=line@@line]  writes that hostfile first
#   [-DSET_ENV=NAME=VALUE@@...]            sets these variables for the command
cmake_minimum_required(VERSION 3.25)
string(REPLACE "|" ";" command "${COMMAND}")
if(DEFINED HOSTFILE)
  string(REPLACE "@@" "\n" hosts "${HOSTS}")
  file(WRITE "${HOSTFILE}" "${hosts}\n")
endif()
if(DEFINED SET_ENV)
  string(REPLACE "@@" ";" variables "${SET_ENV}")
  foreach(assignment IN LISTS variables)
    string(REGEX MATCH "^([^=]+)=(.*)$" _ "${assignment}")
    set(ENV{${CMAKE_MATCH_1}} "${CMAKE_MATCH_2}")
  endforeach()
endif()
execute_process(COMMAND ${command} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err
                TIMEOUT 120 OUTPUT_STRIP_TRAILING_WHITESPACE)
message("exit code ${rc}\nstdout:\n${out}\nstderr:\n${err}")
if(NOT rc STREQUAL "${RC}")
  message(FATAL_ERROR "exit code ${rc}, expected ${RC}")
endif()
if(DEFINED OUT AND NOT out MATCHES "${OUT}")
  message(FATAL_ERROR "stdout does not match `${OUT}`")
endif()
if(DEFINED ERR AND NOT err MATCHES "${ERR}")
  message(FATAL_ERROR "stderr does not match `${ERR}`")
endif()
