// Internal to the textual IR (text_print.cpp, text_parse.cpp): the characters of a name. The
// printer quotes a name that is not made of them; the parser's lexer reads one.
#pragma once

#include <cctype>

namespace ab::text_syntax {

inline bool is_ident_start(char c) {
  return std::isalpha(static_cast<unsigned char>(c)) || c == '_';
}
inline bool is_ident_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.';
}

}  // namespace ab::text_syntax
