#include "lang/parser.h"

#include <fmt/format.h>

#include <algorithm>

namespace ab::frontend {
namespace {

using namespace ast;

// Thrown after a syntax error has been reported; caught where the parser can resynchronize.
struct SyntaxError {};
// Thrown when parsing must stop altogether (too deep, too many errors).
struct StopParsing {};

bool is_assign_op(Tok t) {
  switch (t) {
    case Tok::Assign:
    case Tok::PlusAssign:
    case Tok::MinusAssign:
    case Tok::StarAssign:
    case Tok::SlashAssign:
    case Tok::PercentAssign:
    case Tok::AmpAssign:
    case Tok::PipeAssign:
    case Tok::CaretAssign:
    case Tok::ShlAssign:
    case Tok::ShrAssign:
      return true;
    default:
      return false;
  }
}

// Stan's log densities and mass functions, whose calls take `y | parameters`.
bool is_density_name(const std::string& name) {
  auto ends = [&](const char* suffix) {
    const size_t n = std::char_traits<char>::length(suffix);
    return name.size() > n && name.compare(name.size() - n, n, suffix) == 0;
  };
  return ends("_lpdf") || ends("_lpmf");
}

bool is_comparison(Tok t) {
  return t == Tok::Eq || t == Tok::Ne || t == Tok::Lt || t == Tok::Le || t == Tok::Gt ||
         t == Tok::Ge;
}

class Parser {
 public:
  Parser(const std::vector<Token>& tokens, Diagnostics& diags, size_t max_errors)
      : toks_(tokens), diags_(diags), max_errors_(max_errors) {}

  Module run() {
    Module m;
    try {
      while (!at(Tok::End)) {
        try {
          item(m);
        } catch (const SyntaxError&) {
          sync_top_level();
        }
      }
    } catch (const StopParsing&) {
    }
    return m;
  }

 private:
  // ---- token access -------------------------------------------------------------------------
  const Token& cur() const { return toks_[std::min(pos_, toks_.size() - 1)]; }
  const Token& peek(size_t ahead) const { return toks_[std::min(pos_ + ahead, toks_.size() - 1)]; }
  bool at(Tok k) const { return cur().kind == k; }
  const Token& take() {
    const Token& t = cur();
    if (pos_ < toks_.size() - 1) ++pos_;
    return t;
  }
  bool accept(Tok k) {
    if (!at(k)) return false;
    take();
    return true;
  }
  [[noreturn]] void fail(SourceLoc loc, std::string message) {
    report(loc, std::move(message));
    throw SyntaxError{};
  }
  void report(SourceLoc loc, std::string message) {
    diags_.error(loc, std::move(message));
    if (++errors_ >= max_errors_) throw StopParsing{};
  }
  const Token& expect(Tok k, const char* context) {
    if (!at(k))
      fail(cur().loc,
           fmt::format("expected {} {}, found {}", describe(k), context, describe(cur())));
    return take();
  }
  std::string expect_ident(const char* what) {
    if (!at(Tok::Ident)) {
      fail(cur().loc, fmt::format("expected {}, found {}", what, describe(cur())));
    }
    return take().text;
  }

  // Guards every recursive descent so hostile input cannot exhaust the stack.
  struct Nest {
    Parser& p;
    explicit Nest(Parser& parser, SourceLoc loc) : p(parser) {
      if (++p.nesting_ > kMaxNesting) {
        p.diags_.error(loc, fmt::format("nesting too deep (more than {} levels)", kMaxNesting));
        throw StopParsing{};
      }
    }
    ~Nest() { --p.nesting_; }
  };

  ExprPtr node(ExprKind kind, SourceLoc loc) {
    auto e = std::make_unique<Expr>();
    e->kind = kind;
    e->loc = loc;
    return e;
  }
  // Computes the node's height; long operator chains build deep trees without deep recursion
  // here, so the height is checked too.
  ExprPtr finish(ExprPtr e) {
    int d = 0;
    for (const ExprPtr& a : e->args)
      d = std::max(d, a->depth);
    e->depth = d + 1;
    if (e->depth > kMaxNesting) {
      diags_.error(e->op_loc.line ? e->op_loc : e->loc,
                   fmt::format("expression nested too deeply (more than {} levels)", kMaxNesting));
      throw StopParsing{};
    }
    return e;
  }

