// autobatch: run a program written for one example for thousands of examples at once on any
// Vulkan device (program-counter autobatching, Radul et al. 2020). The whole public API:
//
//   module.h   Module: .ab source compiled, checked and lowered; runs on the CPU too; describes
//              its interface, functions and lowered blocks (their IR text)
//   value_type.h  ValueType: the type of an input, output, uniform or record, as a tree
//   context.h  VulkanContext: the engine's own device, or the host's (create_external)
//   engine.h   VulkanProgram (a Module on a device), VulkanRun (one batch: run it, or record it
//              into the host's command buffers; its buffers on the device)
//   compute.h  ComputeKernel: a custom GLSL kernel on the same context
//   trace.h    write_trace: a batch's run as an .abtrace that `autobatch debug` opens
//   sampler.h  sample::Model, sample::run: batched NUTS on a model, its summary and CmdStan's CSV
//   batch.h    Batch, RunOptions, RunResult, ...: the values every backend takes and gives
//   expected.h Expected<T> / Status: errors as values; nothing throws across the API
//   user_input.h  read_regular_file, excerpt: reading and quoting what a user gave, as the tools do
//
// docs/embedding.md shows them in the order an app uses them, with the threading rules.
#pragma once

#include "autobatch/batch.h"
#include "autobatch/compute.h"
#include "autobatch/context.h"
#include "autobatch/engine.h"
#include "autobatch/expected.h"
#include "autobatch/module.h"
#include "autobatch/sampler.h"
#include "autobatch/trace.h"
#include "autobatch/user_input.h"
#include "autobatch/value_type.h"

namespace ab {

// "0.1": the library's version (the CMake package's).
const char* version();

}  // namespace ab
