#include "debugger/lane_filter.h"

#include <fmt/format.h>
#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>

#include "debugger/execution_source.h"
#include "debugger/value_format.h"

namespace ab::debugger {

LaneState lane_state(const ExecutionSource& source) {
  LaneState s;
  s.module = source.program().module.get();
  s.lanes = source.lanes();
  s.exit_pc = static_cast<int32_t>(s.module->blocks().size());
  s.pcs = source.lane_pcs().data();
  s.depths = source.lane_depths().data();
  s.faulted = source.lane_faulted().data();
  s.registers = source.registers().data();
  s.stride = s.lanes ? source.registers().size() / s.lanes : 0;
  return s;
}

// ---- VariableReader ----

Expected<VariableReader> VariableReader::resolve(const Module& module, const std::string& name) {
  const std::vector<VariableInfo>& vars = module.variables();
  constexpr auto kTemp = VariableInfo::Storage::Temp;
  VariableReader r;
  r.name_ = name;
  for (size_t v = 0; v < vars.size(); ++v)
    if (vars[v].name == name && vars[v].storage != kTemp) {
      r.fixed_ = static_cast<int32_t>(v);
      return r;
    }
  // A source name: the variable `function.name` of each block's function. At a call's return
  // block a stacked variable's register still holds what the callee left there (the caller's
  // value is on top of its stack until the block pops it): no value there.
  const std::vector<BlockInfo>& blocks = module.blocks();
  std::vector<bool> returns_to(blocks.size(), false);
  for (const BlockInfo& b : blocks)
    if (b.call_return >= 0 && static_cast<size_t>(b.call_return) < blocks.size())
      returns_to[b.call_return] = true;
  bool any = false;
  r.per_block_.assign(blocks.size(), -1);
  for (size_t b = 0; b < blocks.size(); ++b) {
    const std::string full = blocks[b].function + "." + name;
    for (size_t v = 0; v < vars.size(); ++v)
      if (vars[v].name == full && vars[v].storage != kTemp) {
        any = true;
        if (!(returns_to[b] && vars[v].storage == VariableInfo::Storage::Stacked))
          r.per_block_[b] = static_cast<int32_t>(v);
        break;
      }
  }
  if (any) return r;
  std::string names;
  for (const VariableInfo& v : vars)
    if (v.storage != kTemp && v.from_source) names += (names.empty() ? "" : ", ") + v.name;
  return Error{fmt::format("no variable '{}' lives across blocks (variables: {})", name, names)};
}

double VariableReader::read(const LaneState& s, uint32_t lane) const {
  int32_t v = fixed_;
  if (v < 0) {
    const int32_t pc = s.pcs[lane];
    if (s.faulted[lane] || pc < 0 || pc >= s.exit_pc) return NAN;
    v = per_block_[pc];
    if (v < 0) return NAN;
  }
  const VariableInfo& var = s.module->variables()[v];
  return leading_scalar(var.value_type, s.registers + lane * s.stride + s.offset_of(v));
}

void VariableReader::used(std::vector<int32_t>& variables) const {
  if (fixed_ >= 0) variables.push_back(fixed_);
  for (int32_t v : per_block_)
    if (v >= 0) variables.push_back(v);
}

void LaneFilter::used(std::vector<int32_t>& variables) const {
  if (variables_)
    for (const VariableReader& v : *variables_)
      v.used(variables);
}

// ---- the expression ----

struct LaneFilter::Node {
  enum class Op : uint8_t {
    Const,
    Depth,
    Block,
    Lane,
    Fault,
    Finished,
    Live,
    Var,  // leaves
    Neg,
    Not,  // unary
    Add,
    Sub,
    Mul,
    Div,
    Mod,
    Lt,
    Le,
    Gt,
    Ge,
    Eq,
    Ne,
    And,
    Or
  };
  Op op = Op::Const;
  double value = 0;        // Const
  int32_t a = -1, b = -1;  // operands (node indices)
  int32_t var = -1;        // Var: index into variables_
};

namespace {

using Op = LaneFilter::Node::Op;

struct Token {
  enum class Kind : uint8_t { Number, Name, Symbol, End };
  Kind kind = Kind::End;
  std::string text;
  double number = 0;
  size_t column = 0;  // 1-based
};

Expected<std::vector<Token>> tokenize(std::string_view s) {
  std::vector<Token> out;
  size_t i = 0;
  while (i < s.size()) {
    const char c = s[i];
    if (std::isspace(static_cast<unsigned char>(c))) {
      ++i;
      continue;
    }
    Token t;
    t.column = i + 1;
    if (std::isdigit(static_cast<unsigned char>(c)) ||
        (c == '.' && i + 1 < s.size() && std::isdigit(static_cast<unsigned char>(s[i + 1])))) {
      size_t j = i;
      while (j < s.size() && (std::isalnum(static_cast<unsigned char>(s[j])) || s[j] == '.'))
        ++j;
      t.kind = Token::Kind::Number;
      t.text = std::string(s.substr(i, j - i));
      auto [ptr, ec] = std::from_chars(t.text.data(), t.text.data() + t.text.size(), t.number);
      if (ec != std::errc() || ptr != t.text.data() + t.text.size())
        return Error{fmt::format("column {}: bad number '{}'", t.column, t.text)};
      i = j;
    } else if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      size_t j = i;
      while (j < s.size() &&
             (std::isalnum(static_cast<unsigned char>(s[j])) || s[j] == '_' ||
              (s[j] == '.' && j + 1 < s.size() &&
               (std::isalnum(static_cast<unsigned char>(s[j + 1])) || s[j + 1] == '_'))))
        ++j;
      t.kind = Token::Kind::Name;
      t.text = std::string(s.substr(i, j - i));
      i = j;
    } else {
      static constexpr std::string_view kTwo[] = {"&&", "||", "==", "!=", "<=", ">="};
      static constexpr std::string_view kOne = "<>!+-*/%()";
      t.kind = Token::Kind::Symbol;
      for (std::string_view two : kTwo)
        if (s.substr(i, 2) == two) t.text = std::string(two);
      if (t.text.empty() && kOne.find(c) != std::string_view::npos) t.text = std::string(1, c);
      if (t.text.empty()) {
        if (c == '=' || c == '&' || c == '|')
          return Error{
              fmt::format("column {}: unexpected '{}' (did you mean '{}{}'?)", t.column, c, c, c)};
        return Error{fmt::format("column {}: unexpected character '{}'", t.column,
                                 std::isprint(static_cast<unsigned char>(c))
                                     ? std::string(1, c)
                                     : fmt::format("\\x{:02x}", static_cast<unsigned char>(c)))};
      }
      i += t.text.size();
    }
    out.push_back(std::move(t));
  }
  Token end;
  end.column = s.size() + 1;
  out.push_back(end);
  return out;
}

class Parser {
 public:
  Parser(const std::vector<Token>& tokens, const Module& module) : t_(tokens), module_(module) {}

