# Registers every doctest test case of the test binary as its own CTest test, so `ctest -j`
# spreads the cases of one file over the cores, and labels each one (run after every build of the
# binary; CTest includes the file it writes). Labels: the file's own (`vulkan`, `window`) from
# FILE_LABELS ("file=label,label;..."), then `slow` for the cases named in SLOW_CASES and
# `quick` for every other case: `ctest -L quick` is the edit loop.
#
# Inputs (-D): TEST_EXECUTABLE, TEST_FILES (names without .cpp), FILE_LABELS, SLOW_CASES
# ("file: case" entries separated by "|"), OUTPUT.
cmake_policy(SET CMP0057 NEW)
set(script "")
string(REPLACE "|" ";" slow_cases "${SLOW_CASES}")
foreach(file IN LISTS TEST_FILES)
  execute_process(
    COMMAND "${TEST_EXECUTABLE}" "--source-file=*/${file}.cpp" --list-test-cases --no-version
    OUTPUT_VARIABLE listing RESULT_VARIABLE status)
  if(NOT status EQUAL 0)
    message(FATAL_ERROR "listing the test cases of ${file} failed (${status}):\n${listing}")
  endif()
  set(file_labels "")
  foreach(entry IN LISTS FILE_LABELS)
    if(entry MATCHES "^${file}=(.*)$")
      string(REPLACE "," ";" file_labels "${CMAKE_MATCH_1}")
    endif()
  endforeach()
  # Names may hold ';', '[' and ']', which CMake lists treat specially: encode them first.
  string(REPLACE ";" "@SEMI@" listing "${listing}")
  string(REPLACE "[" "@LB@" listing "${listing}")
  string(REPLACE "]" "@RB@" listing "${listing}")
  string(REPLACE "\n" ";" lines "${listing}")
  set(count 0)
  foreach(name IN LISTS lines)
    if(name STREQUAL "" OR name MATCHES "^@LB@doctest@RB@" OR name MATCHES "^=+$")
      continue()
    endif()
    string(REPLACE "@SEMI@" ";" name "${name}")
    string(REPLACE "@LB@" "[" name "${name}")
    string(REPLACE "@RB@" "]" name "${name}")
    math(EXPR count "${count} + 1")
    set(test "${file}: ${name}")
    set(labels ${file_labels})
    if("${test}" IN_LIST slow_cases)
      list(APPEND labels slow)
    else()
      list(APPEND labels quick)
    endif()
    # doctest's filters split at commas: escape them.
    string(REPLACE "," "\\," filter "${name}")
    string(APPEND script
      "add_test([==[${test}]==] [==[${TEST_EXECUTABLE}]==] [==[--source-file=*/${file}.cpp]==] "
      "[==[--test-case=${filter}]==] --no-version)\n"
      "set_tests_properties([==[${test}]==] PROPERTIES LABELS \"${labels}\" "
      "FAIL_REGULAR_EXPRESSION [==[test cases: *0 \\|]==])\n")
  endforeach()
  if(count EQUAL 0)
    message(FATAL_ERROR "${file}.cpp has no test cases")
  endif()
endforeach()
file(WRITE "${OUTPUT}" "${script}")
