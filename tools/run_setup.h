// What `autobatch run` and `autobatch debug` both do before running anything: load the program,
// find the entry function, build the batch from --input / --uniform / --batch and check it, and
// turn the command's options into RunOptions. One place, so both commands accept exactly the same
// program and batch options with the same messages.
#pragma once

#include <memory>
#include <string>

#include "autobatch/expected.h"
#include "autobatch/module.h"
#include "tools/commands.h"

namespace ab::cli {

struct RunSetup {
  // The checked program with its entry: the backends and the debugger run it, and the tool's
  // own option parsing reads its interface (Module::functions(), uniforms()).
  std::shared_ptr<const Module> module;
  Batch batch;
  RunOptions options;  // command.options with the heuristic applied
};

Expected<RunSetup> set_up_run(const RunCommand& command);

}  // namespace ab::cli
