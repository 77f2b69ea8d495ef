# minivmm_add_guest(): a guest of your own as a freestanding static ELF
# (docs/own-guest.md). Part of the installed package: minivmmConfig.cmake
# includes it after setting minivmm_INCLUDE_DIR and minivmm_GUEST_KIT_DIR.
#
#   find_package(minivmm 0.3 REQUIRED)
#   minivmm_add_guest(my_guest SOURCES guest.c)   # -> my_guest.elf
#
# The sources include "minivmm_guest/guest.h" and define mvmm_guest_main();
# the kit's entry.c (_start, memcpy and friends) and guest.ld (load at 1 MiB,
# identity mapped) are added. Compiled with the project's C compiler (gcc or
# clang for x86-64) and these flags after the project's own CMAKE_C_FLAGS,
# which therefore must not carry host-only flags such as -fsanitize.
function(minivmm_add_guest name)
  cmake_parse_arguments(PARSE_ARGV 1 G "" "" "SOURCES")
  if(NOT G_SOURCES OR G_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "minivmm_add_guest(${name}): usage: minivmm_add_guest(NAME SOURCES file.c ...)")
  endif()
  if(NOT CMAKE_C_COMPILER_LOADED)
    message(FATAL_ERROR "minivmm_add_guest(${name}): the project must enable C (project(... LANGUAGES C))")
  endif()
  if(NOT CMAKE_C_COMPILER_ID MATCHES "^(GNU|Clang)$" OR NOT CMAKE_SIZEOF_VOID_P EQUAL 8)
    message(FATAL_ERROR "minivmm_add_guest(${name}): needs gcc or clang targeting x86-64, "
                        "not ${CMAKE_C_COMPILER_ID} with ${CMAKE_SIZEOF_VOID_P}-byte pointers")
  endif()
  set(linker_script ${minivmm_GUEST_KIT_DIR}/guest.ld)
  add_executable(${name} ${G_SOURCES} ${minivmm_GUEST_KIT_DIR}/entry.c)
  set_target_properties(${name} PROPERTIES SUFFIX ".elf" LINK_DEPENDS ${linker_script})
  target_include_directories(${name} PRIVATE ${minivmm_INCLUDE_DIR})
  # Freestanding, not position independent, linked at 1 MiB (so the small
  # code model); no red zone (an interrupt handler would push over it); no
  # SSE or x87 in compiled code (ring-0 SSE fails on the software-KVM hosts,
  # docs/hosts.md); no stack protector or unwind tables (no runtime). gcc
  # must not turn entry.c's byte loops into calls to memset or memcpy.
  target_compile_options(${name} PRIVATE
    -ffreestanding -fno-pic -fno-pie -mno-red-zone -mgeneral-regs-only -mcmodel=small
    -fno-stack-protector -fno-asynchronous-unwind-tables -fno-unwind-tables -O2
    $<$<C_COMPILER_ID:GNU>:-fno-tree-loop-distribute-patterns>)
  target_link_options(${name} PRIVATE
    -nostdlib -static -no-pie -Wl,--build-id=none -Wl,-z,max-page-size=4096
    -Wl,-z,noexecstack -T ${linker_script})
  # libgcc: helpers gcc may call (128-bit division); nothing else is linked.
  target_link_libraries(${name} PRIVATE $<$<C_COMPILER_ID:GNU>:gcc>)
endfunction()
