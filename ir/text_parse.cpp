// The parser of the textual IR (ir/text.h): a line lexer and a parser for the Figure 2 form that
// print_ir writes.
#include "ir/text.h"

#include <fmt/format.h>

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <map>
#include <set>

#include "ir/text_syntax.h"

namespace ab {
namespace {

using text_syntax::is_ident_char;
using text_syntax::is_ident_start;

struct Token {
  enum class Kind { Ident, Number, String, Punct, End };
  Kind kind = Kind::End;
  std::string text;  // identifier, number spelling, decoded string, or the punctuation
  int col = 1;       // 1-based column in the line
};

// One line of IR text split into tokens. Errors are reported with the column of the bad char.
struct LineLexer {
  static bool tokenize(const std::string& line, int line_no, std::vector<Token>& out,
                       Diagnostics& diags) {
    size_t i = 0;
    while (i < line.size()) {
      const char c = line[i];
      const int col = static_cast<int>(i) + 1;
      if (c == ' ' || c == '\t' || c == '\r') {
        ++i;
      } else if (c == '#') {
        break;
      } else if (is_ident_start(c)) {
        size_t j = i;
        while (j < line.size() && is_ident_char(line[j]))
          ++j;
        out.push_back({Token::Kind::Ident, line.substr(i, j - i), col});
        i = j;
      } else if (std::isdigit(static_cast<unsigned char>(c)) ||
                 (c == '-' && i + 1 < line.size() &&
                  std::isdigit(static_cast<unsigned char>(line[i + 1])))) {
        size_t j = i + 1;
        // Digits, hex digits, '.', and an exponent sign directly after 'e'/'E' (not in hex).
        const bool hex = line.compare(i, 2, "0x") == 0 || line.compare(i, 3, "-0x") == 0;
        while (j < line.size()) {
          const char d = line[j];
          if (std::isalnum(static_cast<unsigned char>(d)) || d == '.') {
            ++j;
          } else if ((d == '+' || d == '-') && !hex && (line[j - 1] == 'e' || line[j - 1] == 'E')) {
            ++j;
          } else {
            break;
          }
        }
        out.push_back({Token::Kind::Number, line.substr(i, j - i), col});
        i = j;
      } else if (c == '"') {
        std::string text;
        size_t j = i + 1;
        bool closed = false;
        while (j < line.size()) {
          if (line[j] == '"') {
            closed = true;
            ++j;
            break;
          }
          if (line[j] == '\\') {
            if (j + 1 < line.size() && (line[j + 1] == '"' || line[j + 1] == '\\')) {
              text += line[j + 1];
              j += 2;
              continue;
            }
            if (j + 3 < line.size() && line[j + 1] == 'x' &&
                std::isxdigit(static_cast<unsigned char>(line[j + 2])) &&
                std::isxdigit(static_cast<unsigned char>(line[j + 3]))) {
              text += static_cast<char>(std::stoi(line.substr(j + 2, 2), nullptr, 16));
              j += 4;
              continue;
            }
            diags.error({line_no, static_cast<int>(j) + 1},
                        "bad escape in string (use \\\", \\\\ or \\xHH)");
            return false;
          }
          text += line[j++];
        }
        if (!closed) {
          diags.error({line_no, col}, "unterminated string");
          return false;
        }
        out.push_back({Token::Kind::String, std::move(text), col});
        i = j;
      } else if (line.compare(i, 2, "->") == 0) {
        out.push_back({Token::Kind::Punct, "->", col});
        i += 2;
      } else if (std::string_view(":,()[]{}=*<+@%?").find(c) != std::string_view::npos) {
        out.push_back({Token::Kind::Punct, std::string(1, c), col});
        ++i;
      } else {
        diags.error({line_no, col},
                    std::isprint(static_cast<unsigned char>(c))
                        ? fmt::format("unexpected character '{}'", c)
                        : fmt::format("unexpected byte 0x{:02x}", static_cast<unsigned char>(c)));
        return false;
      }
    }
    out.push_back({Token::Kind::End, "", static_cast<int>(line.size()) + 1});
    return true;
  }
};

// A reference written in the text, resolved once its scope is complete.
struct PendingRef {
  std::string name;  // identifier, or empty for `%index`
  int64_t index = -1;
  SourceLoc loc;
};

// Thrown inside the parser to abandon the current line after one error has been reported.
struct LineError {};

class Parser {
 public:
  Parser(const std::string& text, Diagnostics& diags) : text_(text), diags_(diags) {}

