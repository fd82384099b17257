// The debugger's entry points for the CLI (tools/debug_command.cpp):
//
//   autobatch debug FILE.ab [run options] [--script cmds.txt]   run_debugger({.target = ...})
//   autobatch debug TRACE.abtrace [--source FILE.ab] [--script]  run_debugger({.trace_path = ...})
//
// Without a script the window opens (an error if there is no display). With a script, the
// commands run headless unless one of them needs the window (`screenshot`).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "autobatch/engine.h"
#include "autobatch/expected.h"
#include "autobatch/module.h"
#include "debugger/model.h"
#include "debugger/trace_source.h"

namespace ab::debugger {

// A program ready to run: what `autobatch run` has after parsing its arguments.
struct DebugTarget {
  std::string path;  // the .ab file
  // The checked program and its entry (Module::load or Module::compile).
  std::shared_ptr<const Module> module;
  const Batch* batch = nullptr;
  RunOptions options;
  // Set: debug a live run on the Vulkan engine with these options; unset: on the CPU VM.
  std::optional<VulkanOptions> vulkan;
};

struct DebuggerOptions {
  std::optional<DebugTarget> target;  // debug a live run of this program, or
  std::string trace_path;             // replay this trace
  std::string source_path;  // with trace_path: the program (default: the path stored in the trace)
  std::string script_path;  // run these commands (see script.h)
  bool force_window = false;           // open the window even for a script with no screenshot
  uint64_t checkpoint_interval = 256;  // timeline checkpoints, in steps
  int width = 1600, height = 1000;     // window size
};

// Runs the debugger; returns the exit code (0 ok, 1 error; messages go to stderr).
int run_debugger(const DebuggerOptions& options);

// Everything a debugging session owns: the program, its batch, the source and the model.
class Session {
 public:
  // A live Vulkan target runs on `context` when given (the window's device), else on a context
  // of its own.
  static Expected<std::unique_ptr<Session>> open(const DebuggerOptions& options,
                                                 std::shared_ptr<VulkanContext> context = nullptr);
  DebuggerModel& model() { return *model_; }
  // Saves steps [first, last) as a trace. The model's position is kept.
  Status save_trace(const std::string& path, uint64_t first, uint64_t last);
  const std::string& title() const { return title_; }

 private:
  Session() = default;
  std::shared_ptr<const Module> module_;  // the sources read its lowered program
  std::shared_ptr<const TraceFile> trace_;
  Batch batch_;
  RunOptions options_;
  std::string title_;
  std::unique_ptr<DebuggerModel> model_;
};

}  // namespace ab::debugger
