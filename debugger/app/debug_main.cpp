// autobatch-debug: a stand-alone driver for the debugger, until `autobatch debug` and
// `autobatch run --trace` wire the same calls into the main CLI. It shows what the CLI calls:
// build a DebugTarget (program, entry, batch, run options) and pass it to run_debugger or
// record_trace_file.
//   autobatch-debug FILE.ab [--input NAME=SPEC]... [--batch N] [--script cmds.txt] [--trace
//   out.abtrace] autobatch-debug TRACE.abtrace [--source FILE.ab] [--script cmds.txt]
#include <CLI/CLI.hpp>

#include <fstream>
#include <iostream>
#include <sstream>

#include "debugger/debugger.h"
#include "tools/inputs.h"
#include "tools/program_loader.h"
#include "tools/uniforms.h"

int main(int argc, char** argv) {
  CLI::App app{"autobatch-debug: the autobatch visual debugger"};
  std::string file, script, trace_out, source, entry = "main";
  std::vector<std::string> inputs, uniforms;
  std::optional<uint32_t> batch;
  ab::RunOptions options;
  uint64_t interval = 256;
  bool window = false;
  app.add_option("FILE", file, "a .ab program or a .abtrace trace")->required();
  app.add_option("--input,-i", inputs, "per-lane input NAME=SPEC (as autobatch run)");
  app.add_option("--uniform,-u", uniforms, "uniform NAME=SPEC (as autobatch run)");
  app.add_option("--batch", batch, "number of lanes");
  app.add_option("--entry", entry, "entry function");
  app.add_option("--seed", options.seed, "random seed");
  app.add_option("--stack-depth", options.stack_depth, "maximum call depth");
  app.add_option("--max-steps", options.max_steps, "step budget per lane");
  app.add_option("--script", script, "run these debugger commands");
  app.add_option("--trace", trace_out, "record a trace to this file instead of debugging");
  app.add_option("--source", source, "with a trace: the program it was recorded from");
  app.add_option("--checkpoint-interval", interval, "steps between timeline checkpoints");
  app.add_flag("--window", window, "open the window even for a script without screenshots");
  CLI11_PARSE(app, argc, argv);

  ab::debugger::DebuggerOptions o;
  o.script_path = script;
  o.force_window = window;
  o.checkpoint_interval = interval;
  if (file.ends_with(".abtrace")) {
    o.trace_path = file;
    o.source_path = source;
    return ab::debugger::run_debugger(o);
  }
  auto program = ab::cli::load_program(file);
  if (!program) {
    std::cerr << (program.failure().formatted ? "" : "error: ") << program.error() << "\n";
    return 1;
  }
  auto entry_index = ab::cli::find_entry(*program, entry);
  if (!entry_index) {
    std::cerr << "error: " << entry_index.error() << "\n";
    return 1;
  }
  auto columns = ab::cli::build_inputs(*program, *entry_index, {inputs, batch, options.seed});
  if (!columns) {
    std::cerr << "error: " << columns.error() << "\n";
    return 1;
  }
  auto bound = ab::cli::bind_uniforms(*program, uniforms);
  if (!bound) {
    std::cerr << "error: " << bound.error() << "\n";
    return 1;
  }
  ab::Batch b;
  b.lanes = columns->lanes;
  b.inputs = columns->columns;
  b.uniforms = *bound;
  std::ifstream in(file);
  std::ostringstream text;
  text << in.rdbuf();
  o.target = ab::debugger::DebugTarget{file, text.str(), &*program, *entry_index, &b, options};
  if (!trace_out.empty()) {
    const std::string e = ab::debugger::record_trace_file(*o.target, trace_out);
    if (!e.empty()) {
      std::cerr << "error: " << e << "\n";
      return 1;
    }
    return 0;
  }
  return ab::debugger::run_debugger(o);
}
