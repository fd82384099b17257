// Builds one function's Figure 2 IR from its syntax tree: type-checks every statement and
// expression (reporting errors with their source locations) and lowers structured control flow
// (if, while, for, break, continue, return, short-circuit && and ||) to basic blocks.
//
// The IR follows the conventions in ir/ir.h and the front end's brief: params first, then
// `result`, then named locals and temporaries t0, t1, ...; unreachable blocks removed.
#pragma once

#include "ir/diagnostics.h"
#include "ir/ir.h"
#include "lang/ast.h"
#include "lang/globals.h"

namespace ab::frontend {

// Builds program.functions[index] from `decl`. Needs Globals::declare() to have run.
void build_function(Globals& globals, const ast::FnDecl& decl, int index, Program& program,
                    Diagnostics& diags);

}  // namespace ab::frontend
