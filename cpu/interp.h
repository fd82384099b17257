// The reference interpreter: runs each lane on its own over the Figure 2 IR with ordinary call
// semantics (an explicit frame stack, so deep recursion cannot overflow the host's stack). It is
// the oracle every other backend and schedule is compared with.
#pragma once

#include "ir/run.h"

namespace ab {

// Runs `entry` for every lane of `batch` (which must pass check_batch).
RunResult run_interp(const Program& program, int entry, const Batch& batch,
                     const RunOptions& options);

// Host memory run_interp allocates per lane of the batch (the result: the output, the fault
// flag, the emitted records' list); a lane's own frames come and go as it runs.
uint64_t interp_bytes_per_lane(const Program& program, int entry, const RunOptions& options);

}  // namespace ab