  // ---- recovery -----------------------------------------------------------------------------
  bool at_item_start() const {
    switch (cur().kind) {
      case Tok::KwFn:
      case Tok::KwStruct:
      case Tok::KwConst:
        return true;
      case Tok::KwUniform:
        return peek(1).kind == Tok::Ident;
      default:
        return false;
    }
  }
  // Every item() call consumes a token or fails on a token that starts no item, so this makes
  // progress.
  void sync_top_level() {
    while (!at(Tok::End) && !at_item_start())
      take();
  }
  // Skips the rest of a bad statement: through the next ';' at this brace depth, or up to the
  // '}' closing the enclosing block, or to the next top-level item.
  void sync_statement() {
    int depth = 0;
    while (!at(Tok::End)) {
      if (at(Tok::LBrace)) {
        ++depth;
      } else if (at(Tok::RBrace)) {
        if (depth == 0) return;
        --depth;
        if (depth == 0) {
          take();
          return;
        }
      } else if (at(Tok::Semi) && depth == 0) {
        take();
        return;
      } else if (depth == 0 && (at(Tok::KwFn) || at(Tok::KwStruct))) {
        return;
      }
      take();
    }
  }

  // ---- items --------------------------------------------------------------------------------
  void item(Module& m) {
    const Token& t = cur();
    switch (t.kind) {
      case Tok::KwStruct:
        return struct_decl(m);
      case Tok::KwConst:
        return const_decl(m);
      case Tok::KwUniform:
        return uniform_decl(m);
      case Tok::KwFn:
        return fn_decl(m);
      default:
        fail(t.loc,
             fmt::format("expected 'fn', 'struct', 'const' or 'uniform', found {}", describe(t)));
    }
  }

  void struct_decl(Module& m) {
    StructDecl s;
    s.loc = take().loc;
    s.name_loc = cur().loc;
    s.name = expect_ident("a struct name");
    expect(Tok::LBrace, "after the struct name");
    while (!at(Tok::RBrace)) {
      FieldDecl f;
      f.loc = cur().loc;
      f.name = expect_ident("a field name");
      expect(Tok::Colon, "after the field name");
      f.type = type();
      s.fields.push_back(std::move(f));
      if (!accept(Tok::Comma)) break;
    }
    expect(Tok::RBrace, "at the end of the struct");
    m.structs.push_back(std::move(s));
  }

  void const_decl(Module& m) {
    ConstDecl c;
    c.loc = take().loc;
    c.name_loc = cur().loc;
    c.name = expect_ident("a constant name");
    if (!at(Tok::Colon))
      fail(cur().loc, fmt::format("constant '{}' needs a type: const {}: T = ...", c.name, c.name));
    take();
    c.type = type();
    expect(Tok::Assign, "in a constant declaration");
    c.init = expr();
    expect(Tok::Semi, "after the constant declaration");
    m.consts.push_back(std::move(c));
  }

  void uniform_decl(Module& m) {
    UniformDecl u;
    u.loc = take().loc;
    u.name_loc = cur().loc;
    u.name = expect_ident("a uniform name");
    expect(Tok::Colon, "after the uniform name");
    u.type = type();
    if (at(Tok::Assign)) {
      take();
      u.init = expr();
    }
    expect(Tok::Semi, "after the uniform declaration");
    m.uniforms.push_back(std::move(u));
  }

  void fn_decl(Module& m) {
    FnDecl f;
    f.loc = take().loc;
    f.name_loc = cur().loc;
    f.name = expect_ident("a function name");
    expect(Tok::LParen, "after the function name");
    while (!at(Tok::RParen)) {
      Param p;
      p.loc = cur().loc;
      p.name = expect_ident("a parameter name");
      expect(Tok::Colon, "after the parameter name");
      p.type = type();
      f.params.push_back(std::move(p));
      if (!accept(Tok::Comma)) break;
    }
    expect(Tok::RParen, "after the parameters");
    if (accept(Tok::Arrow)) f.result = type();
    if (!at(Tok::LBrace))
      fail(cur().loc, fmt::format("expected '{{' to start the body of '{}', found {}", f.name,
                                  describe(cur())));
    block(f.body);
    m.functions.push_back(std::move(f));
  }

