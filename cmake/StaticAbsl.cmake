# Links Abseil statically into executables: the minivmm CLI, the tests and
# the benchmarks get the archives that Debian's libabsl-dev ships beside its
# shared objects (libabsl_X.a); shared objects (the Python module) keep the
# shared Abseil, because the archives are built for executables only (their
# thread-locals use the local-exec TLS model, which a shared object cannot).
# Included from the root CMakeLists.txt right after find_package(absl).
#
# Why: `minivmm run` needed ~30 shared Abseil libraries (and, through them,
# libstdc++ and libgcc_s), and loading them in ld.so was the largest part of
# its start-up outside the guest (docs/RESULTS.md, VMM benchmark 3b).
#
# How: an imported target's file cannot depend on who links it, but its link
# interface can. So each imported absl::X keeps its name and dependencies,
# its own file becomes an empty linker script (a no-op input for ld), and
# its link interface gains the real library: the archive when the target
# being linked is an executable, else the shared object. The link interfaces
# name all dependencies publicly, so CMake orders the archives correctly.
# Nothing changes if any archive is missing.
get_directory_property(_minivmm_imported IMPORTED_TARGETS)
set(_minivmm_absl_swaps "")
set(_minivmm_absl_missing "")
foreach(_t IN LISTS _minivmm_imported)
  if(NOT _t MATCHES "^absl::")
    continue()
  endif()
  get_target_property(_type ${_t} TYPE)
  if(NOT _type STREQUAL "SHARED_LIBRARY")
    continue()
  endif()
  get_target_property(_configs ${_t} IMPORTED_CONFIGURATIONS)
  list(LENGTH _configs _n)
  if(NOT _n EQUAL 1)  # Debian's package has exactly one (NONE)
    list(APPEND _minivmm_absl_missing "${_t} (configurations: ${_configs})")
    continue()
  endif()
  get_target_property(_so ${_t} IMPORTED_LOCATION_${_configs})
  string(REGEX REPLACE "\\.so(\\.[0-9]+)*$" ".a" _a "${_so}")
  if(_a STREQUAL _so OR NOT EXISTS "${_a}")
    list(APPEND _minivmm_absl_missing "${_so}")
  else()
    list(APPEND _minivmm_absl_swaps "${_t}|${_configs}|${_so}|${_a}")
  endif()
endforeach()

if(_minivmm_absl_missing OR NOT _minivmm_absl_swaps)
  message(STATUS "minivmm: Abseil linked shared (no archive for ${_minivmm_absl_missing})")
else()
  set(_minivmm_absl_dir ${PROJECT_BINARY_DIR}/absl-static-link)
  set(_minivmm_absl_nothing ${_minivmm_absl_dir}/nothing.ld)
  file(WRITE ${_minivmm_absl_nothing}
       "/* Empty: the archive or shared object comes from the link interface (cmake/StaticAbsl.cmake). */\n")
  # It is named by its full path; without this, CMake would add its
  # directory to every executable's run-time search path (RUNPATH), taking
  # it for a shared library's.
  list(APPEND CMAKE_PLATFORM_IMPLICIT_LINK_DIRECTORIES ${_minivmm_absl_dir})
  foreach(_swap IN LISTS _minivmm_absl_swaps)
    string(REPLACE "|" ";" _swap "${_swap}")
    list(GET _swap 0 _t)
    list(GET _swap 1 _c)
    list(GET _swap 2 _so)
    list(GET _swap 3 _a)
    # The archive as a target of its own with the same dependencies, so
    # that CMake puts each archive before the archives it needs.
    string(REPLACE "absl::" "minivmm_absl_archive::" _archive ${_t})
    get_target_property(_deps ${_t} INTERFACE_LINK_LIBRARIES)
    add_library(${_archive} STATIC IMPORTED)
    set_target_properties(${_archive} PROPERTIES IMPORTED_LOCATION ${_a})
    if(_deps)
      set_target_properties(${_archive} PROPERTIES INTERFACE_LINK_LIBRARIES "${_deps}")
    endif()
    set_target_properties(${_t} PROPERTIES IMPORTED_LOCATION_${_c} ${_minivmm_absl_nothing})
    set_property(TARGET ${_t} PROPERTY IMPORTED_SONAME_${_c})
    set_property(TARGET ${_t} APPEND PROPERTY INTERFACE_LINK_LIBRARIES
      "$<IF:$<STREQUAL:$<TARGET_PROPERTY:TYPE>,EXECUTABLE>,${_archive},${_so}>")
  endforeach()
  message(STATUS "minivmm: Abseil linked statically into executables")
endif()
unset(_minivmm_imported)
unset(_minivmm_absl_swaps)
unset(_minivmm_absl_missing)
unset(_minivmm_absl_nothing)
unset(_minivmm_absl_dir)
