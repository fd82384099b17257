// The benchmarked programs: the samples that the table of samples (samples/table/sample_table.h)
// gives bench inputs to, each with its native baseline. Inputs depend only on (program, size,
// lane), never on the batch size, so lane i does the same work at every batch size.
#pragma once

#include <string>
#include <vector>

#include "bench/native.h"
#include "samples/table/sample_table.h"

namespace ab::bench {

using samples::InputSize;
const char* input_size_name(InputSize size);  // "light", "heavy"

// The table's bench inputs (descriptions, batches, seed, result words, stack depths) and more.
struct Workload : samples::BenchInputs {
  std::string name;  // the sample's file name without ".ab"
  std::string entry;
  NativeLaneFn native = nullptr;
};

const std::vector<Workload>& workloads();
const Workload* find_workload(const std::string& name);  // nullptr if unknown

}  // namespace ab::bench
