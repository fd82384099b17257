// Tokens of the .ab language: what the lexer produces and the parser consumes.
#pragma once

#include <cstdint>
#include <string>

#include "ir/ir.h"

namespace ab::frontend {

enum class Tok : uint8_t {
  End,
  Ident,
  IntLit,
  FloatLit,
  // keywords
  KwStruct,
  KwConst,
  KwUniform,
  KwFn,
  KwLet,
  KwVar,
  KwIf,
  KwElse,
  KwWhile,
  KwFor,
  KwIn,
  KwBreak,
  KwContinue,
  KwReturn,
  KwAssert,
  KwTrue,
  KwFalse,
  KwBool,
  KwInt,
  KwUInt,
  KwFloat,
  // punctuation
  LParen,
  RParen,
  LBrace,
  RBrace,
  LBracket,
  RBracket,
  Comma,
  Semi,
  Colon,
  Dot,
  DotDot,
  Arrow,
  Assign,
  Eq,
  Ne,
  Lt,
  Le,
  Gt,
  Ge,
  Plus,
  Minus,
  Star,
  Slash,
  Percent,
  At,  // '@', the matrix product
  Amp,
  Pipe,
  Caret,
  Tilde,
  Bang,
  AmpAmp,
  PipePipe,
  Shl,
  Shr,
  PlusAssign,
  MinusAssign,
  StarAssign,
  SlashAssign,
  PercentAssign,
  AmpAssign,
  PipeAssign,
  CaretAssign,
  ShlAssign,
  ShrAssign,
};

struct Token {
  Tok kind = Tok::End;
  SourceLoc loc;
  std::string text;        // identifiers: the name; other tokens: their spelling
  uint64_t int_value = 0;  // IntLit (saturated; out-of-range literals are reported by the lexer)
  bool unsigned_suffix = false;  // IntLit written with `u`
  bool hex = false;              // IntLit written as 0x...
  float float_value = 0;         // FloatLit
};

// How a token kind is spelled in messages: "';'", "'fn'", "identifier", "end of file".
std::string describe(Tok kind);
// How a particular token is named in messages: "'foo'", "'42'", "';'", "end of file".
std::string describe(const Token& token);

}  // namespace ab::frontend
