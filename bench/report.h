// A benchmark run's results as data (rows, compile times, device) and the three ways it is
// written out: a table for people, JSON for tools, a gnuplot chart.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "autobatch/expected.h"

namespace ab::bench {

struct BenchRow {
  std::string program, system;
  std::string inputs = "light";  // the input size: "light" or "heavy" (workloads.h)
  uint32_t lanes = 0;
  // "ok": outputs matched the interpreter; "FAILED": they did not (message says where);
  // "ERROR": the system could not run the batch (message says why).
  std::string status = "ok";
  std::string message;
  bool checked = false;  // outputs were compared with run_interp and matched
  int repeats = 0;       // timed runs after the warm-up
  double median_seconds = 0, min_seconds = 0;
  // The work done, from the interpreter's run of the same batch (the same on every system):
  // lane-calls = function calls + one entry call per lane; lane-steps = blocks run by all lanes.
  uint64_t lane_calls = 0, lane_steps = 0;
  double calls_per_second = 0, steps_per_second = 0;
  // Scheduler figures, where the system has them (not native).
  std::optional<uint64_t> steps;
  std::optional<double> utilization;
  std::optional<uint64_t> dispatches, submissions;  // Vulkan (glsl: dispatches only)
  std::optional<double> seconds_per_step;           // median wall / steps
  // Throughput relative to the native baseline and to the VM on the same program and batch
  // (> 1: faster). Absent where that baseline was not run or failed.
  std::optional<double> vs_native, vs_vm;
  // Engine (Vulkan) rows only: throughput relative to the glsl ceiling on the same program and
  // batch (1: as fast as the hand-written per-lane kernel; < 1: slower).
  std::optional<double> vs_glsl;
  // Engine rows: where a run's time went (medians over the timed runs, VulkanStats): creating
  // the run (allocation and uploads), the dispatches (the PC loop, submissions and waits), and
  // reading the results back.
  std::optional<double> upload_seconds, loop_seconds, readback_seconds;
};

struct CompileRow {
  std::string program;
  // VulkanProgram::compile plus every kernel variant the runs used; absent without engine rows.
  std::optional<double> seconds;
  std::optional<double> glsl_seconds;  // the ceiling kernel: glslang and its pipeline
};

struct BenchReport {
  bool quick = false;
  std::string device;              // Vulkan device name and driver; "" when Vulkan was not used
  std::string vulkan_note;         // why Vulkan systems were skipped, if they were
  std::vector<std::string> notes;  // e.g. a system that could not be set up
  unsigned cpu_threads = 0;
  std::vector<uint32_t> batches;        // light rows' batch sizes
  std::vector<uint32_t> heavy_batches;  // heavy rows' batch sizes
  std::vector<std::string> inputs;      // the input sizes run: "light", "heavy"
  std::vector<std::string> systems;
  std::vector<BenchRow> rows;
  std::vector<CompileRow> compiles;

  bool all_ok() const;
};

std::string format_table(const BenchReport& report);
nlohmann::json to_json(const BenchReport& report);
// Draws lane-calls/s (lane-steps/s for collatz, which makes almost no calls) against batch size,
// log-log, one panel per program, one line per system, with gnuplot into a PNG. An Error says
// why it could not (gnuplot missing, gnuplot failed).
Status write_chart(const BenchReport& report, const std::string& png_path);

}  // namespace ab::bench
