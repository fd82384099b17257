// The backends `autobatch run` can use, in one table: adding a backend means adding one entry
// here (a name, a line of help and a function that runs a batch).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "ir/ir.h"
#include "ir/run.h"

namespace ab::cli {

struct BackendRun {
  RunResult result;
  std::vector<std::string> block_names;  // the lowered blocks, for backends with a step trace
};

struct Backend {
  std::string_view name;
  std::string_view description;
  bool has_step_trace = false;  // honours RunOptions::record_trace
  BackendRun (*run)(const Program& program, int entry, const Batch& batch,
                    const RunOptions& options) = nullptr;
};

const std::vector<Backend>& backends();
const Backend* find_backend(std::string_view name);
std::string_view default_backend();

}  // namespace ab::cli
