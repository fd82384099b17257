// The benchmarked programs: each names its sample (samples/<name>.ab), makes deterministic,
// divergent per-lane inputs for a batch size (smaller with --quick), and points at its native
// baseline. Inputs depend only on (program, lane), never on the batch size, so lane i does the
// same work at every batch size.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "bench/native.h"
#include "ir/run.h"

namespace ab::bench {

struct Workload {
  std::string name;    // also the sample's file name without ".ab"
  std::string inputs;  // how the inputs are drawn, for the report
  std::string quick_inputs;
  uint64_t seed = 1;       // RunOptions::seed (random draws in nuts_tree)
  uint32_t out_words = 1;  // result words per lane
  Batch (*make_batch)(uint32_t lanes, bool quick) = nullptr;
  NativeLaneFn native = nullptr;
  // RunOptions::stack_depth: the deepest call chain the inputs reach, with room to spare. The
  // default (1024) would make the Vulkan engine reserve stacks the programs never use (1.4 GiB
  // for nuts_tree at 16384 lanes, past lavapipe's 128 MiB buffer range).
  uint32_t stack_depth = 1024;
};

const std::vector<Workload>& workloads();
const Workload* find_workload(const std::string& name);  // nullptr if unknown

}  // namespace ab::bench
