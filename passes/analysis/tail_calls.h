// Tail calls (docs/language.md, "Tail calls"): a call whose value is returned directly, as in
// `return f(x);`, reuses the caller's frame. The one definition, shared by the interpreter (which
// replaces the frame) and the lowering (which emits assignments and a TailJump).
#pragma once

#include <cstddef>

#include "ir/ir.h"

namespace ab {

// True when op `index` of block `b` in `fn` is a Call in tail position: the block's last op,
// followed by a Return of exactly the call's value (the call writes `fn.result`, or neither
// returns anything).
bool is_tail_call(const Program& program, const Function& fn, const Block& b, size_t index);

}  // namespace ab
