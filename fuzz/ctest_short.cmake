# Registers the short fuzz run as one ctest test. Include it from the root
# CMakeLists.txt after enable_testing():
#
#   include(${PROJECT_SOURCE_DIR}/fuzz/ctest_short.cmake)
#
# The test builds the standalone fuzz project (fuzz/CMakeLists.txt, clang-14)
# in <build>/fuzz on first use, replays fuzz/regressions/, then fuzzes each
# target for FUZZ_SECONDS (10 s; the eight take about 80 s of CPU, run as
# many at a time as there are cores). Without clang-14 it
# is not registered, so a machine that lacks it does not fail (the setup
# command installs clang-14 on Debian 12).
find_program(MINIVMM_FUZZ_CLANG clang++-14)
if(MINIVMM_FUZZ_CLANG)
  add_test(NAME fuzz_short
           COMMAND ${CMAKE_CURRENT_LIST_DIR}/run-short.sh ${PROJECT_BINARY_DIR}/fuzz)
  # The root builds the fuzz project (ExternalProject minivmm_fuzz); the
  # script only rebuilds it when run on its own.
  set_tests_properties(fuzz_short PROPERTIES TIMEOUT 900 LABELS fuzz
                       ENVIRONMENT "FUZZ_SECONDS=10")
else()
  message(STATUS "clang++-14 not found: the fuzz_short test is not registered")
endif()