  TypeExpr type() {
    TypeExpr t;
    t.loc = cur().loc;
    switch (cur().kind) {
      case Tok::Ident:
      case Tok::KwBool:
      case Tok::KwInt:
      case Tok::KwUInt:
      case Tok::KwFloat:
        t.name = take().text;
        break;
      default:
        fail(cur().loc, fmt::format("expected a type, found {}", describe(cur())));
    }
    if (at(Tok::Lt)) bounds(t);
    while (at(Tok::LBracket)) {
      const SourceLoc open = take().loc;
      if (at(Tok::RBracket)) fail(cur().loc, "expected an array length");
      Nest n(*this, open);
      t.dims.push_back(expr());
      expect(Tok::RBracket, "after the array length");
    }
    return t;
  }

  // `<lower=A, upper=B>` after a type's name, either or both, in that order. The bound
  // expressions are parsed above comparisons so that the closing '>' ends them.
  void bounds(TypeExpr& t) {
    t.bounds_loc = take().loc;
    do {
      const SourceLoc key = cur().loc;
      const std::string name = expect_ident("'lower' or 'upper'");
      ExprPtr* slot = name == "lower" ? &t.lower : name == "upper" ? &t.upper : nullptr;
      if (!slot) fail(key, fmt::format("expected 'lower' or 'upper', found '{}'", name));
      if (*slot) fail(key, fmt::format("'{}' given twice", name));
      if (slot == &t.lower && t.upper) fail(key, "'lower' goes before 'upper'");
      expect(Tok::Assign, fmt::format("after '{}'", name).c_str());
      *slot = bound_expr();
    } while (accept(Tok::Comma));
    expect(Tok::Gt, "to close the bounds");
  }

  // ---- statements ---------------------------------------------------------------------------
  void block(Block& b) {
    Nest n(*this, cur().loc);
    b.loc = expect(Tok::LBrace, "to open a block").loc;
    while (!at(Tok::RBrace)) {
      if (at(Tok::End)) fail(cur().loc, "expected '}' before end of file");
      if (at(Tok::KwFn) || at(Tok::KwStruct))
        fail(cur().loc, fmt::format("expected '}}' before {}", describe(cur())));
      try {
        b.stmts.push_back(statement());
      } catch (const SyntaxError&) {
        // At a new item or the end of input this block cannot be closed: let the top level
        // resynchronize instead of reporting the same missing '}' once per enclosing block.
        if (at(Tok::End) || at(Tok::KwFn) || at(Tok::KwStruct)) throw;
        sync_statement();
      }
    }
    b.end_loc = take().loc;
  }

  std::unique_ptr<Block> block_ptr() {
    auto b = std::make_unique<Block>();
    if (!at(Tok::LBrace)) fail(cur().loc, fmt::format("expected '{{', found {}", describe(cur())));
    block(*b);
    return b;
  }

  StmtPtr stmt(StmtKind kind, SourceLoc loc) {
    auto s = std::make_unique<Stmt>();
    s->kind = kind;
    s->loc = loc;
    return s;
  }

