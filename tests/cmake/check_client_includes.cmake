# The in-tree clients (tools/, debugger/, bench/) use autobatch's public API only (issue 12,
# docs/embedding.md): no file of theirs may include an ir/ or engine/ header. Fails naming every
# such include that the allow-list below does not explain.
#
# Input (-D): SOURCE_DIR, the repository root.

cmake_policy(SET CMP0057 NEW)  # if(IN_LIST)

# "file|header": the includes still needed, each with its reason.
# tools/ and bench/ need none. The debugger is not ported yet (docs/embedding.md lists what it
# still takes): its sources step the CPU VM and replay traces through ir/backends/vm.h and
# ir/trace/trace_file.h, and its model reads the lowered program's variables (storage, types,
# register offsets) and blocks (op lines, calls) from ir/ir.h, none of which the API offers yet.
set(allowed
  # ProgramInfo::lowered, BatchSnapshot/RunResult of the sources: the lowered program itself
  "debugger/execution_source.h|ir/ir.h" "debugger/execution_source.h|ir/run.h"
  "debugger/debugger.h|ir/ir.h" "debugger/debugger.h|ir/run.h"
  # breakpoints resolve block names and source lines in the lowered program
  "debugger/breakpoints.h|ir/ir.h"
  # the model lays out registers (layout_words) and prints blocks (print_lowered_block)
  "debugger/model.cpp|ir/exec.h" "debugger/model.cpp|ir/text.h"
  # the lowered view panel prints the whole lowered program
  "debugger/ui_panels.cpp|ir/text.h"
  # values formatted from their lowered variables' TypeIds
  "debugger/value_format.h|ir/types.h"
  # the CPU VM stepped one step at a time, checkpointed and restored
  "debugger/vm_source.h|ir/backends/vm.h" "debugger/vulkan_source.cpp|ir/backends/vm.h"
  # .abtrace reading and the recording of a timeline's steps into a trace
  "debugger/trace_source.h|ir/trace/trace_file.h"
  "debugger/trace_source.cpp|ir/backends/vm_check.h"
  # the lowered program and source text of a Module the debugger was handed
  "debugger/debugger.cpp|engine/module_impl.h" "debugger/vulkan_source.cpp|engine/module_impl.h"
)

set(offenders "")
foreach(folder tools debugger bench)
  file(GLOB_RECURSE files RELATIVE ${SOURCE_DIR}
    ${SOURCE_DIR}/${folder}/*.h ${SOURCE_DIR}/${folder}/*.cpp ${SOURCE_DIR}/${folder}/*.cpp.in)
  foreach(file IN LISTS files)
    file(STRINGS ${SOURCE_DIR}/${file} lines REGEX "^[ \t]*#[ \t]*include[ \t]*[\"<](ir|engine)/")
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
message(STATUS "tools/, debugger/ and bench/ include no ir/ or engine/ header outside the allow-list")
