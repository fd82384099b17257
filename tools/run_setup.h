// What `autobatch run` and `autobatch debug` both do before running anything: load the program,
// find the entry function, build the batch from --input / --uniform / --batch and check it, and
// turn the command's options into RunOptions. One place, so both commands accept exactly the same
// program and batch options with the same messages.
#pragma once

#include <memory>
#include <string>

#include "autobatch/expected.h"
#include "autobatch/module.h"
#include "engine/module_impl.h"
#include "ir/ir.h"
#include "ir/run.h"
#include "tools/commands.h"

namespace ab::cli {

struct RunSetup {
  std::string source_text;  // the program's text, as read
  // The checked program with its entry, which the backends and the debugger run through the
  // public API; its inside (program(), entry()) is what the tool's own option parsing reads.
  std::shared_ptr<const Module> module;
  const Program& program() const { return module->impl().program; }
  int entry() const { return module->impl().entry; }
  Batch batch;
  RunOptions options;  // command.options with the heuristic applied
};

Expected<RunSetup> set_up_run(const RunCommand& command);

}  // namespace ab::cli
