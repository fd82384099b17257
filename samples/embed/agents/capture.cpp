// The bridge from the app to the debugger. The public API has no call that writes a trace, so this
// one file (and only this file) uses in-tree headers: debugger/debugger.h for record_trace_file
// (the same writer as `autobatch run --trace`) and the front end of ir/, which the debugger's
// DebugTarget takes its program from: the source is compiled again here, as the Module compiled
// it, since the engine's internals are not reachable from outside the engine. It links
// autobatch_debugger. Everything else in the sample uses <autobatch/...> only.
#include "capture.h"

#include "debugger/debugger.h"
#include "ir/frontend/frontend.h"

std::string write_capture(const ab::Module& module, const std::string& source_path,
                          const std::string& source_text, const ab::Batch& batch,
                          const ab::RunOptions& options, const std::string& out_path) {
  ab::Diagnostics diags(module.file(), source_text);
  std::optional<ab::Program> program = ab::compile_source(source_text, module.file(), diags);
  if (!program) return diags.format();
  const int entry = program->find_function(module.entry());
  if (entry < 0) return "no function '" + module.entry() + "'";
  ab::debugger::DebugTarget target;
  target.path = source_path;
  target.source_text = source_text;
  target.program = &*program;
  target.entry = entry;
  target.batch = &batch;
  target.options = options;  // no `vulkan`: recorded on the CPU VM, as `run --trace` does
  ab::Status written = ab::debugger::record_trace_file(target, out_path);
  return written ? std::string() : written.error();
}
