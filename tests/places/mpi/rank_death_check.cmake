# Runs `${MPIEXEC} ${ARGS}` (ARGS: a |-separated list) with a time limit of ${LIMIT} seconds.
# Passes iff the job ends in time with a non-zero exit code, the dying place announced itself,
# no survivor saw its run end, and the output matches ${REGEX} (MPI's message about the dead
# place).
string(REPLACE "|" ";" args "${ARGS}")
execute_process(COMMAND ${MPIEXEC} ${args} RESULT_VARIABLE rc OUTPUT_VARIABLE out
                ERROR_VARIABLE err TIMEOUT ${LIMIT})
message("${out}${err}")
if(rc MATCHES "timeout")
  message(FATAL_ERROR "the job did not end within ${LIMIT} s after a place died: ${rc}")
endif()
if(rc STREQUAL "0")
  message(FATAL_ERROR "exit code 0 although a place died")
endif()
if(NOT "${out}" MATCHES "rank_death: place [0-9]+ dies now")
  message(FATAL_ERROR "no place announced its death (exit code ${rc})")
endif()
if("${out}" MATCHES "the run ended although a place died")
  message(FATAL_ERROR "a survivor's run ended without the dead place")
endif()
if(NOT "${out}${err}" MATCHES "${REGEX}")
  message(FATAL_ERROR "output does not match '${REGEX}' (exit code ${rc})")
endif()
message("job ended with exit code ${rc}, as it should")
