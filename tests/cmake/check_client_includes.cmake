# The in-tree clients (tools/, debugger/, bench/, python/) use autobatch's public API only (issue
# 12, docs/embedding.md): no file of theirs may include a library layer's header (ir/, passes/, lang/, cpu/, core/, trace/, codegen/, engine/, sampler/). Fails naming every
# such include that the allow-list below does not explain.
#
# Input (-D): SOURCE_DIR, the repository root.

cmake_policy(SET CMP0057 NEW)  # if(IN_LIST)

# "file|header": the includes still needed, each with its reason.
# Empty: every client file includes autobatch/ headers and its own folder's only (and the build
# enforces it: the clients link autobatch_public, which exports include/ alone).
set(allowed)

set(offenders "")
foreach(folder tools debugger bench python)
  file(GLOB_RECURSE files RELATIVE ${SOURCE_DIR}
    ${SOURCE_DIR}/${folder}/*.h ${SOURCE_DIR}/${folder}/*.cpp ${SOURCE_DIR}/${folder}/*.cpp.in)
  foreach(file IN LISTS files)
    file(STRINGS ${SOURCE_DIR}/${file} lines REGEX "^[ \t]*#[ \t]*include[ \t]*[\"<](ir|passes|lang|cpu|core|trace|codegen|engine|sampler)/")
    foreach(line IN LISTS lines)
      string(REGEX REPLACE "^[^\"<]*[\"<]([^\">]*)[\">].*$" "\\1" header "${line}")
      if(NOT "${file}|${header}" IN_LIST allowed)
        string(APPEND offenders "  ${file}: ${header}\n")
      endif()
    endforeach()
  endforeach()
endforeach()

if(offenders)
  message(FATAL_ERROR "the clients include library internals (use include/autobatch/ instead, or "
                      "explain the use in tests/cmake/check_client_includes.cmake):\n${offenders}")
endif()
message(STATUS "tools/, debugger/, bench/ and python/ include no ir/, engine/ or sampler/ header")
