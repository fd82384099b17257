// Comparing two backends' RunResults word for word: outputs, faulted lanes and error records
// (lane, code, function, line, step). Statistics and traces are not compared here.
#pragma once

#include <string>
#include <vector>

#include "ir/ir.h"
#include "ir/run.h"

namespace ab::testing {

// Empty when `actual` equals `expected`; otherwise a description of the first differences (at
// most a few), naming lanes and words, for a test's failure message.
std::string describe_difference(const RunResult& expected, const RunResult& actual);

// The scalar kind of each word of a type, in flattening order.
void word_kinds(const Types& types, TypeId t, std::vector<Scalar>& out);

// Float words are bit-identical on every backend (docs/language.md); any NaN equals any NaN
// (the language does not define NaN payloads or signs).
bool same_float(uint32_t a, uint32_t b);

// Across devices (interp or vm against Vulkan): empty when `actual` matches `expected`: faulted
// lanes, error records and every output word exactly, reading float words as floats (NaN = NaN).
std::string compare_results(const LoweredProgram& program, const RunResult& expected,
                            const RunResult& actual);

// One error record as text: "lane 3: stack_overflow in fib at line 7, step 812".
std::string describe_error(const LaneError& error);

}  // namespace ab::testing
