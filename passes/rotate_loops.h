// Pass: rotate_loops (Figure 2 -> Figure 2).
// Requires: a verified program. Copies a small test block H (at most kMaxTestOps ops, no Call,
// ending in a Branch, not a function's entry) into the end of every block that ends in `jump H`,
// which then branches as H did; H, left without predecessors, is dropped. For a loop this is
// loop rotation: the header's test runs at the end of the preheader and of the latch, so an
// iteration no longer costs a step of its own for the test (with merge_blocks after it, a `for`
// loop's body, increment and test become one block: one scheduler step per iteration instead of
// three). Preserves: every lane's ops and their order on every path (each path runs exactly one
// copy of H's ops), so values, draws and faults are unchanged; block ids are renumbered (in their
// old order) and steps per lane fall.
#pragma once

#include "ir/ir.h"

namespace ab {

constexpr size_t kMaxTestOps = 4;

// Returns the number of jumps replaced by a copy of their target.
int rotate_loops(Program& program);

}  // namespace ab
