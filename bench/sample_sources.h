// The .ab sources of the benchmarked samples (fib, ackermann, collatz, tak, nuts_tree), embedded
// at configure time from samples/ so the benchmark does not depend on the working directory.
#pragma once

#include <string>
#include <vector>

namespace ab::bench {

struct SampleSource {
  std::string name;  // file name without ".ab"
  std::string text;
};

const std::vector<SampleSource>& sample_sources();

}  // namespace ab::bench
