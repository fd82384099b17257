// The front end: .ab source text -> typed Figure 2 IR (ir/ir.h).
//
// Lexes, parses, type-checks and lowers structured control flow (if/while/for/break/continue,
// short-circuit && and ||) to basic blocks. Reports every syntax and type error it can find as
// a Diagnostic with a precise line:col; never throws or crashes on any input.
#pragma once

#include <optional>
#include <string>

#include "ir/diagnostics.h"
#include "ir/ir.h"

namespace ab {

// Compiles `source` (named `file` in messages). Returns the program, or nullopt with the errors
// in `diags`. The returned program passes verify().
std::optional<Program> compile_source(const std::string& source, const std::string& file,
                                      Diagnostics& diags);

}  // namespace ab
