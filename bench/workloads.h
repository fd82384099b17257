// The benchmarked programs: each names its sample (samples/<name>.ab), makes deterministic,
// divergent per-lane inputs for a batch size in two sizes — light (smaller still with --quick) and
// heavy — and points at its native baseline. Inputs depend only on (program, size, lane), never
// on the batch size, so lane i does the same work at every batch size.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "bench/native.h"
#include "ir/run.h"

namespace ab::bench {

// Light: short programs, where fixed costs per run weigh; heavy: enough work per lane that the
// glsl ceiling runs >= 0.5 s at 16384 lanes on lavapipe (collatz excepted: docs/performance.md).
enum class InputSize { Light, Heavy };
const char* input_size_name(InputSize size);  // "light", "heavy"

struct Workload {
  std::string name;  // also the sample's file name without ".ab"
  // How the inputs are drawn, for the report: light, light under --quick, heavy.
  std::string inputs;
  std::string quick_inputs;
  std::string heavy_inputs;
  uint64_t seed = 1;       // RunOptions::seed (random draws in nuts_tree)
  uint32_t out_words = 1;  // result words per lane
  // `quick` shrinks the light inputs only; heavy ones are the same with and without it.
  Batch (*make_batch)(uint32_t lanes, InputSize size, bool quick) = nullptr;
  NativeLaneFn native = nullptr;
  // RunOptions::stack_depth: the deepest call chain the inputs reach, with room to spare. The
  // default (1024) would make the Vulkan engine reserve stacks the programs never use (1.4 GiB
  // for nuts_tree at 16384 lanes, past lavapipe's 128 MiB buffer range).
  uint32_t stack_depth = 1024;
  uint32_t heavy_stack_depth = 1024;

  uint32_t depth(InputSize size) const {
    return size == InputSize::Heavy ? heavy_stack_depth : stack_depth;
  }
};

const std::vector<Workload>& workloads();
const Workload* find_workload(const std::string& name);  // nullptr if unknown

}  // namespace ab::bench
