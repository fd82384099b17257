// The textual form of the Figure 2 IR, printed and parsed back: parse_ir(print_ir(p)) prints
// identically to p. Also prints the lowered (Figure 4) form, which is not parsed.
#pragma once

#include <optional>
#include <string>

#include "ir/diagnostics.h"
#include "ir/ir.h"

namespace ab {

std::string print_ir(const Program& program);
std::string print_lowered(const LoweredProgram& lowered);

// Parses the output of print_ir. Errors go to `diags` with line:col in the IR text.
std::optional<Program> parse_ir(const std::string& text, const std::string& file,
                                Diagnostics& diags);

}  // namespace ab