  Status parse() {
    if (t_.front().kind == Token::Kind::End) return Error{"column 1: the filter is empty"};
    if (Status s = expr(); !s) return s;
    if (peek().kind != Token::Kind::End)
      return Error{fmt::format("column {}: unexpected '{}' after the expression", peek().column,
                               peek().text)};
    return Ok{};
  }
  std::vector<LaneFilter::Node> nodes;
  std::vector<VariableReader> variables;

 private:
  static constexpr int kMaxNesting = 100;

  const Token& peek() const { return t_[pos_]; }
  bool is(const char* symbol) const {
    return peek().kind == Token::Kind::Symbol && peek().text == symbol;
  }
  int32_t add(Op op, int32_t a = -1, int32_t b = -1, double value = 0) {
    LaneFilter::Node n;
    n.op = op;
    n.a = a;
    n.b = b;
    n.value = value;
    nodes.push_back(n);
    return static_cast<int32_t>(nodes.size() - 1);
  }
  int32_t last() const { return static_cast<int32_t>(nodes.size() - 1); }

  // Each level leaves its value in the last node added.
  Status expr() {
    if (++nesting_ > kMaxNesting)
      return Error{fmt::format("column {}: the expression nests too deeply", peek().column)};
    Status s = or_();
    --nesting_;
    return s;
  }
  Status binary_level(Status (Parser::*next)(),
                      std::initializer_list<std::pair<const char*, Op>> ops) {
    if (Status s = (this->*next)(); !s) return s;
    for (;;) {
      const std::pair<const char*, Op>* found = nullptr;
      for (const auto& op : ops)
        if (is(op.first)) found = &op;
      if (!found) return Ok{};
      ++pos_;
      const int32_t left = last();
      if (Status s = (this->*next)(); !s) return s;
      add(found->second, left, last());
    }
  }
  Status or_() { return binary_level(&Parser::and_, {{"||", Op::Or}}); }
  Status and_() { return binary_level(&Parser::not_, {{"&&", Op::And}}); }
  Status not_() {
    if (is("!")) {
      ++pos_;
      if (++nesting_ > kMaxNesting)
        return Error{fmt::format("column {}: the expression nests too deeply", peek().column)};
      Status s = not_();
      --nesting_;
      if (!s) return s;
      add(Op::Not, last());
      return Ok{};
    }
    return compare();
  }
  Status compare() {
    if (Status s = sum(); !s) return s;
    static const std::pair<const char*, Op> kOps[] = {{"==", Op::Eq}, {"!=", Op::Ne},
                                                      {"<=", Op::Le}, {">=", Op::Ge},
                                                      {"<", Op::Lt},  {">", Op::Gt}};
    for (const auto& [text, op] : kOps)
      if (is(text)) {
        ++pos_;
        const int32_t left = last();
        if (Status s = sum(); !s) return s;
        add(op, left, last());
        for (const auto& [again, unused] : kOps)
          if (is(again))
            return Error{fmt::format(
                "column {}: comparisons do not chain; join them with && (a < b && b < c)",
                peek().column)};
        return Ok{};
      }
    return Ok{};
  }
  Status sum() { return binary_level(&Parser::product, {{"+", Op::Add}, {"-", Op::Sub}}); }
  Status product() {
    return binary_level(&Parser::unary, {{"*", Op::Mul}, {"/", Op::Div}, {"%", Op::Mod}});
  }
  Status unary() {
    const Token& t = peek();
    if (is("-")) {
      ++pos_;
      if (++nesting_ > kMaxNesting)
        return Error{fmt::format("column {}: the expression nests too deeply", t.column)};
      Status s = unary();
      --nesting_;
      if (!s) return s;
      add(Op::Neg, last());
      return Ok{};
    }
    if (is("(")) {
      ++pos_;
      if (Status s = expr(); !s) return s;
      if (!is(")"))
        return Error{fmt::format("column {}: expected ')' to close the '(' at column {}, found {}",
                                 peek().column, t.column, found(peek()))};
      ++pos_;
      return Ok{};
    }
    if (t.kind == Token::Kind::Number) {
      ++pos_;
      add(Op::Const, -1, -1, t.number);
      return Ok{};
    }
    if (t.kind == Token::Kind::Name) {
      ++pos_;
      return name(t);
    }
    return Error{fmt::format("column {}: expected a value (a number, a name or '('), found {}",
                             t.column, found(t))};
  }
  static std::string found(const Token& t) {
    return t.kind == Token::Kind::End ? "the end" : "'" + t.text + "'";
  }
  Status name(const Token& t) {
    static const std::pair<const char*, Op> kNames[] = {
        {"depth", Op::Depth},       {"block", Op::Block}, {"pc", Op::Block},
        {"lane", Op::Lane},         {"fault", Op::Fault}, {"faulted", Op::Fault},
        {"finished", Op::Finished}, {"live", Op::Live}};
    for (const auto& [word, op] : kNames)
      if (t.text == word) {
        add(op);
        return Ok{};
      }
    if (t.text == "true" || t.text == "false") {
      add(Op::Const, -1, -1, t.text == "true" ? 1 : 0);
      return Ok{};
    }
    const std::vector<BlockInfo>& blocks = module_.blocks();
    for (size_t b = 0; b < blocks.size(); ++b)
      if (blocks[b].name == t.text) {
        add(Op::Const, -1, -1, static_cast<double>(b));
        return Ok{};
      }
    Expected<VariableReader> var = VariableReader::resolve(module_, t.text);
    if (!var) {
      std::string names;
      for (const VariableInfo& v : module_.variables())
        if (v.storage != VariableInfo::Storage::Temp && v.from_source)
          names += (names.empty() ? "" : ", ") + v.name;
      return Error{fmt::format(
          "column {}: unknown name '{}' (names: a variable ({}), a block such as {}, depth, "
          "block, lane, fault, finished, live)",
          t.column, t.text, names, blocks.empty() ? "fib.b0" : blocks.front().name)};
    }
    variables.push_back(std::move(*var));
    const int32_t n = add(Op::Var);
    nodes[n].var = static_cast<int32_t>(variables.size() - 1);
    return Ok{};
  }

