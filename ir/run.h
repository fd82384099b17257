// The batch and result types every backend shares (public: autobatch/batch.h) and the helpers
// the backends use on them.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "autobatch/batch.h"
#include "autobatch/expected.h"
#include "ir/exec.h"
#include "ir/ir.h"
#include "shaders/ab_layout.h"

namespace ab {

// The step budget: whether a lane that has run `steps` blocks may run another (the rule of
// AB_STEP_ALLOWED, which the generated kernels apply too). Checked before every block; a lane
// out of budget faults with Fault::StepBudget at the block it waits at.
inline bool step_allowed(uint64_t steps, uint64_t max_steps) {
  return AB_STEP_ALLOWED(steps, max_steps);
}

// `Heuristic` is public (autobatch/batch.h); its values are the GPU's heuristic ids
// (AB_HEURISTIC_* of shaders/ab_layout.h, pushed to the kernels as P.heuristic).
static_assert(static_cast<uint32_t>(Heuristic::MinPc) == AB_HEURISTIC_MIN_PC &&
                  static_cast<uint32_t>(Heuristic::MostLanes) == AB_HEURISTIC_MOST_LANES,
              "autobatch/batch.h's Heuristic and shaders/ab_layout.h's AB_HEURISTIC_* differ");

// Hands `words` (whole records of `record_words` words that `lane` emitted) to options.on_emit,
// or appends them to result.emitted[lane]; then clears `words`.
void deliver_emitted(const RunOptions& options, uint32_t record_words, uint32_t lane,
                     std::vector<uint32_t>& words, RunResult& result);

// Checks the batch against the entry function's signature and the program's uniforms: an error
// names the first input or uniform that does not fit.
Status check_batch(const Program& program, int entry, const Batch& batch);

// The run options every backend refuses, with the same message on each.
Status check_run_options(const RunOptions& options);

// Host memory for a CPU run. `bytes_per_lane` is what a backend allocates per lane before its
// first step (vm_bytes_per_lane, interp_bytes_per_lane); stacks grow beyond it as lanes recurse.
// check_host_memory is Ok when `lanes` of them fit the memory the process may still allocate
// (what the system has available, less under an address-space limit, RLIMIT_AS), else why not,
// naming the size; out_of_host_memory is the message for an allocation that failed anyway.
Status check_host_memory(uint64_t bytes_per_lane, uint32_t lanes);
std::string out_of_host_memory(uint64_t bytes_per_lane, uint32_t lanes);

}  // namespace ab
