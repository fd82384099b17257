// Pass: split_at_calls (Figure 2 -> Figure 2).
// Requires: a verified program. Ensures: every Call is the last op of its block, whose terminator
// is a Jump to a fresh continuation block (one predecessor, loc = the call's loc) holding the ops
// that followed the call; except a tail call (passes/analysis/tail_calls.h), already last in a
// block that Returns, which has nothing to continue with and stays as it is. Preserves: semantics,
// function/var/uniform indices, existing block ids.
// Why: in the program-counter form a call ends a block (PushJump) and its return lands on a block.
#pragma once

#include "ir/ir.h"

namespace ab {

Program split_at_calls(const Program& program);

// True if block `b` of `fn` ends in a call (as split_at_calls leaves it), not a tail call.
bool ends_in_call(const Function& fn, int b);
// True if block `b` of `fn` ends in a tail call (a Call, then Return).
bool ends_in_tail_call(const Function& fn, int b);

}  // namespace ab
