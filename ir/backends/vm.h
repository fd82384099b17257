// The batched CPU VM: Radul et al. Algorithm 2 over the lowered (Figure 4) program. Each step
// picks one block (Heuristic), runs it for every lane waiting there, and advances their program
// counters; per-variable stacks and the PC stack are explicit per lane. Its step trace is the
// reference the GPU's global schedule must reproduce exactly.
#pragma once

#include "ir/run.h"

namespace ab {

RunResult run_vm(const LoweredProgram& program, const Batch& batch, const RunOptions& options);

}  // namespace ab
