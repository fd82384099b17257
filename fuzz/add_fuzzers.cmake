# Included by the top-level CMakeLists.txt: builds fuzz/ (a standalone clang++-14 project) into
# build/fuzz with ExternalProject_Add, and registers one bounded ctest run per fuzzer (labels
# `slow` and `fuzz`). Without clang++-14 and its libFuzzer and sanitizer runtimes, the fuzzers
# are skipped with a message and configure still succeeds.
option(AB_FUZZ "Build and test the libFuzzer targets (needs clang++-14 with libFuzzer)" ON)
if(NOT AB_FUZZ)
  return()
endif()

find_program(AB_FUZZ_CXX NAMES clang++-14)
if(NOT AB_FUZZ_CXX)
  message(STATUS "fuzz: clang++-14 not found; fuzzers skipped "
                 "(apt-get install clang-14 libfuzzer-14-dev libclang-rt-14-dev)")
  return()
endif()

# clang-14 alone links no fuzzer: libFuzzer and the sanitizer runtimes are separate packages.
# Link a one-line fuzzer to find out (about a second, once per configure).
set(probe_dir ${PROJECT_BINARY_DIR}/fuzz-probe)
file(WRITE ${probe_dir}/probe.cpp
     "#include <cstddef>\n#include <cstdint>\n"
     "extern \"C\" int LLVMFuzzerTestOneInput(const uint8_t*, size_t) { return 0; }\n")
execute_process(
  COMMAND ${AB_FUZZ_CXX} -fsanitize=fuzzer,address,undefined probe.cpp -o probe
  WORKING_DIRECTORY ${probe_dir}
  RESULT_VARIABLE probe_result
  OUTPUT_QUIET ERROR_VARIABLE probe_error)
if(NOT probe_result EQUAL 0)
  string(REGEX REPLACE "\n.*" "" probe_error "${probe_error}")  # the first line says why
  if(probe_error STREQUAL "")
    set(probe_error "exit status ${probe_result}")
  endif()
  message(STATUS "fuzz: ${AB_FUZZ_CXX} cannot link -fsanitize=fuzzer,address,undefined "
                 "(${probe_error}); fuzzers skipped (apt-get install libfuzzer-14-dev "
                 "libclang-rt-14-dev)")
  return()
endif()
message(STATUS "fuzz: building the fuzzers with ${AB_FUZZ_CXX} into ${PROJECT_BINARY_DIR}/fuzz")

include(ExternalProject)
set(AB_FUZZERS fuzz_frontend fuzz_npy fuzz_csv fuzz_trace)
set(fuzz_bin ${PROJECT_BINARY_DIR}/fuzz)
list(TRANSFORM AB_FUZZERS PREPEND ${fuzz_bin}/ OUTPUT_VARIABLE fuzz_binaries)
# BUILD_ALWAYS: the sub-build tracks its own sources (ir/, tools/, debugger/), so ninja must look
# into it every time; when nothing changed that costs a fraction of a second.
ExternalProject_Add(fuzzers
  SOURCE_DIR ${PROJECT_SOURCE_DIR}/fuzz
  BINARY_DIR ${fuzz_bin}
  PREFIX ${fuzz_bin}/ep
  CMAKE_ARGS -DCMAKE_CXX_COMPILER=${AB_FUZZ_CXX}
  INSTALL_COMMAND ""
  BUILD_ALWAYS ON
  BUILD_BYPRODUCTS ${fuzz_binaries})

# Each test fuzzes for a bounded time over a fresh copy of its seed corpus in the build dir, so
# the source tree is never written; a crash or sanitizer report fails it and leaves the input in
# build/fuzz/run/<fuzzer>/.
foreach(fuzzer ${AB_FUZZERS})
  string(REPLACE "fuzz_" "" corpus ${fuzzer})
  set(dict ${PROJECT_SOURCE_DIR}/fuzz/${corpus}.dict)
  if(NOT EXISTS ${dict})
    set(dict "")
  endif()
  add_test(NAME ${fuzzer}
           COMMAND ${CMAKE_COMMAND} -DFUZZER=${fuzz_bin}/${fuzzer}
                   -DCORPUS=${PROJECT_SOURCE_DIR}/fuzz/corpus/${corpus} -DDICT=${dict}
                   -DWORK=${fuzz_bin}/run/${fuzzer} -P ${PROJECT_SOURCE_DIR}/fuzz/run_fuzzer.cmake)
  set_tests_properties(${fuzzer} PROPERTIES LABELS "slow;fuzz" TIMEOUT 120)
endforeach()
