// Pass: pop_push_to_update (Figure 4 -> Figure 4; Radul et al. §3.2, optimization 5).
// Requires: a lowered program. Within a block, a `Pop v` followed later by `Push v` with no write
// to v in between restores v and then saves the same value again; replace the Pop by
// `Update v` (restore from the top without shrinking the stack) and drop the Push.
// Preserves: every lane's values and stack contents at block ends.
#pragma once

#include "ir/ir.h"

namespace ab {

// Returns the number of pairs replaced.
int pop_push_to_update(LoweredProgram& program);

}  // namespace ab