  const std::vector<Token>& t_;
  const Module& module_;
  size_t pos_ = 0;
  int nesting_ = 0;
};

constexpr uint32_t kChunk = 2048;

bool truth(double v) {
  return v != 0 && !std::isnan(v);
}

}  // namespace

Expected<LaneFilter> LaneFilter::parse(std::string_view text, const Module& module) {
  // Columns count from the first character that is not a blank.
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t'))
    text.remove_prefix(1);
  Expected<std::vector<Token>> tokens = tokenize(text);
  if (!tokens) return tokens.failure();
  Parser p(*tokens, module);
  if (Status s = p.parse(); !s) return Error{s.error()};
  LaneFilter f;
  std::string trimmed(text);
  trimmed.erase(0, trimmed.find_first_not_of(" \t"));
  trimmed.erase(trimmed.find_last_not_of(" \t") + 1);
  f.text_ = trimmed;
  f.nodes_ = std::make_shared<const std::vector<Node>>(std::move(p.nodes));
  f.variables_ = std::make_shared<const std::vector<VariableReader>>(std::move(p.variables));
  return f;
}

void LaneFilter::evaluate_chunk(const LaneState& s, const uint32_t* lanes, uint32_t count,
                                std::vector<std::vector<double>>& scratch, uint8_t* out) const {
  const std::vector<Node>& nodes = *nodes_;
  if (scratch.size() != nodes.size()) scratch.assign(nodes.size(), std::vector<double>(kChunk));
  for (size_t n = 0; n < nodes.size(); ++n) {
    const Node& node = nodes[n];
    double* r = scratch[n].data();
    const double* a = node.a >= 0 ? scratch[node.a].data() : nullptr;
    const double* b = node.b >= 0 ? scratch[node.b].data() : nullptr;
    switch (node.op) {
      case Op::Const:
        std::fill(r, r + count, node.value);
        break;
      case Op::Depth:
        for (uint32_t i = 0; i < count; ++i)
          r[i] = s.is_finished(lanes[i]) ? 0.0 : s.depths[lanes[i]];
        break;
      case Op::Block:
        for (uint32_t i = 0; i < count; ++i)
          r[i] = s.pcs[lanes[i]];
        break;
      case Op::Lane:
        for (uint32_t i = 0; i < count; ++i)
          r[i] = lanes[i];
        break;
      case Op::Fault:
        for (uint32_t i = 0; i < count; ++i)
          r[i] = s.is_faulted(lanes[i]);
        break;
      case Op::Finished:
        for (uint32_t i = 0; i < count; ++i)
          r[i] = s.is_finished(lanes[i]);
        break;
      case Op::Live:
        for (uint32_t i = 0; i < count; ++i)
          r[i] = s.is_live(lanes[i]);
        break;
      case Op::Var: {
        const VariableReader& v = (*variables_)[node.var];
        for (uint32_t i = 0; i < count; ++i)
          r[i] = v.read(s, lanes[i]);
        break;
      }
      case Op::Neg:
        for (uint32_t i = 0; i < count; ++i)
          r[i] = -a[i];
        break;
      case Op::Not:
        for (uint32_t i = 0; i < count; ++i)
          r[i] = !truth(a[i]);
        break;
#define AB_BINARY(OP, EXPR)                \
  case Op::OP:                             \
    for (uint32_t i = 0; i < count; ++i) { \
      const double x = a[i], y = b[i];     \
      r[i] = (EXPR);                       \
    }                                      \
    break;
        AB_BINARY(Add, x + y)
        AB_BINARY(Sub, x - y)
        AB_BINARY(Mul, x * y)
        AB_BINARY(Div, x / y)
        AB_BINARY(Mod, std::fmod(x, y))
        AB_BINARY(Lt, x < y)
        AB_BINARY(Le, x <= y)
        AB_BINARY(Gt, x > y)
        AB_BINARY(Ge, x >= y)
        AB_BINARY(Eq, x == y)
        AB_BINARY(Ne, !std::isnan(x) && !std::isnan(y) && x != y)
        AB_BINARY(And, truth(x) && truth(y))
        AB_BINARY(Or, truth(x) || truth(y))
#undef AB_BINARY
    }
  }
  const double* root = scratch.back().data();
  for (uint32_t i = 0; i < count; ++i)
    out[i] = truth(root[i]);
}

