// The sample programs (samples/*.ab) as data: ONE table that the tests, the benchmark suite and
// the debugger's tests all read. For each sample: its file and entry, a generator of divergent
// per-lane test inputs (different lanes take different paths and recursion depths, within bounds
// that keep test runs fast), its uniforms and run options, and, for the benchmarked ones, the
// bench's light (smaller with --quick) and heavy inputs and the stack depths they need. The
// sources themselves are embedded at configure time (sample_source), so a binary that reads them
// runs from any directory.
//
// Inputs depend only on the lane index (and the bench's input size), never on the batch size:
// lane i of a batch of 7 and lane i of a batch of 1000 get the same inputs.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "autobatch/batch.h"

namespace ab::samples {

using LaneWords = std::vector<std::vector<uint32_t>>;  // the words of each entry parameter

// The benchmark's input sizes. Light: short programs, where fixed costs per run weigh; heavy:
// enough work per lane that the glsl ceiling runs >= 0.5 s at 16384 lanes on lavapipe (collatz
// excepted: docs/performance.md).
enum class InputSize { Light, Heavy };

// How the benchmark feeds a sample.
struct BenchInputs {
  // How the inputs are drawn, for the report: light, light under --quick, heavy.
  std::string inputs;
  std::string quick_inputs;
  std::string heavy_inputs;
  uint64_t seed = 1;       // RunOptions::seed (random draws in nuts_tree)
  uint32_t out_words = 1;  // result words per lane
  // `quick` shrinks the light inputs only; heavy ones are the same with and without it.
  Batch (*make_batch)(uint32_t lanes, InputSize size, bool quick) = nullptr;
  // RunOptions::stack_depth: the deepest call chain the inputs reach, with room to spare. The
  // default (1024) would make the Vulkan engine reserve stacks the programs never use (1.4 GiB
  // for nuts_tree at 16384 lanes, past lavapipe's 128 MiB buffer range).
  uint32_t stack_depth = 1024;
  uint32_t heavy_stack_depth = 1024;

  uint32_t depth(InputSize size) const {
    return size == InputSize::Heavy ? heavy_stack_depth : stack_depth;
  }
};

struct Sample {
  std::string file;  // name under samples/, e.g. "fib.ab"
  std::string entry = "main";
  // The test inputs: the words of each entry parameter for lane `lane` of `lanes`.
  std::function<LaneWords(uint32_t lanes, uint32_t lane)> lane_inputs;
  // The uniform data, one run of words per declared uniform (null when there are none).
  std::function<UniformData()> uniforms{};
  // True when the program draws random numbers: its results then depend on the lane index, so a
  // lane's result is only comparable at the same index.
  bool uses_random = false;
  std::string input_bounds;  // what the test inputs range over, for messages
  // Options to run the tests with (e.g. a small step budget when some lanes loop forever).
  RunOptions options{};
  std::optional<BenchInputs> bench;  // set for the samples `autobatch bench` measures

  std::string name() const { return file.substr(0, file.size() - 3); }  // "fib"
};

// Every sample, in a fixed order.
const std::vector<Sample>& all_samples();
// The sample whose file is `file` ("fib.ab") or whose name is `file` ("fib"); nullptr if none.
const Sample* find_sample(const std::string& file);

// A batch of `lanes` lanes with the sample's test inputs and uniforms.
Batch make_test_batch(const Sample& sample, uint32_t lanes);

// The text of samples/<file> as it was when the build was configured; nullptr for an unknown file.
const std::string* sample_source(const std::string& file);

// A small deterministic hash (splitmix64) for per-lane input generators.
inline uint64_t lane_hash(uint64_t salt, uint64_t lane) {
  uint64_t z = salt * 0x9E3779B97F4A7C15ull + lane + 0x632BE59BD9B4E019ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

}  // namespace ab::samples
