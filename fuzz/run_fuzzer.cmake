# ctest's driver for one fuzzer:
#   cmake -DFUZZER=... -DCORPUS=... -DWORK=... [-DDICT=...] -P run_fuzzer.cmake
# Copies the seed corpus CORPUS into WORK/corpus (so the source tree is never written), fuzzes for
# 30 seconds, and fails on any crash, sanitizer report, hang (10 s per input) or 2 GB of memory;
# the offending input is left in WORK as crash-*, timeout-*, leak-* or oom-*.
foreach(var FUZZER CORPUS WORK)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "run_fuzzer.cmake: -D${var}=... is required")
  endif()
endforeach()
# Only the corpus is replaced: inputs that broke earlier runs stay until the build dir goes.
file(REMOVE_RECURSE ${WORK}/corpus)
file(MAKE_DIRECTORY ${WORK})
file(COPY ${CORPUS}/ DESTINATION ${WORK}/corpus)
set(dict_arg "")
if(DICT)
  set(dict_arg -dict=${DICT})  # the format's keywords, so mutations reach past the lexer
endif()
execute_process(
  COMMAND ${CMAKE_COMMAND} -E env UBSAN_OPTIONS=print_stacktrace=1
          ${FUZZER} -max_total_time=30 -rss_limit_mb=2048 -timeout=10 -print_final_stats=1
          ${dict_arg} -artifact_prefix=${WORK}/ ${WORK}/corpus
  WORKING_DIRECTORY ${WORK}
  RESULT_VARIABLE result)
if(NOT result EQUAL 0)
  message(FATAL_ERROR "${FUZZER} failed (${result}); the input that broke it is in ${WORK}")
endif()
