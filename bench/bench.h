// The benchmark suite (`autobatch bench`): runs the sample programs fib, ackermann, collatz, tak,
// nuts_tree and raytrace with divergent per-lane inputs at several batch sizes on every system in
// ONE run — the CPU VM, each Vulkan schedule, and two hand-written baselines: native C++ (the CPU's
// ceiling) and per-lane GLSL kernels (the device's ceiling) — and prints, per row, the median wall
// time, throughput, steps, utilization, dispatch counts and ratios to the baselines. Every row's
// outputs are checked against the interpreter before they are reported; a mismatch marks the row
// FAILED and makes run_bench return 1.
//
// Entry points: run_bench() for the CLI (add_bench_options() declares its flags on a CLI11
// subcommand), run_suite() and the report functions (report.h) for tests and other tools.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "autobatch/batch.h"

namespace CLI {
class App;
}

namespace ab::bench {

struct BenchOptions {
  bool quick = false;  // smaller light inputs, batches 1, 64, 1024
  // "light", "heavy" or "both" (workloads.h, InputSize); "": both, or light with `quick`. Heavy
  // rows run at batches 1024 and 16384 (1024 with `quick`) unless `batches` is given.
  std::string inputs;
  std::vector<std::string> programs;  // empty: all (workloads.h names them)
  std::vector<uint32_t> batches;      // empty: 1, 64, 1024, 16384 (+131072 on a GPU)
  std::vector<std::string> systems;   // empty: all available (system names: systems.h)
  int repeats = 0;                    // timed runs after the warm-up; 0: 3 (quick) or 5
  // A row stops repeating once its timed runs add up to this many seconds (at least one run),
  // so the slowest systems at the largest batches do not dominate the suite. 0: 1 s quick, 4 s.
  // A warm-up that alone takes longer is the row's only measurement (reported as 0 repeats).
  double repeat_budget_seconds = 0;
  std::string json_path;   // write the report as JSON here ("" = none)
  std::string chart_path;  // draw throughput vs batch size here with gnuplot ("" = none)
  int device = -1;         // Vulkan device index (list_devices order); -1: the engine's choice
  uint32_t threads = 0;    // the vm's threads in the NUTS rows (RunOptions::threads); 0: per core
  // Transitions per chain in the NUTS rows (Figure 6), every system alike, Stan included; 0: the
  // rows' own (2 on the regression, 10 on the Gaussian; 1 and 10 with `quick`).
  uint32_t transitions = 0;
  bool print_table = true;  // print the table (and progress) to stdout

  // Test hook: called on every result before it is checked, with the system's name. Lets a test
  // corrupt one system's outputs and prove that the check catches it. Empty in normal use.
  std::function<void(const std::string& system, RunResult& result)> tamper_for_test;
};

// Declares --quick, --inputs, --programs, --batches, --systems, --repeats, --repeat-budget, --json,
// --chart, --device, --threads and --transitions on `app` (the `bench` subcommand), writing into
// `options`.
void add_bench_options(CLI::App& app, BenchOptions& options);

// Runs the suite, prints the table, writes JSON and chart when asked. Returns 0 when every row
// matched the interpreter, 1 when a row FAILED or errored, 2 on bad options (unknown program or
// system, empty batch size, an --inputs other than light, heavy or both); messages go to stderr.
int run_bench(const BenchOptions& options);

}  // namespace ab::bench
