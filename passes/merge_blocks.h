// Pass: merge_blocks (Figure 2 -> Figure 2).
// Requires: a verified program. Where a block B ends in `jump C` and C (not a function's entry)
// has no other predecessor, C's ops are appended to B and B ends as C did; C is dropped. Runs to
// a fixed point, so a chain of such blocks becomes one.
// Why: every block is a step of the program-counter scheduler (pick a block, gather its lanes,
// move their program counters); straight-line code split over several blocks pays that for
// nothing. Preserves: every lane's ops and their order, so values, draws and faults are
// unchanged; block ids are renumbered (in their old order) and steps per lane fall.
#pragma once

#include "ir/ir.h"

namespace ab {

// Returns the number of blocks merged into their predecessor.
int merge_blocks(Program& program);

// The same for one function (a block that jumps to a block other than the entry with no other
// predecessor absorbs it), dropping the absorbed blocks: the derived function's forward
// and reverse sweeps of straight-line code become one block (one scheduler step), and so does a
// reverse loop's latch and body (passes/differentiate.cpp).
void merge_straight_chains(Function& fn);

}  // namespace ab