  std::optional<Program> run(const std::string& file) {
    program_.file = file;
    size_t start = 0;
    int line_no = 0;
    while (start <= text_.size()) {
      size_t end = text_.find('\n', start);
      if (end == std::string::npos) end = text_.size();
      ++line_no;
      parse_line(text_.substr(start, end - start), line_no);
      if (diags_.errors().size() >= kMaxErrors) break;
      start = end + 1;
    }
    finish_function();
    resolve_calls();
    if (!seen_program_ && !diags_.has_errors())
      diags_.error({1, 1}, "missing 'program \"file\"' header");
    if (diags_.has_errors()) return std::nullopt;
    return std::move(program_);
  }

 private:
  static constexpr size_t kMaxErrors = 20;

  // ---- token cursor over the current line ----
  const Token& peek(size_t ahead = 0) const {
    return toks_[std::min(pos_ + ahead, toks_.size() - 1)];
  }
  const Token& next() {
    const Token& t = peek();
    if (pos_ < toks_.size() - 1) ++pos_;
    return t;
  }
  SourceLoc here() const { return {line_, peek().col}; }
  [[noreturn]] void fail(SourceLoc loc, std::string message) {
    diags_.error(loc, std::move(message));
    throw LineError{};
  }
  static std::string describe(const Token& t) {
    switch (t.kind) {
      case Token::Kind::End:
        return "end of line";
      case Token::Kind::String:
        return "a string";
      default:
        return "'" + t.text + "'";
    }
  }
  bool at_punct(const char* p) const {
    return peek().kind == Token::Kind::Punct && peek().text == p;
  }
  bool accept(const char* p) {
    if (!at_punct(p)) return false;
    next();
    return true;
  }
  void expect(const char* p) {
    if (!accept(p)) fail(here(), fmt::format("expected '{}', found {}", p, describe(peek())));
  }
  bool at_ident(const char* word) const {
    return peek().kind == Token::Kind::Ident && peek().text == word;
  }
  std::string expect_ident(const char* what) {
    if (peek().kind != Token::Kind::Ident)
      fail(here(), fmt::format("expected {}, found {}", what, describe(peek())));
    return next().text;
  }
  // A declared name: an identifier or a quoted string.
  std::string expect_name(const char* what) {
    if (peek().kind == Token::Kind::String) return next().text;
    return expect_ident(what);
  }
  void expect_end() {
    if (peek().kind != Token::Kind::End)
      fail(here(), fmt::format("unexpected {} at end of line", describe(peek())));
  }

  // Parses an unsigned or signed integer token within [lo, hi].
  int64_t expect_integer(const char* what, int64_t lo, int64_t hi) {
    const Token& t = peek();
    if (t.kind != Token::Kind::Number)
      fail(here(), fmt::format("expected {}, found {}", what, describe(t)));
    const SourceLoc loc = here();
    auto value = parse_integer(t.text);
    if (!value || *value < lo || *value > hi)
      fail(loc, fmt::format("{} '{}' is not an integer in [{}, {}]", what, t.text, lo, hi));
    next();
    return *value;
  }
  static std::optional<int64_t> parse_integer(const std::string& s) {
    const bool negative = !s.empty() && s[0] == '-';
    std::string_view digits(s);
    if (negative) digits.remove_prefix(1);
    int base = 10;
    if (digits.size() > 2 && digits[0] == '0' && digits[1] == 'x') {
      digits.remove_prefix(2);
      base = 16;
    }
    uint64_t magnitude = 0;
    auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), magnitude, base);
    if (ec != std::errc() || end != digits.data() + digits.size() || digits.empty() ||
        magnitude > (1ull << 40))
      return std::nullopt;
    return negative ? -static_cast<int64_t>(magnitude) : static_cast<int64_t>(magnitude);
  }
  uint32_t expect_u32(const char* what) {
    return static_cast<uint32_t>(expect_integer(what, 0, UINT32_MAX));
  }
  SourceLoc parse_loc_suffix() {
    SourceLoc loc;
    if (accept("@")) {
      loc.line = static_cast<int>(expect_integer("line number", INT32_MIN, INT32_MAX));
      expect(":");
      loc.col = static_cast<int>(expect_integer("column number", INT32_MIN, INT32_MAX));
    }
    expect_end();
    return loc;
  }

