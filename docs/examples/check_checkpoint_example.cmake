# The checkpoint guide's commands, run: checkpoint_glb with --checkpoint, then with --resume from
# what it wrote. Both must count the primes right; the second must say where it resumed from.
#   cmake -DPROGRAM=<checkpoint_glb> -DDIR=<scratch directory> [-DLAUNCH=<launcher, -n P,
#         |-separated> -DRELAUNCH=<the same for the resume>] -P check_checkpoint_example.cmake
string(REPLACE "|" ";" launch "${LAUNCH}")
string(REPLACE "|" ";" relaunch "${RELAUNCH}")
file(REMOVE_RECURSE "${DIR}")
execute_process(COMMAND ${launch} ${PROGRAM} --checkpoint ${DIR} --checkpoint-every 0.01
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0 OR NOT out MATCHES "283146 primes below 4000000, [1-9][0-9]* checkpoint")
  message(FATAL_ERROR "the run with checkpoints (exit ${rc}):\n${out}${err}")
endif()
execute_process(COMMAND ${relaunch} ${PROGRAM} --resume ${DIR}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0 OR NOT out MATCHES "resumed from .*ckpt-[0-9]+\n.*283146 primes below 4000000")
  message(FATAL_ERROR "the resumed run (exit ${rc}):\n${out}${err}")
endif()
file(REMOVE_RECURSE "${DIR}")
message(STATUS "${out}")
