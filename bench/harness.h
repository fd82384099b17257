// Runs the benchmark matrix (programs x batch sizes x systems) into a BenchReport: one warm-up
// and up to `repeats` timed runs per row, every run's outputs checked against run_interp.
#pragma once

#include <string>
#include <vector>

#include "autobatch/expected.h"

#include "bench/bench.h"
#include "bench/report.h"

namespace ab::bench {

// Heavy inputs above this many lanes leave out global-masked and local-workgroup unless
// --systems names them (each such row would take minutes on lavapipe).
constexpr uint32_t kHeavyFullLanes = 1024;

// Fills `report`, or says why the options are unusable (unknown program or system, batch size 0).
// Rows that fail or error are recorded in the report, not returned.
Status run_suite(const BenchOptions& options, BenchReport& report);

// The median of `xs` (the mean of the middle two for an even count); `xs` must not be empty.
double median(std::vector<double> xs);

// The bench's float tolerance for Vulkan rows: equal within 1e-4 relative (absolute below 1).
bool within_float_tolerance(float x, float y);

// Compares a system's result with the interpreter's: fault flags and integer words exactly;
// float words exactly too unless `float_tolerance` (Vulkan: transcendental functions may differ
// by a few ulps between devices), then within 1e-4 relative. An Error names the first
// difference ("lane 17 word 0: expected 89, got 90").
Status compare_with_reference(const RunResult& expected, const RunResult& actual,
                              uint32_t words_per_lane, bool float_words, bool float_tolerance);

}  // namespace ab::bench
