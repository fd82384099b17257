// Recording a CPU VM run as a Trace (trace/trace_file.h, the .abtrace format): the batch runs
// from its start, and steps [range.first, range.last) are recorded, each with its block and the
// lanes that ran it, with a VM checkpoint every range.checkpoint_interval steps (the first at
// range.first), the VM stepping range.shard_lanes' shards apart when given. Behind the public
// write_trace (autobatch/trace.h) and `autobatch run --trace`; the debugger records a session's
// timeline into the same Trace (debugger/trace_source.h).
#pragma once

#include <string>

#include "autobatch/expected.h"
#include "autobatch/trace.h"
#include "ir/ir.h"
#include "trace/trace_file.h"

namespace ab {

// `batch` must pass check_batch. `source_path` and `source_text` are the program's file and its
// text (the trace's header names the one and hashes the other).
Expected<Trace> record_vm_trace(const LoweredProgram& program, const Batch& batch,
                                const RunOptions& options, const TraceOptions& range,
                                const std::string& source_path, const std::string& source_text);

}  // namespace ab
