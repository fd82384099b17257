// The textual form of the IR. The Figure 2 IR is printed and parsed back: parse_ir(print_ir(p))
// prints identically to p (printer: text_print.cpp, parser: text_parse.cpp). The lowered (Figure 4)
// form is printed, not parsed.
//
// Grammar of the Figure 2 text (one item per line, indentation is only for the reader, `#` starts
// a comment):
//
//   program "file"
//   struct NAME { field: TYPE, ... }        type table entries, in type-id order, so that the
//   type TYPE                                 parser re-interns every type with the same id
//   uniform NAME: TYPE  @L:C
//   fn NAME(param: TYPE, ...) [-> result: TYPE]  @L:C
//     var NAME: TYPE                         every variable, in id order
//     bN:  @L:C                              blocks, numbered in order
//       [dst =] OPNAME operands  @L:C
//       jump bN | branch c, bT, bF | return | pushjump bT, bR   @L:C
//
// A variable, function or uniform is referred to by its name when the name is a valid identifier
// and unique in its scope, otherwise as `%N` (its index). Names that are not identifiers are
// declared as quoted strings. Const values are spelled per the destination's scalar kind (floats
// with the shortest decimal that reads back to the same bits; raw `0x` words where no decimal
// exists), and `const words [..]` holds raw words for anything else. Access paths are
// `[step, ...]` where a static step is its word offset and a dynamic step is `index*stride<count`.
// `@L:C` (a source location) is omitted when unknown (0:0).
//
// print_ir output parses back for every program whose indices (variables, blocks, functions,
// uniforms, types) are in range; operand counts and typing may be wrong, which is verify's job.
#pragma once

#include <optional>
#include <string>

#include "ir/diagnostics.h"
#include "ir/ir.h"

namespace ab {

std::string print_ir(const Program& program);
std::string print_lowered(const LoweredProgram& lowered);
// One block of print_lowered's output: its header line, its ops and its terminator ("" for a
// block that does not exist).
std::string print_lowered_block(const LoweredProgram& lowered, int32_t block);

// Parses the output of print_ir. Errors go to `diags` with line:col in the IR text.
std::optional<Program> parse_ir(const std::string& text, const std::string& file,
                                Diagnostics& diags);

}  // namespace ab
