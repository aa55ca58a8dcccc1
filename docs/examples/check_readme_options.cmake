# Fails unless README.md's "Runtime options" block lists exactly what `PROGRAM --help` prints
# for the runtime's options (the lines from `--threads` on), so that the table cannot drift
# from the option table in core/include/apgas/options.hpp.
execute_process(COMMAND "${PROGRAM}" --help OUTPUT_VARIABLE out ERROR_VARIABLE err
                RESULT_VARIABLE rc)
string(APPEND out "${err}")
string(FIND "${out}" "  --threads N" begin)
if(begin EQUAL -1)
  message(FATAL_ERROR "${PROGRAM} --help lists no --threads option")
endif()
string(SUBSTRING "${out}" ${begin} -1 options)
string(STRIP "${options}" options)
file(READ "${README}" readme)
string(FIND "${readme}" "```\n  --threads N" block)
if(block EQUAL -1)
  message(FATAL_ERROR "README.md has no runtime options block")
endif()
math(EXPR block "${block} + 4")
string(SUBSTRING "${readme}" ${block} -1 rest)
string(FIND "${rest}" "```" length)
string(SUBSTRING "${rest}" 0 ${length} shown)
string(STRIP "${shown}" shown)
if(NOT shown STREQUAL options)
  message(FATAL_ERROR "README.md's runtime options differ from `--help`; paste this in:\n"
                      "${options}")
endif()
