// The parser: tokens -> ast::Module, by recursive descent.
//
// Syntax errors go to `diags` with the offending token's location; the parser recovers by
// skipping to the next `;`, `}` or top-level item, so one run reports several errors. Nesting
// deeper than kMaxNesting (blocks, parentheses, operator chains) is an error, never a stack
// overflow.
#pragma once

#include <vector>

#include "ir/diagnostics.h"
#include "lang/ast.h"
#include "lang/token.h"

namespace ab::frontend {

constexpr int kMaxNesting = 256;

ast::Module parse(const std::vector<Token>& tokens, Diagnostics& diags, size_t max_errors = 50);

}  // namespace ab::frontend
