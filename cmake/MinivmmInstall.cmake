# `cmake --install` rules and the CMake package, so that another project can
#
#   find_package(minivmm REQUIRED)
#   target_link_libraries(app PRIVATE minivmm::vmm)
#
# (docs/API.md "Using minivmm from CMake"). Included once from the root
# CMakeLists.txt after every library target exists.
#
# Layout under the prefix P:
#   P/include/minivmm/*.h, P/include/minivmm_abi/*.h    the public API, copied
#       from the source tree's include/minivmm and hypercalls/abi/minivmm_abi
#       with the same include paths ("minivmm/vm.h", "minivmm_abi/boot.h"),
#       so -I P/include is the only flag a non-CMake user needs
#   P/include/minivmm_guest/*.h                           a guest of your own:
#       inline hypercall, report and shutdown helpers (docs/own-guest.md)
#   P/lib/libminivmm_*.a                                  the VMM library
#   P/lib/cmake/minivmm/                                  package config
#   P/share/minivmm/minivmm-guest.elf                     the built-in guest
#   P/share/minivmm/minivmm-guest-uncounted.elf           the same, its event
#       counting compiled out (what `minivmm bench` times)
#   P/share/minivmm/guest/{entry.c,guest.ld}              entry stub and linker
#       script that minivmm_add_guest() (MinivmmAddGuest.cmake) links
#   P/bin/minivmm                                         the CLI
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(MINIVMM_INSTALL_INCLUDEDIR ${CMAKE_INSTALL_INCLUDEDIR})
set(MINIVMM_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/minivmm)
# vmm/vm.cc's DefaultGuestKernelPath() looks for <prefix>/share/minivmm, so
# this is fixed rather than CMAKE_INSTALL_DATADIR.
set(MINIVMM_INSTALL_DATADIR share/minivmm)

# minivmm::vmm is the one target embedders name. It is a static library whose
# internal static libraries are PUBLIC link dependencies, so they are
# installed and exported too (as minivmm::core, minivmm::kvm, ...); their
# headers are not installed. Adding a library to minivmm_vmm's link interface
# without adding it here fails at configure time ("requires target ... that is
# not in any export set"), which is the reminder we want.
set(MINIVMM_EXPORTED_TARGETS
  minivmm_abi minivmm_core minivmm_kvm minivmm_bus minivmm_elf minivmm_devices
  minivmm_hypercalls minivmm_ktrace minivmm_vmm minivmm_symbolizer)
foreach(target IN LISTS MINIVMM_EXPORTED_TARGETS)
  string(REPLACE "minivmm_" "" export_name ${target})
  set_target_properties(${target} PROPERTIES EXPORT_NAME ${export_name})
endforeach()
install(TARGETS ${MINIVMM_EXPORTED_TARGETS}
  EXPORT minivmmTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  INCLUDES DESTINATION ${MINIVMM_INSTALL_INCLUDEDIR})

# The public API (docs/API.md): every header of include/minivmm, and only
# those. tests/install checks that each installed header compiles on its own
# against the installed tree, so a public header that includes an internal
# one fails there rather than at an embedder's.
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/minivmm
  DESTINATION ${MINIVMM_INSTALL_INCLUDEDIR}
  FILES_MATCHING PATTERN "*.h")
# The guest/host ABI, as "minivmm_abi/*.h" (also what a guest build needs).
install(DIRECTORY ${PROJECT_SOURCE_DIR}/hypercalls/abi/minivmm_abi
  DESTINATION ${MINIVMM_INSTALL_INCLUDEDIR}
  FILES_MATCHING PATTERN "*.h")

# A guest of your own (docs/own-guest.md): its C helpers, its entry stub and
# linker script, and the CMake function that builds one.
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/minivmm_guest
  DESTINATION ${MINIVMM_INSTALL_INCLUDEDIR}
  FILES_MATCHING PATTERN "*.h")
install(FILES ${PROJECT_SOURCE_DIR}/cmake/guest/entry.c ${PROJECT_SOURCE_DIR}/cmake/guest/guest.ld
  DESTINATION ${MINIVMM_INSTALL_DATADIR}/guest)

# The guest kernel, counted and uncounted, built by the minivmm_guest
# ExternalProject.
install(FILES ${MINIVMM_GUEST_ELF} ${MINIVMM_UNCOUNTED_GUEST_ELF}
  DESTINATION ${MINIVMM_INSTALL_DATADIR})

install(TARGETS minivmm RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})

install(EXPORT minivmmTargets
  NAMESPACE minivmm::
  DESTINATION ${MINIVMM_INSTALL_CMAKEDIR})
configure_package_config_file(
  ${PROJECT_SOURCE_DIR}/cmake/minivmmConfig.cmake.in
  ${PROJECT_BINARY_DIR}/cmake/minivmmConfig.cmake
  INSTALL_DESTINATION ${MINIVMM_INSTALL_CMAKEDIR}
  PATH_VARS MINIVMM_INSTALL_INCLUDEDIR MINIVMM_INSTALL_DATADIR)
# 0.x: a minor version may change the API.
write_basic_package_version_file(
  ${PROJECT_BINARY_DIR}/cmake/minivmmConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES
  ${PROJECT_BINARY_DIR}/cmake/minivmmConfig.cmake
  ${PROJECT_BINARY_DIR}/cmake/minivmmConfigVersion.cmake
  ${PROJECT_SOURCE_DIR}/cmake/MinivmmAddGuest.cmake
  DESTINATION ${MINIVMM_INSTALL_CMAKEDIR})
