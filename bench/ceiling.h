// The device's ceiling (`glsl` system): each benchmark program written by hand as a GLSL compute
// kernel (bench/ceiling/<program>.glsl) in which one invocation runs one lane's whole program
// with a private explicit stack — no batching machinery, no scheduler. It is what the device can
// do for that program when every lane runs on its own, and each Vulkan engine row reports its
// ratio to it. Kernels run through the engine's public ComputeKernel (autobatch/compute.h).
//
// Long lanes span several dispatches: lavapipe silently ends any shader loop after 65,535
// iterations, so a lane runs at most `max_iterations` loop iterations per dispatch, saves its
// stack and variables into a device-only buffer and sets a flag; the host dispatches again until
// no lane set it (ComputeKernel::run_repeated).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "autobatch/batch.h"
#include "autobatch/compute.h"

namespace ab::bench {

// Loop iterations one lane may take in one dispatch: below lavapipe's silent 65,535-per-loop
// cap.
constexpr uint32_t kCeilingMaxIterations = 60000;
// Dispatches one run may take before its unfinished lanes are reported (6e8 iterations a lane).
constexpr uint32_t kCeilingMaxDispatches = 10000;

struct CeilingKernel {
  std::shared_ptr<ComputeKernel> kernel;
  std::string program;
  uint32_t parameters = 0, stack_depth = 0, max_iterations = 0;
  uint32_t uniforms = 0;     // the program's uniforms, bound after its parameters
  uint32_t state_words = 0;  // saved words per lane between dispatches
};

// Compiles the ceiling kernel of `program` (a workload name; `parameters` = its main's parameter
// count) with `stack_depth` frames per lane and at most `max_iterations` loop iterations per lane
// per dispatch (tests lower it to force many dispatches).
Expected<CeilingKernel> compile_ceiling(std::shared_ptr<VulkanContext> context,
                                        const std::string& program, uint32_t parameters,
                                        uint32_t stack_depth,
                                        uint32_t max_iterations = kCeilingMaxIterations);

struct CeilingRun {
  RunResult result;  // outputs; no faults, no step counts
  uint32_t dispatches = 0;
};

// Runs every lane of `batch` on `kernel` (uploads its inputs and uniforms, as many dispatches as
// the slowest lane needs, readback) and returns the outputs in RunResult form. A lane that
// overflowed its stack, was still unfinished after `max_dispatches`, or never finished makes it an
// error naming the first such lane.
Expected<CeilingRun> run_ceiling(const CeilingKernel& kernel, const Batch& batch,
                                 uint32_t out_words, uint64_t seed,
                                 uint32_t max_dispatches = kCeilingMaxDispatches);

}  // namespace ab::bench