uint32_t LaneFilter::evaluate(const LaneState& s, std::vector<uint8_t>& match) const {
  match.assign(s.lanes, 0);
  std::vector<std::vector<double>> scratch;
  std::vector<uint32_t> lanes(kChunk);
  uint32_t total = 0;
  for (uint32_t first = 0; first < s.lanes; first += kChunk) {
    const uint32_t count = std::min(kChunk, s.lanes - first);
    for (uint32_t i = 0; i < count; ++i)
      lanes[i] = first + i;
    evaluate_chunk(s, lanes.data(), count, scratch, match.data() + first);
    for (uint32_t i = 0; i < count; ++i)
      total += match[first + i];
  }
  return total;
}

bool LaneFilter::any(const LaneState& s, const std::vector<uint32_t>& lanes) const {
  std::vector<std::vector<double>> scratch;
  std::vector<uint8_t> out(kChunk);
  for (size_t first = 0; first < lanes.size(); first += kChunk) {
    const auto count = static_cast<uint32_t>(std::min<size_t>(kChunk, lanes.size() - first));
    evaluate_chunk(s, lanes.data() + first, count, scratch, out.data());
    if (std::find(out.begin(), out.begin() + count, 1) != out.begin() + count) return true;
  }
  return false;
}

}  // namespace ab::debugger
