# The installed apgas as a user gets it: installs the build tree into ${WORK}/prefix, builds
# docs/examples as a project of its own against it (find_package(apgas); the examples that
# include each public header), and hello_places.cpp with the flags pkg-config gives; runs
# hello_finish and hello_places at 1 place and hello_places at 2 places.
#
#   -DBUILD_DIR= -DSOURCE_DIR= -DWORK= -DGENERATOR= -DCXX= -DBUILD_TYPE= -DCXX_FLAGS=
#   -DLINKER_FLAGS= -DLIBDIR= -DPKG_CONFIG= -DMPIEXEC= -DMPIEXEC_FLAGS=a|b|c
cmake_minimum_required(VERSION 3.25)
string(REPLACE "|" ";" mpiexec_flags "${MPIEXEC_FLAGS}")
set(prefix "${WORK}/prefix")

include("${CMAKE_CURRENT_LIST_DIR}/check_steps.cmake")

string(TOUPPER "${BUILD_TYPE}" build_type)
file(REMOVE_RECURSE "${WORK}")
step("cmake --install" ${CMAKE_COMMAND} --install "${BUILD_DIR}" --prefix "${prefix}")
foreach(file lib/cmake/apgas/apgasConfig.cmake lib/cmake/apgas/apgasConfigVersion.cmake
        lib/pkgconfig/apgas.pc include/apgas/apgas.hpp bin/apgasrun)
  string(REPLACE "lib/" "${LIBDIR}/" file "${file}")
  if(NOT EXISTS "${prefix}/${file}")
    message(FATAL_ERROR "not installed: ${file}")
  endif()
endforeach()
# The transport's private headers stay in the source tree.
file(GLOB_RECURSE private "${prefix}/include/*mpi_transport.hpp" "${prefix}/include/*coalescer.hpp")
if(private)
  message(FATAL_ERROR "private headers installed: ${private}")
endif()

# find_package(apgas): docs/examples on its own. Only the prefix: no path into this tree.
step("configure docs/examples against the installed apgas"
     ${CMAKE_COMMAND} -S "${SOURCE_DIR}/docs/examples" -B "${WORK}/examples" -G "${GENERATOR}"
     "-DCMAKE_CXX_COMPILER=${CXX}" "-DCMAKE_BUILD_TYPE=${BUILD_TYPE}"
     "-DCMAKE_CXX_FLAGS=${CXX_FLAGS}" "-DCMAKE_CXX_FLAGS_${build_type}=-O0"
     "-DCMAKE_EXE_LINKER_FLAGS=${LINKER_FLAGS}"
     "-DCMAKE_PREFIX_PATH=${prefix}")
# The two it runs, and one for each public header beside apgas.hpp (glb.hpp, clock.hpp,
# phase_checkpoint.hpp): the others include apgas.hpp alone, as hello_places does.
step("build docs/examples (those that include each public header)"
     ${CMAKE_COMMAND} --build "${WORK}/examples" --target hello_finish hello_places hello_glb
     hello_clocks checkpoint_phases)
set(bin "${WORK}/examples")
expect("hello_finish" "counter = 200, fib\\(25\\) = 75025" "${bin}/hello_finish" --threads 2)
expect("hello_places" "1 place\\(s\\): total = 11" "${bin}/hello_places" --threads 2)
expect("hello_places, 2 places" "2 place\\(s\\): total = 22"
       ${MPIEXEC} -n 2 ${mpiexec_flags} "${bin}/hello_places" --threads 1)

# pkg-config: one compiler call, as a Makefile would make it.
set(ENV{PKG_CONFIG_PATH} "${prefix}/${LIBDIR}/pkgconfig")
execute_process(COMMAND "${PKG_CONFIG}" --cflags --libs apgas RESULT_VARIABLE rc
                OUTPUT_VARIABLE flags ERROR_VARIABLE err OUTPUT_STRIP_TRAILING_WHITESPACE)
if(NOT rc STREQUAL "0")
  message(FATAL_ERROR "pkg-config --cflags --libs apgas failed: ${err}")
endif()
message("-- pkg-config --cflags --libs apgas: ${flags}")
separate_arguments(flags UNIX_COMMAND "${flags}")
separate_arguments(cxx_flags UNIX_COMMAND "${CXX_FLAGS} ${LINKER_FLAGS}")
step("compile hello_places.cpp with pkg-config's flags"
     "${CXX}" -std=c++20 ${cxx_flags} "${SOURCE_DIR}/docs/examples/hello_places.cpp" ${flags}
     -o "${WORK}/hello_places_pc")
expect("hello_places (pkg-config)" "1 place\\(s\\): total = 11" "${WORK}/hello_places_pc")
expect("hello_places (pkg-config), 2 places" "2 place\\(s\\): total = 22"
       ${MPIEXEC} -n 2 ${mpiexec_flags} "${WORK}/hello_places_pc" --threads 1)

# A forgotten co_await does not compile against the installed headers either: the first
# example with the co_await of an async removed, compiled as a user would (pkg-config's flags).
file(READ "${SOURCE_DIR}/docs/examples/hello_finish.cpp" source)
string(REPLACE "co_await apgas::async(count_to(counter, 100));"
               "apgas::async(count_to(counter, 100));" forgotten "${source}")
file(WRITE "${WORK}/forgotten_co_await.cpp" "${forgotten}")
execute_process(COMMAND "${CXX}" -std=c++20 ${cxx_flags} "${WORK}/forgotten_co_await.cpp" ${flags}
                        -o "${WORK}/forgotten_co_await"
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
if(rc STREQUAL "0" OR NOT out MATCHES "apgas: co_await it")
  message(FATAL_ERROR "a forgotten co_await compiled, or without the message (${rc}):\n${out}")
endif()
message("-- a forgotten co_await does not compile: apgas: co_await it")
