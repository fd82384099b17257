// Traces: a batch's run recorded as an .abtrace file, which `autobatch debug FILE.abtrace` opens
// and replays step by step on the CPU with no GPU (docs/debugger.md). An app writes one to take a
// batch it saw, say one frame's agents, to the debugger.
//
// What a trace holds is the CPU VM's run of the batch (Module::run_cpu with CpuBackend::Vm): the
// block each scheduler step ran and the lanes that ran it, with the VM's whole state every
// checkpoint_interval steps. The VM's steps are the ones the global schedule reproduces exactly;
// a local-schedule run on the device reaches the same results by other steps. The file names the
// module's file (Module::file()) and holds a hash of its source text: the debugger reads the
// program from that path and refuses a trace whose source has changed since.
#pragma once

#include <cstdint>
#include <string>

#include "autobatch/batch.h"
#include "autobatch/expected.h"
#include "autobatch/module.h"

namespace ab {

// The steps a trace records: [first, last), ending earlier when the run does.
struct TraceOptions {
  uint64_t first = 0;
  uint64_t last = UINT64_MAX;  // exclusive
  // Steps between two saved VM states: more states make a replay's seeks faster and the file
  // larger.
  uint64_t checkpoint_interval = 1024;
};

// Runs `batch` on the CPU VM and writes the trace of its steps to `path` (replacing the file).
// Fails, saying why, for a batch that does not fit the module (Module::check), an empty range, a
// range that starts after the run has ended, or a file that cannot be written.
Status write_trace(const std::string& path, const Module& module, const Batch& batch,
                   const RunOptions& options = {}, const TraceOptions& trace = {});

}  // namespace ab
