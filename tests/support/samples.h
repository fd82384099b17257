// The sample programs as test cases: the one table of samples (samples/table/sample_table.h,
// shared with the benchmark) seen from a test, with doctest failures where a sample is missing
// or does not compile.
#pragma once

#include <string>
#include <vector>

#include "ir/ir.h"
#include "ir/run.h"
#include "lang/frontend.h"
#include "samples/table/sample_table.h"

namespace ab::testing {

using SampleCase = samples::Sample;
using samples::all_samples;
using samples::lane_hash;

// The sample called `file`; fails the current test if there is none.
const SampleCase& sample_case(const std::string& file);

// A batch of `lanes` lanes with the sample's per-lane test inputs and uniforms.
inline Batch make_batch(const SampleCase& sample, uint32_t lanes) {
  return samples::make_test_batch(sample, lanes);
}

// The text of samples/<file> (empty, and the test fails, if there is no such sample).
std::string read_sample(const std::string& file);
// Compiles samples/<file>; the test fails with the diagnostics if the sample does not compile.
Program load_sample(const std::string& file);

// A program of a test's own, compiled and lowered from its entry; the test fails with the
// diagnostics if it does not compile or has no such entry.
struct CompiledProgram {
  Program program;
  int entry = -1;
  LoweredProgram lowered;
};
CompiledProgram compile_program(const std::string& source, const std::string& file,
                                const std::string& entry = "main",
                                const FrontendOptions& options = {});

// The 1-based line of the first occurrence of `needle` in `text`, or 0 if absent. Lets tests
// check reported lines against the sample's own text instead of hard-coded numbers.
int line_of(const std::string& text, const std::string& needle);

}  // namespace ab::testing
