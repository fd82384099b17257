// Purity for differentiation (passes/differentiate.cpp checks it before deriving).
#pragma once

#include "ir/diagnostics.h"
#include "ir/ir.h"

namespace ab {

// Random draws and emits anywhere f can reach make its value something else than a function of
// its arguments: reported at their lines. Code without lines of its own (the random draws'
// library, lang/distributions.h) is reported once, at the call that reached it.
// `first`: the index of the first derived function (calling one would be a second derivative).
bool check_pure(const Program& p, int f, int first, Diagnostics& diags);

}  // namespace ab
