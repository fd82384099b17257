#include "lang/lexer.h"

#include <fmt/format.h>

#include <charconv>
#include <string_view>

namespace ab::frontend {
namespace {

struct Keyword {
  std::string_view text;
  Tok kind;
};
constexpr Keyword kKeywords[] = {
    {"struct", Tok::KwStruct},
    {"const", Tok::KwConst},
    {"uniform", Tok::KwUniform},
    {"fn", Tok::KwFn},
    {"let", Tok::KwLet},
    {"var", Tok::KwVar},
    {"if", Tok::KwIf},
    {"else", Tok::KwElse},
    {"while", Tok::KwWhile},
    {"for", Tok::KwFor},
    {"in", Tok::KwIn},
    {"break", Tok::KwBreak},
    {"continue", Tok::KwContinue},
    {"return", Tok::KwReturn},
    {"assert", Tok::KwAssert},
    {"true", Tok::KwTrue},
    {"false", Tok::KwFalse},
    {"bool", Tok::KwBool},
    {"int", Tok::KwInt},
    {"uint", Tok::KwUInt},
    {"float", Tok::KwFloat},
};

struct Punct {
  std::string_view text;
  Tok kind;
};
// Longest spellings first so that "<<=" wins over "<<" and "<".
constexpr Punct kPuncts[] = {
    {"<<=", Tok::ShlAssign},
    {">>=", Tok::ShrAssign},
    {"..", Tok::DotDot},
    {"->", Tok::Arrow},
    {"==", Tok::Eq},
    {"!=", Tok::Ne},
    {"<=", Tok::Le},
    {">=", Tok::Ge},
    {"&&", Tok::AmpAmp},
    {"||", Tok::PipePipe},
    {"<<", Tok::Shl},
    {">>", Tok::Shr},
    {"+=", Tok::PlusAssign},
    {"-=", Tok::MinusAssign},
    {"*=", Tok::StarAssign},
    {"/=", Tok::SlashAssign},
    {"%=", Tok::PercentAssign},
    {"&=", Tok::AmpAssign},
    {"|=", Tok::PipeAssign},
    {"^=", Tok::CaretAssign},
    {"(", Tok::LParen},
    {")", Tok::RParen},
    {"{", Tok::LBrace},
    {"}", Tok::RBrace},
    {"[", Tok::LBracket},
    {"]", Tok::RBracket},
    {",", Tok::Comma},
    {";", Tok::Semi},
    {":", Tok::Colon},
    {".", Tok::Dot},
    {"=", Tok::Assign},
    {"<", Tok::Lt},
    {">", Tok::Gt},
    {"+", Tok::Plus},
    {"-", Tok::Minus},
    {"*", Tok::Star},
    {"/", Tok::Slash},
    {"%", Tok::Percent},
    {"@", Tok::At},
    {"&", Tok::Amp},
    {"|", Tok::Pipe},
    {"^", Tok::Caret},
    {"~", Tok::Tilde},
    {"!", Tok::Bang},
};

bool is_ident_start(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
bool is_digit(char c) {
  return c >= '0' && c <= '9';
}
bool is_ident_char(char c) {
  return is_ident_start(c) || is_digit(c);
}

// The length of the UTF-8 sequence that starts at `text[at]` (a byte >= 0x80), or 0 if the bytes
// there are not a well-formed sequence.
size_t utf8_length(std::string_view text, size_t at) {
  const auto lead = static_cast<unsigned char>(text[at]);
  size_t length = 0;
  if (lead >= 0xC2 && lead <= 0xDF) length = 2;
  if (lead >= 0xE0 && lead <= 0xEF) length = 3;
  if (lead >= 0xF0 && lead <= 0xF4) length = 4;
  if (length == 0 || at + length > text.size()) return 0;
  for (size_t k = 1; k < length; ++k)
    if ((static_cast<unsigned char>(text[at + k]) & 0xC0) != 0x80) return 0;
  return length;
}

// The code point that the well-formed UTF-8 `sequence` encodes.
uint32_t utf8_code_point(std::string_view sequence) {
  uint32_t value = static_cast<unsigned char>(sequence[0]) & (0x7Fu >> sequence.size());
  for (size_t k = 1; k < sequence.size(); ++k)
    value = (value << 6) | (static_cast<unsigned char>(sequence[k]) & 0x3Fu);
  return value;
}

int hex_value(char c) {
  if (is_digit(c)) return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

class Lexer {
 public:
  Lexer(const std::string& src, Diagnostics& diags, size_t max_errors)
      : src_(src), diags_(diags), max_errors_(max_errors) {}

  std::vector<Token> run() {
    std::vector<Token> out;
    // A UTF-8 byte order mark, as some editors write, is no part of the program. Columns on the
    // first line count from after it, as the editor shows them.
    if (src_.compare(0, 3, "\xEF\xBB\xBF") == 0) pos_ = 3;
    while (errors_ < max_errors_) {
      skip_space_and_comments();
      if (pos_ >= src_.size() || errors_ >= max_errors_) break;
      Token t;
      t.loc = loc();
      const char c = src_[pos_];
      if (is_ident_start(c) || non_ascii_length() > 0) {
        lex_word(t);
      } else if (is_digit(c)) {
        lex_number(t);
      } else if (!lex_punct(t)) {
        const unsigned char u = static_cast<unsigned char>(c);
        error(t.loc, u >= 0x20 && u < 0x7f ? fmt::format("unexpected character '{}'", c)
                                           : fmt::format("unexpected byte 0x{:02x}", u));
        advance(1);
        continue;
      }
      out.push_back(std::move(t));
    }
    Token end;
    end.kind = Tok::End;
    end.loc = loc();
    out.push_back(end);
    return out;
  }

 private:
  SourceLoc loc() const { return {line_, col_}; }
  char peek(size_t ahead = 0) const {
    return pos_ + ahead < src_.size() ? src_[pos_ + ahead] : '\0';
  }
  void advance(size_t n) {
    for (size_t i = 0; i < n && pos_ < src_.size(); ++i, ++pos_) {
      if (src_[pos_] == '\n') {
        ++line_;
        col_ = 1;
      } else {
        ++col_;
      }
    }
  }
  void error(SourceLoc at, std::string message) {
    ++errors_;
    diags_.error(at, std::move(message));
  }

  void skip_space_and_comments() {
    while (pos_ < src_.size()) {
      const char c = src_[pos_];
      if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
        advance(1);
      } else if (c == '/' && peek(1) == '/') {
        while (pos_ < src_.size() && src_[pos_] != '\n')
          advance(1);
      } else if (c == '/' && peek(1) == '*') {
        const SourceLoc start = loc();
        advance(2);
        bool closed = false;
        while (pos_ < src_.size()) {
          if (src_[pos_] == '*' && peek(1) == '/') {
            advance(2);
            closed = true;
            break;
          }
          advance(1);
        }
        if (!closed) error(start, "unterminated comment");
      } else {
        return;
      }
    }
  }

  // The length of the well-formed non-ASCII UTF-8 character at the current position, else 0.
  size_t non_ascii_length() const {
    if (pos_ >= src_.size() || static_cast<unsigned char>(src_[pos_]) < 0x80) return 0;
    return utf8_length(src_, pos_);
  }

  // A name. Non-ASCII characters in it (`café`) are reported once each and kept in the token, so
  // that the rest of the program still parses around the name.
  void lex_word(Token& t) {
    const size_t start = pos_;
    for (;;) {
      if (pos_ < src_.size() && is_ident_char(src_[pos_])) {
        advance(1);
      } else if (const size_t length = non_ascii_length(); length > 0) {
        const std::string_view character(src_.data() + pos_, length);
        if (errors_ < max_errors_)
          error(loc(), fmt::format("non-ASCII character '{}' (U+{:04X}): identifiers are ASCII "
                                   "letters, digits and '_'",
                                   character, utf8_code_point(character)));
        advance(length);
      } else {
        break;
      }
    }
    t.text = src_.substr(start, pos_ - start);
    t.kind = Tok::Ident;
    for (const Keyword& k : kKeywords)
      if (k.text == t.text) t.kind = k.kind;
  }

  void lex_number(Token& t) {
    const size_t start = pos_;
    bool out_of_range = false;
    if (peek() == '0' && (peek(1) == 'x' || peek(1) == 'X')) {
      advance(2);
      t.hex = true;
      if (hex_value(peek()) < 0) {
        error(t.loc, "hexadecimal literal needs at least one digit");
      }
      while (hex_value(peek()) >= 0) {
        if (t.int_value > 0xFFFFFFFFull)
          out_of_range = true;
        else
          t.int_value = t.int_value * 16 + hex_value(peek());
        advance(1);
      }
    } else {
      bool is_float = false;
      size_t bare_dot = std::string_view::npos;  // where `1.e5` lacks its fraction digit
      while (is_digit(peek()))
        advance(1);
      if (peek() == '.' && is_digit(peek(1))) {
        is_float = true;
        advance(1);
        while (is_digit(peek()))
          advance(1);
      } else if (peek() == '.' && starts_exponent(1)) {
        // `1.e5`: C reads a float, but the grammar wants a digit after the '.', and without one
        // this would be field e5 of an int. Reported below at the literal, and read as the float
        // that was meant so that nothing else goes wrong around it.
        is_float = true;
        bare_dot = pos_ - start;
        advance(1);
      }
      if (starts_exponent(0)) {
        is_float = true;
        advance(2);
        while (is_digit(peek()))
          advance(1);
      }
      std::string_view spelling(src_.data() + start, pos_ - start);
      std::string completed;
      if (bare_dot != std::string_view::npos) {
        completed = std::string(spelling.substr(0, bare_dot + 1)) + "0" +
                    std::string(spelling.substr(bare_dot + 1));
        error(t.loc,
              fmt::format("a float literal needs a digit after the '.': write '{}'", completed));
        spelling = completed;
      }
      if (is_float) {
        t.kind = Tok::FloatLit;
        t.text = std::string(spelling);
        auto [ptr, ec] =
            std::from_chars(spelling.data(), spelling.data() + spelling.size(), t.float_value);
        if (ec != std::errc() || ptr != spelling.data() + spelling.size()) {
          // Underflow to zero is harmless; anything else (overflow) is an error.
          t.float_value = 0;
          bool all_zero_mantissa = true;
          for (char c : spelling) {
            if (c == 'e' || c == 'E') break;
            if (c >= '1' && c <= '9') all_zero_mantissa = false;
          }
          const size_t e = spelling.find_first_of("eE");
          const bool negative_exponent =
              e != std::string_view::npos && e + 1 < spelling.size() && spelling[e + 1] == '-';
          if (!all_zero_mantissa && !negative_exponent) error(t.loc, "float literal out of range");
        }
        check_no_suffix(t);
        return;
      }
      for (char c : spelling) {
        if (t.int_value > 0xFFFFFFFFull) {
          out_of_range = true;
          break;
        }
        t.int_value = t.int_value * 10 + static_cast<uint64_t>(c - '0');
      }
    }
    t.kind = Tok::IntLit;
    if (out_of_range || t.int_value > 0xFFFFFFFFull) {
      error(t.loc, "integer literal out of range");
      t.int_value = 0;
    }
    if (peek() == 'u' && !is_ident_char(peek(1))) {
      t.unsigned_suffix = true;
      advance(1);
    }
    t.text = src_.substr(start, pos_ - start);
    check_no_suffix(t);
  }

  // Whether an exponent (`e5`, `E-3`) starts `ahead` bytes from here.
  bool starts_exponent(size_t ahead) const {
    if (peek(ahead) != 'e' && peek(ahead) != 'E') return false;
    const char next = peek(ahead + 1);
    return is_digit(next) || ((next == '+' || next == '-') && is_digit(peek(ahead + 2)));
  }

  // `12abc` is one bad token, not a number followed by a name.
  void check_no_suffix(const Token& t) {
    if (!is_ident_char(peek())) return;
    const size_t start = pos_;
    while (is_ident_char(peek()))
      advance(1);
    error(t.loc, fmt::format("invalid suffix '{}' on number", src_.substr(start, pos_ - start)));
  }

  bool lex_punct(Token& t) {
    for (const Punct& p : kPuncts) {
      if (src_.compare(pos_, p.text.size(), p.text) == 0) {
        t.kind = p.kind;
        t.text = std::string(p.text);
        advance(p.text.size());
        return true;
      }
    }
    return false;
  }

  const std::string& src_;
  Diagnostics& diags_;
  size_t max_errors_;
  size_t errors_ = 0;
  size_t pos_ = 0;
  int line_ = 1, col_ = 1;
};

}  // namespace

std::string describe(Tok kind) {
  switch (kind) {
    case Tok::End:
      return "end of file";
    case Tok::Ident:
      return "identifier";
    case Tok::IntLit:
      return "integer literal";
    case Tok::FloatLit:
      return "float literal";
    default:
      break;
  }
  for (const Keyword& k : kKeywords)
    if (k.kind == kind) return fmt::format("'{}'", k.text);
  for (const Punct& p : kPuncts)
    if (p.kind == kind) return fmt::format("'{}'", p.text);
  return "token";
}

std::string describe(const Token& token) {
  if (token.kind == Tok::End) return "end of file";
  return fmt::format("'{}'", token.text);
}

std::vector<Token> lex(const std::string& source, Diagnostics& diags, size_t max_errors) {
  return Lexer(source, diags, max_errors).run();
}

}  // namespace ab::frontend