  // ---- types ----
  TypeId parse_type() {
    const SourceLoc loc = here();
    const std::string base = expect_ident("a type");
    TypeId t = -1;
    if (base == "void")
      t = Types::kVoid;
    else if (base == "bool")
      t = Types::kBool;
    else if (base == "int")
      t = Types::kInt;
    else if (base == "uint")
      t = Types::kUInt;
    else if (base == "float")
      t = Types::kFloat;
    else
      t = program_.types.find_struct(base);
    if (t < 0) fail(loc, fmt::format("unknown type '{}' (structs are declared before use)", base));
    std::vector<uint32_t> dims;
    while (accept("[")) {
      dims.push_back(static_cast<uint32_t>(expect_integer("an array length", 0, UINT32_MAX)));
      expect("]");
    }
    // T[A][B] is A arrays of T[B]: intern from the innermost dimension out.
    for (size_t i = dims.size(); i-- > 0;) {
      if (static_cast<uint64_t>(program_.types.words(t)) * dims[i] > UINT32_MAX)
        fail(loc, "array type too large");
      t = program_.types.array(t, dims[i]);
    }
    return t;
  }

  void parse_struct() {
    const SourceLoc loc = here();
    const std::string name = expect_name("a struct name");
    if (program_.types.find_struct(name) >= 0)
      fail(loc, fmt::format("struct '{}' declared twice", name));
    std::vector<Field> fields;
    expect("{");
    if (!at_punct("}")) {
      do {
        Field f;
        f.name = expect_name("a field name");
        expect(":");
        f.type = parse_type();
        fields.push_back(std::move(f));
      } while (accept(","));
    }
    expect("}");
    expect_end();
    auto added = program_.types.add_struct(name, std::move(fields));
    if (!added) fail(loc, added.error());
    check_type_order(loc, *added);
  }

  void check_type_order(SourceLoc loc, TypeId got) {
    if (got != next_type_id_)
      fail(loc, fmt::format("type table out of order: this declares type {} where type {} is next",
                            got, next_type_id_));
    ++next_type_id_;
  }

  // ---- references ----
  PendingRef parse_ref(const char* what) {
    PendingRef r;
    r.loc = here();
    if (accept("%")) {
      r.index = expect_integer("an index", 0, INT32_MAX);
      return r;
    }
    r.name = expect_ident(what);
    return r;
  }

  // Resolves `r` among `names`; `what` names the kind of entity for messages.
  int32_t resolve(const PendingRef& r, const std::vector<std::string>& names, const char* what) {
    if (r.name.empty()) {
      if (r.index >= static_cast<int64_t>(names.size()))
        fail(r.loc, fmt::format("{} %{} out of range ({} declared)", what, r.index, names.size()));
      return static_cast<int32_t>(r.index);
    }
    int32_t found = -1;
    for (size_t i = 0; i < names.size(); ++i) {
      if (names[i] != r.name) continue;
      if (found >= 0)
        fail(r.loc, fmt::format("{} name '{}' is ambiguous; refer to it as %N", what, r.name));
      found = static_cast<int32_t>(i);
    }
    if (found < 0) fail(r.loc, fmt::format("unknown {} '{}'", what, r.name));
    return found;
  }

