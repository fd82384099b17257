// The public trace writer (autobatch/trace.h): the module's VM run recorded by the one recorder
// (ir/trace/vm_trace.h) and written by the one writer of the .abtrace format
// (ir/trace/trace_file.h) that `autobatch run --trace` and the debugger use.
#include "autobatch/trace.h"

#include "engine/module_impl.h"
#include "ir/trace/trace_file.h"
#include "ir/trace/vm_trace.h"

namespace ab {

Status write_trace(const std::string& path, const Module& module, const Batch& batch,
                   const RunOptions& options, const TraceOptions& range) {
  if (Status fits = module.check(batch); !fits) return fits;
  const Module::Impl& m = module.impl();
  auto trace = record_vm_trace(m.lowered, batch, options, range, m.program.file, m.source_text);
  if (!trace) return Error{trace.error()};
  return write_trace(path, *trace);
}

}  // namespace ab
