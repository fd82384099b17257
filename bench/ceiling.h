// The device's ceiling (`glsl` system): each benchmark program written by hand as a GLSL compute
// kernel (bench/ceiling/<program>.glsl) in which one invocation runs one lane's whole program
// with a private explicit stack — no batching machinery, no scheduler. It is what the device can
// do for that program when every lane runs on its own, and each Vulkan engine row reports its
// ratio to it. Kernels run through the engine's public ComputeKernel (autobatch/compute.h).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "autobatch/compute.h"
#include "ir/run.h"

namespace ab::bench {

// Loop iterations one lane may take in one dispatch: below lavapipe's silent 65,535-per-loop
// cap. A lane that needs more reports it (the row errors) instead of returning a wrong result.
constexpr uint32_t kCeilingMaxIterations = 60000;

// Compiles the ceiling kernel of `program` (a workload name; `parameters` = its main's parameter
// count) with `stack_depth` frames per lane.
Expected<std::shared_ptr<ComputeKernel>> compile_ceiling(std::shared_ptr<VulkanContext> context,
                                                         const std::string& program,
                                                         uint32_t parameters, uint32_t stack_depth);

// Runs every lane of `batch` on `kernel` (one dispatch: uploads, run, readback) and returns the
// outputs in RunResult form (no faults, no step counts). A lane that overflowed its stack, hit
// the iteration bound or never finished makes it an error naming the first such lane.
// `stack_depth` is the one the kernel was compiled with (for the message).
Expected<RunResult> run_ceiling(ComputeKernel& kernel, const Batch& batch, uint32_t out_words,
                                uint64_t seed, uint32_t stack_depth);

}  // namespace ab::bench