  VarId parse_var() { return resolve(parse_ref("a variable"), var_names_, "variable"); }

  int32_t parse_block_ref() {
    const SourceLoc loc = here();
    const std::string label = expect_ident("a block label (bN)");
    auto index = block_index(label);
    if (!index) fail(loc, fmt::format("expected a block label like b0, found '{}'", label));
    pending_blocks_.push_back({*index, loc});
    return *index;
  }
  static std::optional<int32_t> block_index(const std::string& label) {
    if (label.size() < 2 || label[0] != 'b') return std::nullopt;
    int32_t value = 0;
    auto [end, ec] = std::from_chars(label.data() + 1, label.data() + label.size(), value);
    if (ec != std::errc() || end != label.data() + label.size() || value < 0) return std::nullopt;
    if (label.size() > 2 && label[1] == '0') return std::nullopt;  // b0 is the only 0-led label
    return value;
  }

  // ---- one line ----
  void parse_line(const std::string& line, int line_no) {
    line_ = line_no;
    toks_.clear();
    pos_ = 0;
    if (!LineLexer::tokenize(line, line_no, toks_, diags_)) return;
    if (peek().kind == Token::Kind::End) return;
    try {
      parse_statement();
    } catch (const LineError&) {
      // Reported already; go on with the next line to find more errors.
    }
  }

  void parse_statement() {
    const SourceLoc loc = here();
    const Token& first = peek();
    if (first.kind == Token::Kind::Punct && first.text == "%") {
      // `%N = ...`: an op whose destination has no usable name.
      if (current_block_ < 0) fail(loc, "an op outside a block");
      if (block_done_)
        fail(loc, "statement after the block's terminator (start a new block with a label)");
      return parse_op();
    }
    if (first.kind != Token::Kind::Ident)
      fail(loc, fmt::format("expected a declaration or statement, found {}", describe(first)));
    if (!seen_program_) {
      if (first.text != "program") fail(loc, "expected 'program \"file\"' as the first line");
      next();
      if (peek().kind != Token::Kind::String)
        fail(here(), fmt::format("expected the file name as a string, found {}", describe(peek())));
      program_.file = next().text;
      expect_end();
      seen_program_ = true;
      return;
    }
    if (first.text == "program") fail(loc, "'program' appears twice");
    if (first.text == "struct" || first.text == "type" || first.text == "uniform") {
      if (!program_.functions.empty())
        fail(loc, fmt::format("'{}' must come before the first function", first.text));
      next();
      if (first.text == "struct") return parse_struct();
      if (first.text == "type") {
        const TypeId t = parse_type();
        expect_end();
        return check_type_order(loc, t);
      }
      return parse_uniform();
    }
    if (first.text == "fn") {
      next();
      return parse_function_header(loc);
    }
    if (current_fn_ < 0) fail(loc, fmt::format("'{}' outside a function", first.text));
    if (first.text == "var") {
      if (current_block_ >= 0) fail(loc, "variables must be declared before the first block");
      next();
      return parse_var_decl();
    }
    if (peek(1).kind == Token::Kind::Punct && peek(1).text == ":" && block_index(first.text))
      return parse_block_label();
    if (current_block_ < 0)
      fail(loc, fmt::format("expected 'var' or a block label, found '{}'", first.text));
    if (block_done_)
      fail(loc, "statement after the block's terminator (start a new block with a label)");
    const bool has_dst = peek(1).kind == Token::Kind::Punct && peek(1).text == "=";
    if (!has_dst && (first.text == "jump" || first.text == "branch" || first.text == "return" ||
                     first.text == "pushjump" || first.text == "tailjump"))
      return parse_terminator();
    parse_op();
  }

  void parse_uniform() {
    Uniform u;
    u.name = expect_name("a uniform name");
    expect(":");
    u.type = parse_type();
    u.loc = parse_loc_suffix();
    program_.uniforms.push_back(std::move(u));
    uniform_names_.push_back(program_.uniforms.back().name);
  }