  StmtPtr statement() {
    const Token& t = cur();
    switch (t.kind) {
      case Tok::KwLet:
      case Tok::KwVar: {
        const bool is_let = t.kind == Tok::KwLet;
        auto s = stmt(is_let ? StmtKind::Let : StmtKind::Var, take().loc);
        s->name_loc = cur().loc;
        s->name = expect_ident("a variable name");
        if (accept(Tok::Colon)) s->type = type();
        if (accept(Tok::Assign)) {
          s->expr = expr();
        } else if (is_let) {
          fail(cur().loc,
               fmt::format("expected '=' after 'let {}', found {}", s->name, describe(cur())));
        } else if (!s->type) {
          fail(cur().loc, fmt::format("'var {}' needs a type or an initial value", s->name));
        }
        expect(Tok::Semi, "after the declaration");
        return s;
      }
      case Tok::KwIf:
        return if_statement();
      case Tok::KwWhile: {
        auto s = stmt(StmtKind::While, take().loc);
        s->expr = condition();
        s->body = block_ptr();
        return s;
      }
      case Tok::KwFor: {
        auto s = stmt(StmtKind::For, take().loc);
        s->name_loc = cur().loc;
        s->name = expect_ident("a loop variable name");
        expect(Tok::KwIn, "after the loop variable");
        s->expr = condition();
        expect(Tok::DotDot, "in the range 'a..b'");
        s->expr2 = condition();
        s->body = block_ptr();
        return s;
      }
      case Tok::KwBreak:
      case Tok::KwContinue: {
        auto s = stmt(t.kind == Tok::KwBreak ? StmtKind::Break : StmtKind::Continue, take().loc);
        expect(Tok::Semi, s->kind == StmtKind::Break ? "after 'break'" : "after 'continue'");
        return s;
      }
      case Tok::KwReturn: {
        auto s = stmt(StmtKind::Return, take().loc);
        if (!at(Tok::Semi)) s->expr = expr();
        expect(Tok::Semi, "after the return statement");
        return s;
      }
      case Tok::KwAssert: {
        auto s = stmt(StmtKind::Assert, take().loc);
        expect(Tok::LParen, "after 'assert'");
        s->expr = expr();
        expect(Tok::RParen, "after the assertion");
        expect(Tok::Semi, "after the assertion");
        return s;
      }
      case Tok::LBrace: {
        auto s = stmt(StmtKind::Block, t.loc);
        s->body = block_ptr();
        return s;
      }
      case Tok::Semi:
        fail(t.loc, "empty statement ';'");
      default:
        break;
    }
    ExprPtr e = expr();
    if (is_assign_op(cur().kind)) {
      auto s = stmt(StmtKind::Assign, e->loc);
      s->assign_op = cur().kind;
      s->op_loc = take().loc;
      s->expr2 = std::move(e);
      s->expr = expr();
      expect(Tok::Semi, "after the assignment");
      return s;
    }
    auto s = stmt(StmtKind::Expr, e->loc);
    s->expr = std::move(e);
    expect(Tok::Semi, "after the expression");
    return s;
  }

  // `else if` arms are parsed in a loop: a chain of them is not nesting.
  StmtPtr if_statement() {
    auto s = stmt(StmtKind::If, take().loc);
    s->expr = condition();
    s->body = block_ptr();
    while (accept(Tok::KwElse)) {
      if (!at(Tok::KwIf)) {
        s->else_body = block_ptr();
        break;
      }
      ElseIf arm;
      arm.loc = take().loc;
      arm.condition = condition();
      arm.body = block_ptr();
      s->else_ifs.push_back(std::move(arm));
    }
    return s;
  }

  // An expression in a position followed by '{' (if, while, for): a bare `Name {` there starts
  // the block, not a struct literal.
  ExprPtr condition() {
    const bool saved = no_struct_literal_;
    no_struct_literal_ = true;
    ExprPtr e = expr();
    no_struct_literal_ = saved;
    return e;
  }

  // ---- expressions --------------------------------------------------------------------------
  ExprPtr expr() {
    Nest n(*this, cur().loc);
    return logic_or();
  }

  ExprPtr binary(Tok op, SourceLoc op_loc, ExprPtr lhs, ExprPtr rhs) {
    auto e = node(ExprKind::Binary, lhs->loc);
    e->op = op;
    e->op_loc = op_loc;
    e->args.push_back(std::move(lhs));
    e->args.push_back(std::move(rhs));
    return finish(std::move(e));
  }

