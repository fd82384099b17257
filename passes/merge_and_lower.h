// Pass: merge_and_lower (split Figure 2 -> Figure 4; Radul et al. §3, Figure 4).
// Requires: split_at_calls has run; `plan` from classify_storage. Merges the blocks and variables
// of every function reachable from `entry` into one CFG and replaces each call with the
// caller-saves sequence: Push the saved variables, copy the arguments into the callee's params
// (through temporaries for a self-call, so `f(b, a)` cannot clobber itself), PushJump(callee entry,
// continuation). The continuation starts by copying the callee's result into the destination and
// Popping the saved variables in reverse order. Return pops the PC stack. A tail call copies the
// arguments (through temporaries for a self-call: a parallel assignment) and ends in TailJump to
// the callee's entry, saving nothing; functions joined by tail calls share one result variable,
// so whichever of them returns leaves the value where the original caller's continuation reads it.
// Ensures: block i of the result is a block of the split program (same ops, same loc), so a lane
// runs the same number of blocks here as the interpreter counts steps.
#pragma once

#include "ir/ir.h"
#include "passes/analysis/classify_storage.h"

namespace ab {

LoweredProgram merge_and_lower(const Program& split, const StoragePlan& plan, int entry,
                               const Program* source);

}  // namespace ab