  struct HeaderVar {
    PendingRef ref;
    TypeId type;
    SourceLoc type_loc;
  };

  void parse_function_header(SourceLoc loc) {
    finish_function();
    Function fn;
    fn.name = expect_name("a function name");
    header_params_.clear();
    header_result_.reset();
    expect("(");
    if (!at_punct(")")) {
      do {
        HeaderVar p;
        p.ref = parse_ref("a parameter name");
        expect(":");
        p.type_loc = here();
        p.type = parse_type();
        header_params_.push_back(p);
      } while (accept(","));
    }
    expect(")");
    if (accept("->")) {
      HeaderVar r;
      r.ref = parse_ref("a result name");
      expect(":");
      r.type_loc = here();
      r.type = parse_type();
      header_result_ = r;
    }
    fn.loc = parse_loc_suffix();
    program_.functions.push_back(std::move(fn));
    function_locs_.push_back(loc);
    current_fn_ = static_cast<int>(program_.functions.size()) - 1;
    current_block_ = -1;
    block_done_ = false;
    header_resolved_ = false;
    var_names_.clear();
    pending_blocks_.clear();
  }

  void parse_var_decl() {
    Var v;
    v.name = expect_name("a variable name");
    expect(":");
    v.type = parse_type();
    expect_end();
    var_names_.push_back(v.name);
    fn().vars.push_back(std::move(v));
  }

  Function& fn() { return program_.functions[current_fn_]; }

  // The header's params and result name variables declared below it: resolve them once the
  // variables are known (at the first block, or at the end of a block-less function).
  void resolve_header() {
    if (header_resolved_) return;
    header_resolved_ = true;
    auto resolve_one = [&](const HeaderVar& h) {
      const VarId v = resolve(h.ref, var_names_, "variable");
      if (fn().vars[v].type != h.type)
        fail(h.type_loc, fmt::format("'{}' is declared as {} but the header says {}",
                                     fn().vars[v].name, program_.types.to_string(fn().vars[v].type),
                                     program_.types.to_string(h.type)));
      return v;
    };
    for (const HeaderVar& p : header_params_)
      fn().params.push_back(resolve_one(p));
    if (header_result_) fn().result = resolve_one(*header_result_);
  }

  void parse_block_label() {
    const SourceLoc loc = here();
    const int32_t index = *block_index(next().text);
    expect(":");
    const SourceLoc block_loc = parse_loc_suffix();
    if (current_block_ < 0) {
      try {
        resolve_header();
      } catch (const LineError&) {
        // Reported; the block still opens so the lines below it are checked as usual.
      }
    }
    if (current_block_ >= 0 && !block_done_)
      fail(loc, fmt::format("block b{} has no terminator", current_block_));
    const int32_t expected = static_cast<int32_t>(fn().blocks.size());
    if (index != expected)
      fail(loc,
           fmt::format("blocks are numbered in order: expected b{}, found b{}", expected, index));
    Block b;
    b.loc = block_loc;
    fn().blocks.push_back(std::move(b));
    current_block_ = index;
    block_done_ = false;
  }

  Block& block() { return fn().blocks[current_block_]; }

  void parse_terminator() {
    Terminator t;
    const std::string word = next().text;
    if (word == "jump") {
      t.kind = Terminator::Kind::Jump;
      t.target = parse_block_ref();
    } else if (word == "branch") {
      t.kind = Terminator::Kind::Branch;
      t.cond = parse_var();
      expect(",");
      t.target = parse_block_ref();
      expect(",");
      t.target_else = parse_block_ref();
    } else if (word == "tailjump") {
      t.kind = Terminator::Kind::TailJump;
      t.target = parse_block_ref();
    } else if (word == "pushjump") {
      t.kind = Terminator::Kind::PushJump;
      t.target = parse_block_ref();
      expect(",");
      t.target_else = parse_block_ref();
    } else {
      t.kind = Terminator::Kind::Return;
    }
    t.loc = parse_loc_suffix();
    block().term = t;
    block_done_ = true;
  }

