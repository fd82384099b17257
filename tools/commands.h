// The bodies of the `autobatch` subcommands, separate from argument parsing (main.cpp).
// Each returns the process exit code: 0 success, 1 bad program or input (the message is
// already printed to stderr), 2 bad usage.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "autobatch/batch.h"
#include "autobatch/expected.h"
#include "tools/backends.h"

namespace ab::cli {

// `explain`: also each loop of the source, vectorised or why not, then each call, inlined or
// why not (--explain). `data_files` (--data): the JSON data that give the program's
// `const N: int = data;` their values.
int check_command(const std::string& file, bool explain = false,
                  const std::vector<std::string>& data_files = {});

struct IrCommand {
  std::string file;
  std::string entry = "main";
  bool entry_given = false;  // --entry was given: it must name a function, lowered or not
  bool lowered = false;
};
int ir_command(const IrCommand& command);

struct RunCommand {
  std::string file;
  std::string backend;
  std::string entry = "main";
  std::optional<uint32_t> batch;
  std::vector<std::string> inputs;
  std::vector<std::string> uniforms;
  std::vector<std::string> data_files;  // --data FILE.json: uniforms by name
  RunOptions options;
  std::string heuristic = "min-pc";
  std::string format = "table";
  std::string out_dir;
  std::string trace_out;  // --trace: also record the run (on the VM) to this .abtrace file
  DeviceOptions device;
};
int run_command(const RunCommand& command);

// `autobatch debug`: the program and batch options of `run`, plus the debugger's own.
struct DebugCommand {
  RunCommand run;       // run.file is a .ab program or an .abtrace trace
  std::string script;   // --script: run these commands (headless unless they need the window)
  std::string source;   // --source: with a trace, the program it was recorded from
  bool window = false;  // --window: open the window even for a script
  uint64_t checkpoint_interval = 256;
  bool run_options_given = false;  // any batch option was given (an error with a trace)
};
int debug_command(const DebugCommand& command);

// Prints "error: <message>" (or a formatted message as it is) to stderr; returns 1.
int report_error(const Error& error);

}  // namespace ab::cli
