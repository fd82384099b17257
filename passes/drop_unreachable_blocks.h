// Pass: drop_unreachable_blocks (one function of Figure 2 -> the same).
// Requires: a function whose terminators' targets are its block ids. Drops the blocks that cannot
// be reached from the entry (block 0), keeps the others in their order and renumbers the
// terminators' targets. rotate_loops and merge_blocks run it on the functions they changed.
#pragma once

#include "ir/ir.h"

namespace ab {

void drop_unreachable_blocks(Function& fn);

}  // namespace ab
