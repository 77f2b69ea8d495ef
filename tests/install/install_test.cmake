# Driven by tests/install/CMakeLists.txt (cmake -P). Steps, each fatal on
# failure:
#   1. cmake --install the build into WORK_DIR/prefix (fresh every run);
#   2. check the layout: guest image, CLI, package config, headers;
#   3. build a generated project that compiles each installed header alone;
#   4. build examples/embed against the prefix, finding only this prefix;
#   5. run it; it exits 0 only if its checks pass. Without a usable /dev/kvm
#      this step prints "install_test: SKIP" and the test is skipped.
cmake_minimum_required(VERSION 3.25)
foreach(var MINIVMM_SOURCE_DIR MINIVMM_BINARY_DIR WORK_DIR GENERATOR CXX_COMPILER)
  if(NOT DEFINED ${var} OR "${${var}}" STREQUAL "")
    message(FATAL_ERROR "install_test: ${var} is not set")
  endif()
endforeach()
if("${BUILD_TYPE}" STREQUAL "")
  set(BUILD_TYPE Debug)
endif()

set(prefix ${WORK_DIR}/prefix)
file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${WORK_DIR})

function(run_step what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "install_test: ${what} failed (${rc}):\n${out}\n${err}")
  endif()
  message(STATUS "install_test: ${what}: ok")
endfunction()

# 1. Install.
run_step("cmake --install" ${CMAKE_COMMAND} --install ${MINIVMM_BINARY_DIR} --prefix ${prefix})

# 2. Layout.
file(GLOB_RECURSE config_files ${prefix}/*/minivmmConfig.cmake)
list(LENGTH config_files n_configs)
if(NOT n_configs EQUAL 1)
  message(FATAL_ERROR "install_test: expected one minivmmConfig.cmake under ${prefix}, found '${config_files}'")
endif()
get_filename_component(minivmm_dir ${config_files} DIRECTORY)
foreach(file share/minivmm/minivmm-guest.elf bin/minivmm include/minivmm/vmm/vm.h
             include/minivmm/minivmm_abi/hypercall.h include/minivmm/hypercalls/hypercall_env.h)
  if(NOT EXISTS ${prefix}/${file})
    message(FATAL_ERROR "install_test: ${prefix}/${file} was not installed")
  endif()
endforeach()

set(configure_args
  -G ${GENERATOR}
  -DCMAKE_BUILD_TYPE=${BUILD_TYPE}
  -DCMAKE_CXX_COMPILER=${CXX_COMPILER}
  "-DCMAKE_CXX_FLAGS=${CXX_FLAGS}"
  "-DCMAKE_EXE_LINKER_FLAGS=${EXE_LINKER_FLAGS}"
  # This prefix and nothing else: never a minivmm installed on the machine.
  -Dminivmm_DIR=${minivmm_dir}
  -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF)

# 3. Every installed header compiles on its own, seeing only the prefix (and
# the system): a public header that includes an uninstalled one fails here.
set(headers_dir ${WORK_DIR}/headers)
file(GLOB_RECURSE headers RELATIVE ${prefix}/include/minivmm ${prefix}/include/minivmm/*.h)
set(sources "")
foreach(header IN LISTS headers)
  string(MAKE_C_IDENTIFIER ${header} id)
  file(WRITE ${headers_dir}/${id}.cc "#include \"${header}\"\n#include \"${header}\"\n")
  list(APPEND sources ${id}.cc)
endforeach()
file(WRITE ${headers_dir}/CMakeLists.txt
"cmake_minimum_required(VERSION 3.25)
project(minivmm_header_check LANGUAGES CXX)
set(CMAKE_CXX_STANDARD 20)
find_package(minivmm REQUIRED)
add_library(header_check OBJECT ${sources})
target_link_libraries(header_check PRIVATE minivmm::vmm)
")
run_step("configure the header check" ${CMAKE_COMMAND} -S ${headers_dir} -B ${headers_dir}/build
         ${configure_args})
run_step("compile each installed header alone" ${CMAKE_COMMAND} --build ${headers_dir}/build)

# 4. The example, as an embedder would build it.
set(example_build ${WORK_DIR}/embed)
run_step("configure examples/embed" ${CMAKE_COMMAND} -S ${MINIVMM_SOURCE_DIR}/examples/embed
         -B ${example_build} ${configure_args})
run_step("build examples/embed" ${CMAKE_COMMAND} --build ${example_build})

# 5. Run it.
execute_process(COMMAND test -r /dev/kvm -a -w /dev/kvm RESULT_VARIABLE have_kvm)
if(NOT have_kvm EQUAL 0)
  message("install_test: SKIP: installed and built; no usable /dev/kvm to run the example")
  return()
endif()
execute_process(COMMAND ${example_build}/minivmm_embed RESULT_VARIABLE rc
                OUTPUT_VARIABLE out ERROR_VARIABLE err)
message("${out}${err}")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "install_test: minivmm_embed exited with ${rc}")
endif()
# The example must have booted the installed guest, not the build tree's.
string(FIND "${out}" "kernel ${prefix}/share/minivmm/minivmm-guest.elf" at)
if(at EQUAL -1)
  message(FATAL_ERROR "install_test: the example did not use ${prefix}/share/minivmm/minivmm-guest.elf")
endif()
message(STATUS "install_test: installed package, header check and example: ok")
