# One step of the install tests (tests/install/CMakeLists.txt), run with
# cmake -P and -DSTEP=<step>; every failure is fatal:
#   install         cmake --install the build into PREFIX (fresh every run)
#                   and check the layout
#   headers         a generated project compiles each installed header alone
#   embed_example_build
#                   examples/embed builds against PREFIX
#   embed_example   the built example's checks pass (it needs a usable
#                   /dev/kvm: without one it fails; the test command runs
#                   it on a nested KVM then)
#   own_guest_build examples/own_guest (a one-file C guest) builds against
#                   PREFIX with minivmm_add_guest()
#   own_guest       the installed CLI runs it and its exit status, exits and
#                   reports are exactly what guest.c makes (needs /dev/kvm,
#                   as embed_example)
#   cli_public_api  cli's sources preprocess with only their own headers
#                   and the installed ones
# The consumer projects find minivmm in PREFIX and nowhere else.
cmake_minimum_required(VERSION 3.25)
foreach(var STEP MINIVMM_SOURCE_DIR MINIVMM_BINARY_DIR PREFIX WORK_DIR GENERATOR CXX_COMPILER
            C_COMPILER)
  if(NOT DEFINED ${var} OR "${${var}}" STREQUAL "")
    message(FATAL_ERROR "install_test: ${var} is not set")
  endif()
endforeach()
if("${BUILD_TYPE}" STREQUAL "")
  set(BUILD_TYPE Debug)
endif()
# Where the prefix and the consumer builds live: $MINIVMM_INSTALL_TEST_DIR
# (scripts/quickstart.sh: one per build tree, made once by the steps that
# need no KVM, then only read by the runs on each KVM), else a scratch
# directory of the caller's (gtest's TEST_TMPDIR), else the build tree.
# RUN_DIR: what one run writes (own_guest's record), the caller's scratch
# directory, so that two ctest runs of one build (this host's and the
# nested KVM's) can run the examples at the same time.
if(NOT "$ENV{MINIVMM_INSTALL_TEST_DIR}" STREQUAL "")
  set(PREFIX $ENV{MINIVMM_INSTALL_TEST_DIR}/prefix)
  set(WORK_DIR $ENV{MINIVMM_INSTALL_TEST_DIR})
elseif(NOT "$ENV{TEST_TMPDIR}" STREQUAL "")
  set(PREFIX $ENV{TEST_TMPDIR}/install/prefix)
  set(WORK_DIR $ENV{TEST_TMPDIR}/install)
endif()
set(RUN_DIR ${WORK_DIR})
if(NOT "$ENV{TEST_TMPDIR}" STREQUAL "")
  set(RUN_DIR $ENV{TEST_TMPDIR})
endif()

function(run_step what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "install_test: ${what} failed (${rc}):\n${out}\n${err}")
  endif()
  message(STATUS "install_test: ${what}: ok")
endfunction()

# A run step's example must have been built by its build step (the
# install_<example>_built fixture), in this directory.
function(require_built file build_step)
  if(NOT EXISTS ${file})
    message(FATAL_ERROR "install_test: ${file} is missing: install.${build_step} builds it")
  endif()
endfunction()

# Configures and builds the consumer project in `source` in `build`.
function(build_consumer what source build)
  file(REMOVE_RECURSE ${build})
  run_step("configure ${what}" ${CMAKE_COMMAND} -S ${source} -B ${build}
    -G ${GENERATOR}
    -DCMAKE_BUILD_TYPE=${BUILD_TYPE}
    -DCMAKE_CXX_COMPILER=${CXX_COMPILER}
    "-DCMAKE_CXX_FLAGS=${CXX_FLAGS}"
    "-DCMAKE_EXE_LINKER_FLAGS=${EXE_LINKER_FLAGS}"
    -Dminivmm_DIR=${minivmm_dir}
    -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF
    ${ARGN})
  run_step("build ${what}" ${CMAKE_COMMAND} --build ${build})
endfunction()

if(STEP STREQUAL "install")
  file(REMOVE_RECURSE ${PREFIX})
  run_step("cmake --install" ${CMAKE_COMMAND} --install ${MINIVMM_BINARY_DIR} --prefix ${PREFIX})
  foreach(file share/minivmm/minivmm-guest.elf share/minivmm/minivmm-guest-uncounted.elf
               bin/minivmm include/minivmm/vm.h
               include/minivmm_abi/hypercall.h include/minivmm/hypercall_env.h
               include/minivmm_guest/guest.h share/minivmm/guest/entry.c
               share/minivmm/guest/guest.ld lib/cmake/minivmm/MinivmmAddGuest.cmake)
    if(NOT EXISTS ${PREFIX}/${file})
      message(FATAL_ERROR "install_test: ${PREFIX}/${file} was not installed")
    endif()
  endforeach()
  return()
