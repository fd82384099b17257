// Comparing two backends' RunResults word for word: outputs, faulted lanes and error records
// (lane, code, function, line, step). Statistics and traces are not compared here.
#pragma once

#include <string>

#include "ir/run.h"

namespace ab::testing {

// Empty when `actual` equals `expected`; otherwise a description of the first differences (at
// most a few), naming lanes and words, for a test's failure message.
std::string describe_difference(const RunResult& expected, const RunResult& actual);

// One error record as text: "lane 3: stack_overflow in fib at line 7, step 812".
std::string describe_error(const LaneError& error);

}  // namespace ab::testing
