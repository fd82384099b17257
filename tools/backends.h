// The backends `autobatch run` can use, in one table: adding a backend means adding one entry
// here (a name, a line of help and a function that runs a batch).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "autobatch/batch.h"
#include "autobatch/engine.h"
#include "autobatch/expected.h"
#include "autobatch/module.h"

namespace ab::cli {

// Device options of `autobatch run`, `debug` and `sample` (ignored by the CPU backends).
struct DeviceOptions {
  // The engine's own options, so each default lives in VulkanOptions: --device, --validation,
  // --max-part-cost and --compile-threads write into it.
  VulkanOptions vulkan;
  // The schedule options as given; not given: the engine's default, or the command's own (a run
  // with --trace-steps and the debugger choose the global schedule, the debugger the subgroup
  // scope, `sample --backend auto` Vulkan only when a Vulkan option is given).
  std::optional<Schedule> schedule;
  std::optional<GlobalMode> global_mode;
  std::optional<LocalScope> local_scope;
  bool progress = false;  // print a progress line on stderr for runs longer than a second
  // --devices: `all` or device indices ("0,1"); the lanes are cut into one shard per device
  // (tools/shards.h). Empty: one device (--device).
  std::string devices;
};

// Whether a Vulkan option was given: a schedule option, or an engine option off its default.
bool vulkan_option_given(const DeviceOptions& device);

// A statistic only some backends have: its JSON key, its value and its table text.
struct ExtraStat {
  std::string key;
  nlohmann::ordered_json value;
  std::string text;
};

struct BackendRun {
  RunResult result;
  std::vector<std::string> block_names;  // the lowered blocks, for backends with a step trace
  std::vector<ExtraStat> extra_stats;
};

// Each backend runs a Module through the public API (Module::run_cpu, VulkanProgram::compile and
// VulkanRun); the step trace's block names are the Module's blocks().
struct Backend {
  std::string_view name;
  std::string_view description;
  bool has_step_trace = false;  // honours RunOptions::record_trace
  // An Error: the run could not happen (no device, a bad option, ...).
  Expected<BackendRun> (*run)(const std::shared_ptr<const Module>& module, const Batch& batch,
                              const RunOptions& options, const DeviceOptions& device) = nullptr;
};

// Progress lines on stderr: redrawn in place on a terminal (every call is due); written to a file
// or a pipe, a whole line at most every 10 s, so a log is not flooded. `last_shown` is the
// caller's: the elapsed seconds of the line last shown.
bool stderr_is_terminal();
bool progress_due(double elapsed, double& last_shown);
const char* progress_start();  // "\r" on a terminal, "" otherwise
const char* progress_end();    // "" on a terminal, "\n" otherwise

// The seconds the run itself took: RunStats::wall_seconds less any kernel compilation (Vulkan
// compiles a program's kernels at its first run: that is compile time, reported apart).
double run_seconds(const BackendRun& run);

const std::vector<Backend>& backends();
const Backend* find_backend(std::string_view name);
std::string_view default_backend();

// The engine's options: device.vulkan with the schedule options given.
VulkanOptions vulkan_options(const DeviceOptions& device);

// `autobatch devices`: lists the Vulkan devices; returns the exit code.
int list_devices_command(bool validation);

}  // namespace ab::cli