endif()

file(GLOB_RECURSE config_files ${PREFIX}/*/minivmmConfig.cmake)
list(LENGTH config_files n_configs)
if(NOT n_configs EQUAL 1)
  message(FATAL_ERROR "install_test: expected one minivmmConfig.cmake under ${PREFIX} "
                      "(install.install installs it), found '${config_files}'")
endif()
get_filename_component(minivmm_dir ${config_files} DIRECTORY)

if(STEP STREQUAL "headers")
  # A public header that includes an uninstalled one, or depends on being
  # included after another, fails here rather than at an embedder's.
  set(dir ${WORK_DIR}/headers)
  file(REMOVE_RECURSE ${dir})
  file(GLOB_RECURSE headers RELATIVE ${PREFIX}/include ${PREFIX}/include/*.h)
  set(sources "")
  foreach(header IN LISTS headers)
    string(MAKE_C_IDENTIFIER ${header} id)
    file(WRITE ${dir}/${id}.cc "#include \"${header}\"\n#include \"${header}\"\n")
    list(APPEND sources ${id}.cc)
  endforeach()
  file(WRITE ${dir}/CMakeLists.txt
"cmake_minimum_required(VERSION 3.25)
project(minivmm_header_check LANGUAGES CXX)
set(CMAKE_CXX_STANDARD 20)
find_package(minivmm REQUIRED)
add_library(header_check OBJECT ${sources})
target_link_libraries(header_check PRIVATE minivmm::vmm)
")
  build_consumer("the header check" ${dir} ${dir}/build)

elseif(STEP STREQUAL "embed_example_build")
  build_consumer("examples/embed" ${MINIVMM_SOURCE_DIR}/examples/embed ${WORK_DIR}/embed)

elseif(STEP STREQUAL "embed_example")
  set(build ${WORK_DIR}/embed)
  require_built(${build}/minivmm_embed embed_example_build)
  execute_process(COMMAND test -r /dev/kvm -a -w /dev/kvm RESULT_VARIABLE have_kvm)
  if(NOT have_kvm EQUAL 0)
    message(FATAL_ERROR "install_test: installed and built; no usable /dev/kvm to run the example "
                        "(scripts/quickstart.sh test runs it on a nested kvm_amd where the host has none)")
  endif()
  # Two vCPUs: the per-vCPU counts of the installed API (RunResult::per_vcpu).
  execute_process(COMMAND ${build}/minivmm_embed 3 2 RESULT_VARIABLE rc
                  OUTPUT_VARIABLE out ERROR_VARIABLE err)
  message("${out}${err}")
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "install_test: minivmm_embed exited with ${rc}")
  endif()
  # It must have booted the installed guest, not the build tree's.
  string(FIND "${out}" "kernel ${PREFIX}/share/minivmm/minivmm-guest.elf" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "install_test: the example did not boot ${PREFIX}/share/minivmm/minivmm-guest.elf")
  endif()

elseif(STEP STREQUAL "own_guest_build")
  # Configured by hand rather than with build_consumer: a guest is built
  # with the C compiler the tree builds its guests with, and none of the
  # host's flags (the asan preset's -fsanitize would break a freestanding
  # link).
  set(build ${WORK_DIR}/own_guest)
  file(REMOVE_RECURSE ${build})
  run_step("configure examples/own_guest" ${CMAKE_COMMAND}
    -S ${MINIVMM_SOURCE_DIR}/examples/own_guest -B ${build} -G ${GENERATOR}
    -DCMAKE_BUILD_TYPE=${BUILD_TYPE} -DCMAKE_C_COMPILER=${C_COMPILER}
    -Dminivmm_DIR=${minivmm_dir} -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF)
  run_step("build examples/own_guest" ${CMAKE_COMMAND} --build ${build})
  if(NOT EXISTS ${build}/own_guest.elf)
    message(FATAL_ERROR "install_test: minivmm_add_guest(own_guest) made no ${build}/own_guest.elf")
  endif()

elseif(STEP STREQUAL "own_guest")
  set(elf ${WORK_DIR}/own_guest/own_guest.elf)
  require_built(${elf} own_guest_build)
  execute_process(COMMAND test -r /dev/kvm -a -w /dev/kvm RESULT_VARIABLE have_kvm)
  if(NOT have_kvm EQUAL 0)
    message(FATAL_ERROR "install_test: own_guest built; no usable /dev/kvm to run it "
                        "(scripts/quickstart.sh test runs it on a nested kvm_amd where the host has none)")
  endif()
  set(record ${RUN_DIR}/own_guest.json)
  execute_process(COMMAND ${PREFIX}/bin/minivmm run --kernel ${elf} --memory 16M --json ${record}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  message("${out}${err}")
  # guest.c returns 7 from mvmm_guest_main: the shutdown code is the status.
  if(NOT rc EQUAL 7)
    message(FATAL_ERROR "install_test: minivmm run of own_guest exited with ${rc}, not 7")
  endif()
  string(FIND "${out}" "own_guest: hello from a guest of my own\n" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "install_test: own_guest's console line is not on stdout")
  endif()
  file(READ ${record} json)
  # Each hypercall is one exit (guest.c's header): NULL_CALLS = 10, YIELDS = 3.
  #   console_io 1 + 10 + 1 (one refused), sched_op 3 + 1, report 2,
  #   number 100 1 (unregistered); all port I/O, nothing else.
  foreach(check
      "result;stop_reason=guest shutdown"
      "result;exit_code=7"
      "exits;total=19"
      "exits;by_reason;io=19"
      "exits;pio_by_device;hypercall=19"
      "hypercalls;calls;console_io;exits=12"
      "hypercalls;calls;console_io;errors=1"
      "hypercalls;calls;sched_op;exits=4"
      "hypercalls;calls;sched_op;errors=0"
      "hypercalls;calls;report;exits=2"
      "hypercalls;calls;report;errors=0"
      "hypercalls;bad_number=1"
      "causes;causes;yield;ops=3"
      "causes;causes;yield;exits=3"
      # The reports, in guest.c's order; the last record says how many
      # entries the first stored and that the overflowing one was refused.
      "guest;reports;own.cpu=0"
      "guest;reports;own.nr_cpus=1"
      "guest;reports;own.memory_mib=16"
      "guest;reports;own.greeting_bytes=40"
      "guest;reports;own.null_calls=10"
      "guest;reports;own.null_sum=0"
      "guest;reports;own.yield_sum=0"
      "guest;reports;own.bad_command=-22"
      "guest;reports;own.unregistered=-38"
      "guest;reports;own.fib90=2880067194370816120"
      "guest;reports;own.name=one-file guest"
      "guest;reports;own.i64_min=-9223372036854775808"
      "guest;reports;own.u64_max=18446744073709551615"
      "guest;reports;own.stored=13"
      "guest;reports;own.overflowed=-7")
    string(FIND "${check}" "=" eq)
    string(SUBSTRING "${check}" 0 ${eq} path)
    math(EXPR value_at "${eq} + 1")
    string(SUBSTRING "${check}" ${value_at} -1 expected)
    string(JSON actual ERROR_VARIABLE json_error GET "${json}" ${path})
    string(REPLACE ";" "." key "${path}")
    if(json_error)
      message(FATAL_ERROR "install_test: own_guest's record has no ${key} (${json_error})")
    elseif(NOT "${actual}" STREQUAL "${expected}")
      message(FATAL_ERROR "install_test: own_guest's record: ${key} is '${actual}', expected '${expected}'")
    endif()
  endforeach()
  # Exactly the first record's 13 and the last one's 2: none of the
  # overflowing record's own.x.
  string(JSON n_reports LENGTH "${json}" guest reports)
  if(NOT n_reports EQUAL 15)
    message(FATAL_ERROR "install_test: own_guest reported ${n_reports} keys, expected 15")
  endif()

elseif(STEP STREQUAL "cli_public_api")
  # Each CLI source is preprocessed with its own headers, the installed ones
  # and the guest's freestanding lib/ (the CLI checks a command line with
  # the guest's own parser and lists before any VM runs: cli/guest_cmdline.cc)
  # and nothing else of the source tree, so an include of an internal header
  # of the VMM or the guest kernel is not found. (Preprocessing, not
  # compiling: the in-tree build already compiles and links the CLI, and a
  # full compile of it here would double this test's time.)
  set(dir ${WORK_DIR}/cli)
  file(REMOVE_RECURSE ${dir})
  file(GLOB cli_files ${MINIVMM_SOURCE_DIR}/cli/*.cc ${MINIVMM_SOURCE_DIR}/cli/*.h)
  file(COPY ${cli_files} DESTINATION ${dir}/cli)
  file(GLOB guest_lib_headers ${MINIVMM_SOURCE_DIR}/guest/lib/*.h)
  file(COPY ${guest_lib_headers} DESTINATION ${dir}/lib)
  file(GLOB cli_sources ${dir}/cli/*.cc)
  foreach(source IN LISTS cli_sources)
    get_filename_component(name ${source} NAME)
    run_step("cli/${name} includes only public headers"
      ${CXX_COMPILER} -std=c++20 -E -o ${dir}/${name}.i -I${dir} -I${PREFIX}/include
      ${source})
  endforeach()

else()
  message(FATAL_ERROR "install_test: unknown STEP '${STEP}'")
endif()
message(STATUS "install_test: ${STEP}: ok")