  ExprPtr logic_or() {
    ExprPtr e = logic_and();
    while (at(Tok::PipePipe)) {
      const SourceLoc op = take().loc;
      e = binary(Tok::PipePipe, op, std::move(e), logic_and());
    }
    return e;
  }
  ExprPtr logic_and() {
    ExprPtr e = comparison();
    while (at(Tok::AmpAmp)) {
      const SourceLoc op = take().loc;
      e = binary(Tok::AmpAmp, op, std::move(e), comparison());
    }
    return e;
  }
  ExprPtr comparison() {
    ExprPtr e = bit_or();
    if (is_comparison(cur().kind)) {
      const Tok op = cur().kind;
      const SourceLoc op_loc = take().loc;
      e = binary(op, op_loc, std::move(e), bit_or());
      if (is_comparison(cur().kind))
        fail(cur().loc, "comparison operators cannot be chained; use parentheses");
    }
    return e;
  }
  template <typename Next>
  ExprPtr left_assoc(std::initializer_list<Tok> ops, Next next) {
    ExprPtr e = (this->*next)();
    while (std::find(ops.begin(), ops.end(), cur().kind) != ops.end()) {
      const Tok op = cur().kind;
      const SourceLoc op_loc = take().loc;
      e = binary(op, op_loc, std::move(e), (this->*next)());
    }
    return e;
  }
  ExprPtr bound_expr() {
    Nest n(*this, cur().loc);
    return bit_or();
  }
  // The first argument of a density's call: an expression up to a `|` (bit_xor binds tighter).
  ExprPtr density_outcome() {
    Nest n(*this, cur().loc);
    return bit_xor();
  }
  ExprPtr bit_or() { return left_assoc({Tok::Pipe}, &Parser::bit_xor); }
  ExprPtr bit_xor() { return left_assoc({Tok::Caret}, &Parser::bit_and); }
  ExprPtr bit_and() { return left_assoc({Tok::Amp}, &Parser::shift); }
  ExprPtr shift() { return left_assoc({Tok::Shl, Tok::Shr}, &Parser::additive); }
  ExprPtr additive() { return left_assoc({Tok::Plus, Tok::Minus}, &Parser::multiplicative); }
  ExprPtr multiplicative() {
    return left_assoc({Tok::Star, Tok::Slash, Tok::Percent, Tok::At}, &Parser::unary);
  }

  ExprPtr unary() {
    if (at(Tok::Minus) || at(Tok::Bang) || at(Tok::Tilde)) {
      Nest n(*this, cur().loc);
      const Token& t = take();
      auto e = node(ExprKind::Unary, t.loc);
      e->op = t.kind;
      e->op_loc = t.loc;
      e->args.push_back(unary());
      return finish(std::move(e));
    }
    return postfix();
  }

  ExprPtr postfix() {
    ExprPtr e = primary();
    for (;;) {
      if (at(Tok::LParen)) {
        if (e->kind != ExprKind::Name) fail(cur().loc, "only named functions can be called");
        e->kind = ExprKind::Call;
        e->op_loc = take().loc;
        const bool saved = no_struct_literal_;
        no_struct_literal_ = false;
        while (!at(Tok::RParen)) {
          // Stan's `normal_lpdf(y | mu, sigma)`: in a density's call a `|` ends the first
          // argument (a bitwise or there needs parentheses); a comma does too.
          if (e->args.empty() && is_density_name(e->name)) {
            e->args.push_back(density_outcome());
            if (accept(Tok::Pipe) || accept(Tok::Comma)) continue;
            break;
          }
          e->args.push_back(expr());
          if (!accept(Tok::Comma)) break;
        }
        no_struct_literal_ = saved;
        expect(Tok::RParen, "after the arguments");
        e = finish(std::move(e));
      } else if (at(Tok::LBracket)) {
        auto ix = node(ExprKind::Index, e->loc);
        ix->op_loc = take().loc;
        const bool saved = no_struct_literal_;
        no_struct_literal_ = false;
        ix->args.push_back(std::move(e));
        ix->args.push_back(expr());
        no_struct_literal_ = saved;
        expect(Tok::RBracket, "after the index");
        e = finish(std::move(ix));
      } else if (at(Tok::Dot)) {
        auto f = node(ExprKind::Field, e->loc);
        take();
        f->op_loc = cur().loc;
        f->name = expect_ident("a field name after '.'");
        f->args.push_back(std::move(e));
        e = finish(std::move(f));
      } else {
        return e;
      }
    }
  }