  // Operands of get/set/uniform_get: `[steps], extra...`, appending index vars to op.args.
  void parse_path(Op& op) {
    expect("[");
    if (!at_punct("]")) {
      do {
        PathStep step;
        if (peek().kind == Token::Kind::Number) {
          step.offset = expect_u32("a word offset");
          if (accept("*")) {
            step.stride = expect_u32("a stride");
            expect("<");
            step.count = expect_u32("a count");
          }
        } else {
          step.dynamic = true;
          if (!accept("?")) op.args.push_back(parse_var());
          expect("*");
          step.stride = expect_u32("a stride");
          expect("<");
          step.count = expect_u32("a count");
          if (accept("+")) step.offset = expect_u32("a word offset");
        }
        op.path.push_back(step);
      } while (accept(","));
    }
    expect("]");
  }

  void parse_const(Op& op) {
    const SourceLoc loc = here();
    if (at_ident("words")) {
      next();
      expect("[");
      if (!at_punct("]")) {
        do {
          op.imm.push_back(expect_u32("a word"));
        } while (accept(","));
      }
      expect("]");
      return;
    }
    const Types& types = program_.types;
    const TypeId t = op.dst >= 0 ? fn().vars[op.dst].type : Types::kVoid;
    if (!types.is_scalar(types.leaf(t)))
      fail(loc, fmt::format("a const of type {} is written as 'words [..]'", types.to_string(t)));
    const Scalar kind = types[types.leaf(t)].scalar;
    if (accept("[")) {
      if (!at_punct("]")) {
        do {
          op.imm.push_back(parse_literal(kind));
        } while (accept(","));
      }
      expect("]");
    } else {
      op.imm.push_back(parse_literal(kind));
    }
  }

  uint32_t parse_literal(Scalar kind) {
    const SourceLoc loc = here();
    const Token& t = peek();
    if (t.kind == Token::Kind::Number && t.text.rfind("0x", 0) == 0) return expect_u32("a word");
    switch (kind) {
      case Scalar::Bool:
        if (at_ident("true") || at_ident("false")) return next().text == "true" ? 1u : 0u;
        fail(loc, fmt::format("expected true or false, found {}", describe(t)));
      case Scalar::Int:
        return static_cast<uint32_t>(
            static_cast<int32_t>(expect_integer("an int", INT32_MIN, INT32_MAX)));
      case Scalar::UInt:
        return expect_u32("a uint");
      case Scalar::Float: {
        if (t.kind != Token::Kind::Number)
          fail(loc, fmt::format("expected a float, found {}", describe(t)));
        char* end = nullptr;
        const float f = std::strtof(t.text.c_str(), &end);
        if (end != t.text.c_str() + t.text.size() || !std::isfinite(f))
          fail(loc,
               fmt::format("bad float '{}' (non-finite values are written as 0x bits)", t.text));
        next();
        return float_bits(f);
      }
    }
    return 0;
  }

  // get base [path], indices / set base [path], indices = value: the base (and Set's value)
  // lead the operands; index vars follow in path order.
  void parse_get_or_set(Op& op) {
    const VarId base = accept("?") ? -1 : parse_var();
    Op path_holder;
    parse_path(path_holder);
    op.path = std::move(path_holder.path);
    std::vector<VarId> extra;
    while (accept(","))
      extra.push_back(parse_var());
    VarId value = -1;
    if (is_set(op)) {
      expect("=");
      value = accept("?") ? -1 : parse_var();
    }
    if (base >= 0) op.args.push_back(base);
    if (value >= 0) op.args.push_back(value);
    for (VarId v : path_holder.args)
      op.args.push_back(v);
    for (VarId v : extra)
      op.args.push_back(v);
  }

  void parse_uniform_get(Op& op) {
    op.index = resolve(parse_ref("a uniform"), uniform_names_, "uniform");
    parse_path(op);
    while (accept(","))
      op.args.push_back(parse_var());
  }

