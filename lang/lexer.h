// The lexer: .ab source text -> tokens, always ending with Tok::End.
//
// Skips whitespace and comments (`//` to end of line, `/* */` not nested). Bad characters,
// unterminated comments and out-of-range literals are reported to `diags` and skipped, so the
// parser always gets a well-formed token stream. After `max_errors` errors the rest is dropped.
#pragma once

#include <string>
#include <vector>

#include "ir/diagnostics.h"
#include "lang/token.h"

namespace ab::frontend {

std::vector<Token> lex(const std::string& source, Diagnostics& diags, size_t max_errors = 20);

}  // namespace ab::frontend
