# The out-of-tree consumer test: installs autobatch from BUILD_DIR into a fresh prefix under
# WORK_DIR, builds samples/embed/consumer against it with find_package(autobatch) alone, and runs
# it. Fails unless the install, the build and the run succeed, the Khronos validation layer was on
# and the consumer reports every check passed.
file(REMOVE_RECURSE ${WORK_DIR})
set(prefix ${WORK_DIR}/prefix)
macro(step)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "failed (${rc}): ${ARGN}\n${out}")
  endif()
endmacro()
step(${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix})
# Only the public headers are installed: the repository's internals are out of reach.
if(EXISTS ${prefix}/include/ir OR EXISTS ${prefix}/include/engine OR NOT EXISTS
   ${prefix}/include/autobatch/autobatch.h)
  message(FATAL_ERROR "the install's include/ holds more (or less) than include/autobatch")
endif()
step(${CMAKE_COMMAND} -S ${SOURCE_DIR}/samples/embed/consumer -B ${WORK_DIR}/build -G Ninja
     -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_BUILD_TYPE=Release)
step(${CMAKE_COMMAND} --build ${WORK_DIR}/build)
step(${WORK_DIR}/build/embed_consumer)
message("${out}")
if(NOT out MATCHES "validation layer: on" OR NOT out MATCHES "all checks passed")
  message(FATAL_ERROR "the consumer did not pass with validation on")
endif()
# pkg-config finds the same library.
step(pkg-config --with-path=${prefix}/lib/pkgconfig --libs autobatch)
if(NOT out MATCHES "-lautobatch")
  message(FATAL_ERROR "pkg-config: ${out}")
endif()
