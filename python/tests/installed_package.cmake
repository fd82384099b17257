# `cmake --install` into a fresh prefix, then the package imported from PREFIX/SITE with the
# build tree out of reach: it must come from the prefix and run a program.
#
# Input (-D): BUILD_DIR, PREFIX, SITE (relative to PREFIX), PYTHON.
file(REMOVE_RECURSE ${PREFIX})
execute_process(COMMAND ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${PREFIX}
                RESULT_VARIABLE installed OUTPUT_QUIET)
if(NOT installed EQUAL 0)
  message(FATAL_ERROR "cmake --install failed")
endif()
set(script [=[
import sys
import numpy as np
import autobatch
assert autobatch.__file__.startswith(sys.argv[1]), autobatch.__file__
m = autobatch.Module.compile("fn main(n: int) -> int { return n * 3; }")
out = m.run(inputs={"n": np.arange(4)}, backend="interp").outputs["result"]
assert out.tolist() == [0, 3, 6, 9], out
print("imported from", autobatch.__file__)
]=])
execute_process(
  COMMAND ${CMAKE_COMMAND} -E env --unset=PYTHONPATH PYTHONPATH=${PREFIX}/${SITE}
          PYTHONDONTWRITEBYTECODE=1 ${PYTHON} -c "${script}" ${PREFIX}
  WORKING_DIRECTORY ${PREFIX} RESULT_VARIABLE ran)
if(NOT ran EQUAL 0)
  message(FATAL_ERROR "the installed package did not import and run")
endif()
