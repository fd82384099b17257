// The bridge from the app to the debugger. The public API has no call that writes a trace, so this
// one file (and only this file) uses in-tree headers: debugger/debugger.h for
// record_trace_file (the same writer as `autobatch run --trace`) and engine/src/module_impl.h for
// the checked Program a Module holds (DebugTarget takes the ir/ Program and its entry). It links
// autobatch_debugger. Everything else in the sample uses <autobatch/...> only.
#include "capture.h"

#include "debugger/debugger.h"
#include "engine/src/module_impl.h"

std::string write_capture(const ab::Module& module, const std::string& source_path,
                          const std::string& source_text, const ab::Batch& batch,
                          const ab::RunOptions& options, const std::string& out_path) {
  const ab::Module::Impl& impl = module.impl();
  ab::debugger::DebugTarget target;
  target.path = source_path;
  target.source_text = source_text;
  target.program = &impl.program;
  target.entry = impl.entry;
  target.batch = &batch;
  target.options = options;  // no `vulkan`: recorded on the CPU VM, as `run --trace` does
  ab::Status written = ab::debugger::record_trace_file(target, out_path);
  return written ? std::string() : written.error();
}
