# Installing apgas (cmake --install, cpack -G DEB): the libraries, their headers, the
# apgas::apgas target, apgasConfig.cmake with its version file for find_package(apgas), apgas.pc
# for pkg-config, and the launcher (bin/apgasrun). Used when APGAS_INSTALL is on: by default
# when apgas is the top-level project, and in a project that embeds apgas only if it asks; cpack
# only at the top level.
#
#   apgas_install(LIBRARIES lib...)
#
# LIBRARIES: every library that apgas::apgas links, in the order of their dependencies (a
# library after those it uses). For each, and for apgas itself (the umbrella header): the
# headers under <its folder>/include are installed to <prefix>/include; its public include directories in the source tree become build-tree
# only ($<BUILD_INTERFACE:...>), the installed include directory taking their place; it is
# exported as apgas::<name without apgas_>. A library with a new external dependency also adds
# it to cmake/apgasConfig.cmake.in (find_dependency) and cmake/apgas.pc.in (Requires or Libs).

include_guard(GLOBAL)
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(APGAS_CMAKE_DIR "${CMAKE_CURRENT_LIST_DIR}")

# The include directories of `target`'s interface (paths in the source tree, or expressions
# such as another target's directories): build tree only; the installed headers' directory
# instead.
function(_apgas_install_interface_includes target)
  get_target_property(dirs ${target} INTERFACE_INCLUDE_DIRECTORIES)
  if(NOT dirs)
    set(dirs)
  endif()
  set(out)
  foreach(dir IN LISTS dirs)
    if(dir MATCHES "^\\$<(BUILD|INSTALL)_INTERFACE:")
      list(APPEND out "${dir}")
    else()
      list(APPEND out "$<BUILD_INTERFACE:${dir}>")
    endif()
  endforeach()
  list(APPEND out "$<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>")
  set_target_properties(${target} PROPERTIES INTERFACE_INCLUDE_DIRECTORIES "${out}")
endfunction()

function(apgas_install)
  cmake_parse_arguments(PARSE_ARGV 0 arg "" "" "LIBRARIES")
  set(config_dir "${CMAKE_INSTALL_LIBDIR}/cmake/apgas")
  set(pc_libs)
  foreach(lib IN LISTS arg_LIBRARIES)
    list(PREPEND pc_libs "-l${lib}") # a static library before those it uses
  endforeach()
  # The libraries, and apgas itself for the umbrella header (include/ at the top).
  foreach(target IN LISTS arg_LIBRARIES ITEMS apgas)
    get_target_property(source_dir ${target} SOURCE_DIR)
    if(IS_DIRECTORY "${source_dir}/include")
      install(DIRECTORY "${source_dir}/include/" DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}")
    endif()
    _apgas_install_interface_includes(${target})
    string(REGEX REPLACE "^apgas_" "" name ${target})
    set_target_properties(${target} PROPERTIES EXPORT_NAME ${name})
  endforeach()
  install(TARGETS ${arg_LIBRARIES} apgas EXPORT apgasTargets
          ARCHIVE DESTINATION "${CMAKE_INSTALL_LIBDIR}"
          LIBRARY DESTINATION "${CMAKE_INSTALL_LIBDIR}"
          RUNTIME DESTINATION "${CMAKE_INSTALL_BINDIR}")
  install(EXPORT apgasTargets NAMESPACE apgas:: DESTINATION "${config_dir}")

  configure_package_config_file("${APGAS_CMAKE_DIR}/apgasConfig.cmake.in"
    "${PROJECT_BINARY_DIR}/apgasConfig.cmake" INSTALL_DESTINATION "${config_dir}")
  # 0.x: a minor version may change the interface, so it must match.
  write_basic_package_version_file("${PROJECT_BINARY_DIR}/apgasConfigVersion.cmake"
    VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
  install(FILES "${PROJECT_BINARY_DIR}/apgasConfig.cmake"
                "${PROJECT_BINARY_DIR}/apgasConfigVersion.cmake"
          DESTINATION "${config_dir}")

  # apgas.pc finds its prefix from its own place (${pcfiledir}), so the tree can move.
  if(IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}" OR IS_ABSOLUTE "${CMAKE_INSTALL_INCLUDEDIR}")
    message(FATAL_ERROR "apgas: CMAKE_INSTALL_LIBDIR and CMAKE_INSTALL_INCLUDEDIR must be "
                        "relative to the prefix (apgas.pc and apgasConfig.cmake move with it)")
  endif()
  file(RELATIVE_PATH APGAS_PC_PREFIX "/prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/prefix")
  string(REGEX REPLACE "/$" "" APGAS_PC_PREFIX "\${pcfiledir}/${APGAS_PC_PREFIX}")
  list(JOIN pc_libs " " APGAS_PC_LIBS)
  list(JOIN MPI_CXX_LIBRARIES " " APGAS_PC_MPI_LIBS)
  configure_file("${APGAS_CMAKE_DIR}/apgas.pc.in" "${PROJECT_BINARY_DIR}/apgas.pc" @ONLY)
  install(FILES "${PROJECT_BINARY_DIR}/apgas.pc" DESTINATION "${CMAKE_INSTALL_LIBDIR}/pkgconfig")

  install(PROGRAMS "${PROJECT_SOURCE_DIR}/launch/apgasrun" DESTINATION "${CMAKE_INSTALL_BINDIR}")
  # apgasrun's filter of mpiexec's end-of-job banners and its ssh for MPICH's mpiexec, found
  # from bin/ as ../libexec/apgas/.
  install(FILES "${PROJECT_SOURCE_DIR}/launch/mpiexec_summary.awk"
          DESTINATION "${CMAKE_INSTALL_LIBEXECDIR}/apgas")
  install(PROGRAMS "${PROJECT_SOURCE_DIR}/launch/apgas-ssh"
          DESTINATION "${CMAKE_INSTALL_LIBEXECDIR}/apgas")

  # cpack -G DEB in the build directory: libapgas-dev_<version>_<arch>.deb, installed under /usr.
  # Only when apgas is the top-level project: an embedding project packages itself.
  if(NOT PROJECT_IS_TOP_LEVEL)
    return()
  endif()
  set(CPACK_PACKAGE_NAME apgas)
  set(CPACK_PACKAGE_VENDOR apgas)
  set(CPACK_PACKAGE_CONTACT "apgas developers <apgas@localhost>")
  set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
      "X10's places, async, finish and at for C++20 over MPI (static libraries, headers, apgasrun)")
  set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
  set(CPACK_GENERATOR DEB)
  set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
  set(CPACK_DEBIAN_PACKAGE_NAME libapgas-dev)
  set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
  set(CPACK_DEBIAN_PACKAGE_SECTION libdevel)
  # What apgasConfig.cmake and apgas.pc find for the user, and mpiexec for apgasrun.
  set(CPACK_DEBIAN_PACKAGE_DEPENDS
      "libopenmpi-dev, libhwloc-dev, libfmt-dev, pkg-config | pkgconf")
  set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "openmpi-bin")
  include(CPack)
endfunction()
