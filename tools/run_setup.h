// What `autobatch run` and `autobatch debug` both do before running anything: load the program,
// find the entry function, build the batch from --input / --uniform / --batch and check it, and
// turn the command's options into RunOptions. One place, so both commands accept exactly the same
// program and batch options with the same messages.
#pragma once

#include <string>

#include "autobatch/expected.h"
#include "ir/ir.h"
#include "ir/run.h"
#include "tools/commands.h"

namespace ab::cli {

struct RunSetup {
  std::string source_text;  // the program's text, as read
  Program program;
  int entry = -1;
  Batch batch;
  RunOptions options;  // command.options with the heuristic applied
};

Expected<RunSetup> set_up_run(const RunCommand& command);

}  // namespace ab::cli