  // call @f(args): the callee is resolved once every function is known.
  PendingRef parse_call(Op& op) {
    PendingRef callee = parse_ref("a function");
    expect("(");
    if (!at_punct(")")) {
      do {
        op.args.push_back(parse_var());
      } while (accept(","));
    }
    expect(")");
    return callee;
  }

  void parse_op() {
    Op op;
    std::optional<PendingRef> callee;
    const size_t dst_tokens = at_punct("%") ? 2 : 1;
    if (peek(dst_tokens).kind == Token::Kind::Punct && peek(dst_tokens).text == "=") {
      op.dst = parse_var();
      expect("=");
    }
    const SourceLoc name_loc = here();
    const std::string name = expect_ident("an op name");
    const auto code = op_by_name(name);
    if (!code) fail(name_loc, fmt::format("unknown op '{}'", name));
    op.code = *code;
    if (is_const(op))
      parse_const(op);
    else if (is_uniform_get(op))
      parse_uniform_get(op);
    else if (has_path(op.code))
      parse_get_or_set(op);
    else if (is_call(op))
      callee = parse_call(op);
    else if (peek().kind != Token::Kind::End && !at_punct("@"))
      do {
        if (is_assert(op) && peek().kind == Token::Kind::String) {
          op.message = next().text;  // the fault's text, last
          break;
        }
        op.args.push_back(parse_var());
      } while (accept(","));
    op.loc = parse_loc_suffix();
    if (callee)
      pending_calls_.push_back(
          {*callee, current_fn_, current_block_, static_cast<int>(block().ops.size())});
    block().ops.push_back(std::move(op));
  }

  // Called at the next `fn` and at the end: checks what needs the whole function.
  void finish_function() {
    if (current_fn_ < 0) return;
    line_ = function_locs_[current_fn_].line;
    try {
      resolve_header();
    } catch (const LineError&) {
    }
    if (current_block_ >= 0 && !block_done_)
      diags_.error(
          function_locs_[current_fn_],
          fmt::format("block b{} of function '{}' has no terminator", current_block_, fn().name));
    for (const auto& [index, loc] : pending_blocks_)
      if (index >= static_cast<int32_t>(fn().blocks.size()))
        diags_.error(loc, fmt::format("unknown block b{} (function '{}' has {} blocks)", index,
                                      fn().name, fn().blocks.size()));
    pending_blocks_.clear();
    current_fn_ = -1;
  }

  // Calls may name functions declared later, so they are resolved at the end.
  void resolve_calls() {
    std::vector<std::string> names;
    for (const Function& f : program_.functions)
      names.push_back(f.name);
    for (const PendingCall& c : pending_calls_) {
      try {
        program_.functions[c.function].blocks[c.block].ops[c.op].index =
            resolve(c.callee, names, "function");
      } catch (const LineError&) {
      }
    }
  }

  struct PendingCall {
    PendingRef callee;
    int function, block, op;
  };

  const std::string& text_;
  Diagnostics& diags_;
  Program program_;
  bool seen_program_ = false;
  TypeId next_type_id_ = 5;

  std::vector<Token> toks_;
  size_t pos_ = 0;
  int line_ = 0;

  std::vector<std::string> uniform_names_;
  std::vector<SourceLoc> function_locs_;
  int current_fn_ = -1;
  int current_block_ = -1;
  bool block_done_ = false;
  bool header_resolved_ = false;
  std::vector<HeaderVar> header_params_;
  std::optional<HeaderVar> header_result_;
  std::vector<std::string> var_names_;
  std::vector<std::pair<int32_t, SourceLoc>> pending_blocks_;
  std::vector<PendingCall> pending_calls_;
};

}  // namespace

std::optional<Program> parse_ir(const std::string& text, const std::string& file,
                                Diagnostics& diags) {
  Parser parser(text, diags);
  return parser.run(file);
}

}  // namespace ab
