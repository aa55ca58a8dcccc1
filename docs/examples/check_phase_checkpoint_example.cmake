# The checkpoint guide's phased example, run as the guide says: once without checkpoints, once
# with them, then resumed from the newest. All three must print the same bits of the result;
# the resumed run must say where it resumed from.
#   cmake -DPROGRAM=<checkpoint_phases> -DDIR=<scratch directory> [-DEVERY=<seconds, 0.001>]
#         [-DLAUNCH=<launcher, -n P, |-separated> -DRELAUNCH=<the same for the resume>]
#         -P check_phase_checkpoint_example.cmake
if(NOT EVERY)
  set(EVERY 0.001)
endif()
string(REPLACE "|" ";" launch "${LAUNCH}")
string(REPLACE "|" ";" relaunch "${RELAUNCH}")
file(REMOVE_RECURSE "${DIR}")
set(result_regex "after 1000 phases ([-+0-9a-fx.p]+)")
execute_process(COMMAND ${launch} ${PROGRAM} RESULT_VARIABLE rc OUTPUT_VARIABLE out
                ERROR_VARIABLE err)
if(NOT rc EQUAL 0 OR NOT out MATCHES "${result_regex}")
  message(FATAL_ERROR "the run without checkpoints (exit ${rc}):\n${out}${err}")
endif()
set(expected "${CMAKE_MATCH_1}")
execute_process(COMMAND ${launch} ${PROGRAM} --checkpoint ${DIR} --checkpoint-every ${EVERY}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0 OR NOT out MATCHES "${result_regex}" OR NOT CMAKE_MATCH_1 STREQUAL expected)
  message(FATAL_ERROR "the run with checkpoints (exit ${rc}), expected ${expected}:\n${out}${err}")
endif()
file(GLOB saved "${DIR}/ckpt-*/arrays.h5")
if(NOT saved)
  message(FATAL_ERROR "the run with checkpoints left no checkpoint in ${DIR}:\n${out}${err}")
endif()
execute_process(COMMAND ${relaunch} ${PROGRAM} --resume ${DIR}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0 OR NOT out MATCHES "resumed from .*ckpt-[0-9]+ after phase [1-9]"
   OR NOT out MATCHES "${result_regex}" OR NOT CMAKE_MATCH_1 STREQUAL expected)
  message(FATAL_ERROR "the resumed run (exit ${rc}), expected ${expected}:\n${out}${err}")
endif()
file(REMOVE_RECURSE "${DIR}")
message(STATUS "${out}")
