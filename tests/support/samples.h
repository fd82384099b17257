// The sample programs (samples/*.ab) as test cases: for each, the entry function, a generator of
// divergent per-lane inputs (different lanes take different paths and recursion depths, within
// bounds that keep runs fast), and the uniform data it needs. Shared by every backend's tests.
//
// A lane's inputs depend only on its lane index, never on the batch size, so lane i of a batch of 7
// and lane i of a batch of 1000 get the same inputs.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "ir/ir.h"
#include "ir/run.h"

namespace ab::testing {

struct SampleCase {
  std::string file;  // name under samples/, e.g. "fib.ab"
  std::string entry = "main";
  // The words of each entry parameter for lane `lane` of `lanes` (one vector per parameter).
  std::function<std::vector<std::vector<uint32_t>>(uint32_t lanes, uint32_t lane)> lane_inputs;
  // The uniform data, one run of words per declared uniform (null when there are none).
  std::function<UniformData()> uniforms{};
  // True when the program draws random numbers: its results then depend on the lane index, so a
  // lane's result is only comparable at the same index.
  bool uses_random = false;
  std::string input_bounds;  // what the inputs range over, for messages
  // Options to run it with (e.g. a small step budget when some lanes loop forever on purpose).
  RunOptions options{};
};

// Every sample, in a fixed order.
const std::vector<SampleCase>& all_samples();
// The sample called `file`; fails the current test if there is none.
const SampleCase& sample_case(const std::string& file);

// A batch of `lanes` lanes with the sample's per-lane inputs and uniforms.
Batch make_batch(const SampleCase& sample, uint32_t lanes);

// The text of AB_SOURCE_DIR/samples/<file> (empty, and the test fails, if it cannot be read).
std::string read_sample(const std::string& file);
// Reads and compiles AB_SOURCE_DIR/samples/<file>; the test fails with the diagnostics if the
// sample does not compile.
Program load_sample(const std::string& file);

// The 1-based line of the first occurrence of `needle` in `text`, or 0 if absent. Lets tests
// check reported lines against the sample's own text instead of hard-coded numbers.
int line_of(const std::string& text, const std::string& needle);

// A small deterministic hash (splitmix64) for per-lane input generators.
inline uint64_t lane_hash(uint64_t salt, uint64_t lane) {  // header-only: the soak tool uses it
  uint64_t z = salt * 0x9E3779B97F4A7C15ull + lane + 0x632BE59BD9B4E019ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

}  // namespace ab::testing