  ExprPtr primary() {
    const Token& t = cur();
    switch (t.kind) {
      case Tok::IntLit: {
        auto e = node(ExprKind::IntLit, take().loc);
        e->int_value = t.int_value;
        e->unsigned_suffix = t.unsigned_suffix;
        e->hex = t.hex;
        return e;
      }
      case Tok::FloatLit: {
        auto e = node(ExprKind::FloatLit, take().loc);
        e->float_value = t.float_value;
        return e;
      }
      case Tok::KwTrue:
      case Tok::KwFalse: {
        auto e = node(ExprKind::BoolLit, take().loc);
        e->bool_value = t.kind == Tok::KwTrue;
        return e;
      }
      case Tok::KwInt:
      case Tok::KwUInt:
      case Tok::KwFloat:
      case Tok::KwBool:
      case Tok::KwUniform: {
        // Conversions int(x) and the random-number builtin uniform() are calls by name.
        auto e = node(ExprKind::Name, take().loc);
        e->name = t.text;
        if (!at(Tok::LParen))
          fail(cur().loc,
               fmt::format("expected '(' after '{}', found {}", t.text, describe(cur())));
        return e;
      }
      case Tok::Ident: {
        auto e = node(ExprKind::Name, take().loc);
        e->name = t.text;
        if (at(Tok::LBrace) && !no_struct_literal_) return struct_literal(std::move(e));
        return e;
      }
      case Tok::LParen: {
        take();
        const bool saved = no_struct_literal_;
        no_struct_literal_ = false;
        ExprPtr e = expr();
        no_struct_literal_ = saved;
        expect(Tok::RParen, "to close '('");
        e->parenthesized = true;
        return e;
      }
      case Tok::LBracket:
        return array_literal();
      default:
        fail(t.loc, fmt::format("expected an expression, found {}", describe(t)));
    }
  }

  ExprPtr struct_literal(ExprPtr name) {
    auto e = node(ExprKind::StructLit, name->loc);
    e->name = name->name;
    e->op_loc = take().loc;  // '{'
    const bool saved = no_struct_literal_;
    no_struct_literal_ = false;
    while (!at(Tok::RBrace)) {
      e->field_locs.push_back(cur().loc);
      e->field_names.push_back(expect_ident("a field name"));
      expect(Tok::Colon, "after the field name");
      e->args.push_back(expr());
      if (!accept(Tok::Comma)) break;
    }
    no_struct_literal_ = saved;
    expect(Tok::RBrace, "at the end of the struct literal");
    return finish(std::move(e));
  }

  ExprPtr array_literal() {
    auto e = node(ExprKind::ArrayLit, cur().loc);
    e->op_loc = take().loc;
    const bool saved = no_struct_literal_;
    no_struct_literal_ = false;
    if (at(Tok::RBracket)) fail(cur().loc, "an array literal needs at least one element");
    e->args.push_back(expr());
    if (accept(Tok::Semi)) {
      e->kind = ExprKind::RepeatLit;
      e->args.push_back(expr());
    } else {
      while (accept(Tok::Comma)) {
        if (at(Tok::RBracket)) break;
        e->args.push_back(expr());
      }
    }
    no_struct_literal_ = saved;
    expect(Tok::RBracket, "at the end of the array literal");
    return finish(std::move(e));
  }

  const std::vector<Token>& toks_;
  Diagnostics& diags_;
  size_t max_errors_;
  size_t errors_ = 0;
  size_t pos_ = 0;
  int nesting_ = 0;
  bool no_struct_literal_ = false;
};

}  // namespace

ast::Module parse(const std::vector<Token>& tokens, Diagnostics& diags, size_t max_errors) {
  return Parser(tokens, diags, max_errors).run();
}

}  // namespace ab::frontend
