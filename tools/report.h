// Presenting a finished run on stdout, as a readable table or as one JSON document.
//
// JSON: {"outputs": {KEY: [one value per lane, null for a faulted lane]},
//        "errors": [{"lane", "code", "function", "line", "step"}],
//        "stats": {"backend", "lanes", "steps", "lane_steps", "calls", "utilization",
//                  "max_stack_depth", "wall_seconds"[, "blocks"]}
//        [, "trace": [[block, active lanes], ...]]}
// KEY is "result" or a struct field path (tools/outputs.h). "blocks" and "trace" appear only
// when the step trace was asked for.
//
// Table: the first `max_lanes` lanes (lane, each scalar input, each output column, and an
// "error" column when a shown lane faulted), a "... N more lanes" line, the first errors, then
// the statistics (and the first trace steps when asked for).
#pragma once

#include <cstddef>
#include <string>

#include <nlohmann/json.hpp>

#include "autobatch/batch.h"
#include "autobatch/module.h"
#include "tools/backends.h"

namespace ab::cli {

struct RunReport {
  const Module& module;
  const Batch& batch;
  std::string backend;
  const BackendRun& run;
  bool with_trace = false;
};

nlohmann::ordered_json report_json(const RunReport& report);
std::string report_table(const RunReport& report, size_t max_lanes = 20);

}  // namespace ab::cli
