// Internal to the front end: the state shared by the statement, expression and builtin halves of
// the function builder (function_builder.cpp, expressions.cpp, builtins.cpp).
#pragma once

#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "ir/diagnostics.h"
#include "ir/ir.h"
#include "lang/ast.h"
#include "lang/const_eval.h"
#include "lang/globals.h"

namespace ab::frontend {

constexpr TypeId kPoison = -1;  // the type of an expression that already failed to check

// The result of an expression: the variable holding it and its type.
struct Value {
  VarId var = -1;
  TypeId type = kPoison;
  bool fresh = false;   // a temporary made by this expression: it may be renamed into a local
  bool single = false;  // defined only by the last op of the current block: it may be retargeted
  bool ok() const { return type != kPoison && type != Types::kVoid; }
};

// An assignable place: a local variable and an access path into it.
struct Place {
  VarId root = -1;
  std::vector<PathStep> path;
  std::vector<VarId> indices;  // dynamic index variables, in path order
  TypeId type = kPoison;
};

// An access path being built over some base type.
struct Access {
  std::vector<PathStep> path;
  std::vector<VarId> indices;
  TypeId type = kPoison;
};

class BuiltinCall;
class Composer;
class DistributionCall;
class LinearAlgebraCall;

class FunctionBuilder {
 public:
  FunctionBuilder(Globals& globals, const ast::FnDecl& decl, int index, Program& program,
                  Diagnostics& diags);
  void build();

 private:
  enum class LocalKind : uint8_t { Param, Let, Var, LoopIndex };
  struct Local {
    VarId var = -1;
    TypeId type = kPoison;
    LocalKind kind = LocalKind::Var;
  };
  struct Loop {
    int continue_block = -1;
    int break_block = -1;
  };

  // ---- statements (function_builder.cpp) ----
  void block(const ast::Block& b);
  void statement(const ast::Stmt& s);
  void declaration(const ast::Stmt& s);
  void assignment(const ast::Stmt& s);
  void if_statement(const ast::Stmt& s);
  void while_statement(const ast::Stmt& s);
  void for_statement(const ast::Stmt& s);
  void return_statement(const ast::Stmt& s);
  VarId condition(const ast::Expr& e, const char* what);
  void finish();

  // ---- expressions (expressions.cpp) ----
  Value expr(const ast::Expr& e, TypeId hint, bool allow_void = false);
  Value literal(const ast::Expr& e, TypeId hint);
  Value name(const ast::Expr& e);
  Value unary(const ast::Expr& e, TypeId hint);
  Value binary(const ast::Expr& e, TypeId hint);
  Value logical(const ast::Expr& e);
  Value access(const ast::Expr& e);
  bool walk_path(const std::vector<const ast::Expr*>& chain, TypeId base, Access& out);
  Value struct_literal(const ast::Expr& e);
  Value array_literal(const ast::Expr& e, TypeId hint);
  Value repeat_literal(const ast::Expr& e, TypeId hint);
  std::optional<Place> place(const ast::Expr& target);
  // Evaluates operands whose types must agree: typed ones first in order, then literals whose
  // type follows theirs (or `hint`); results in the operands' order.
  std::vector<Value> operands(const std::vector<ast::ExprPtr>& exprs, TypeId hint);
  std::optional<ConstScalar> fold(const ast::Expr& e, TypeId hint);

  // ---- calls (builtins.cpp) ----
  Value call(const ast::Expr& e, TypeId hint, bool allow_void);
  std::optional<Value> builtin(const ast::Expr& e, TypeId hint);
  Value emit_call(const ast::Expr& e, bool allow_void);
  Value derivative(const ast::Expr& e);
  // Stan's densities and draws (distributions.cpp): nullopt if `e` calls none of them.
  std::optional<Value> distribution(const ast::Expr& e);
  // cholesky_decompose, mdivide_left_tri_low, gp_exp_quad_cov, add_diag, log_determinant,
  // multi_normal_cholesky_lpdf (linear_algebra.cpp): nullopt if `e` calls none of them.
  std::optional<Value> linear_algebra(const ast::Expr& e);
  friend class BuiltinCall;  // builtins.cpp: one builtin's checks and ops
  friend class Composer;     // distributions.cpp: a distribution's ops
  friend class DistributionCall;
  friend class LinearAlgebraCall;  // linear_algebra.cpp
  TypeId with_leaf(TypeId t, TypeId scalar);
  // a @ b, or transpose(a) (b unused): the op, or an error naming the shapes at `loc`.
  Value matrix_op(OpCode code, const Value& a, const Value& b, SourceLoc loc);

  // ---- emission helpers (function_builder.cpp) ----
  Types& types() { return program_.types; }
  std::string type_name(TypeId t) { return t < 0 ? "<error>" : types().to_string(t); }
  void error(SourceLoc loc, std::string message) { diags_.error(loc, std::move(message)); }
  VarId new_var(std::string name, TypeId type, bool temp);
  VarId temp(TypeId type) { return new_var("", type, true); }
  VarId local(const std::string& name, TypeId type) { return new_var(name, type, false); }
  void rename_to_local(VarId v, const std::string& name);
  std::string unique_name(const std::string& name);
  Op& emit(OpCode code, VarId dst, std::vector<VarId> args, SourceLoc loc);
  Value op_value(OpCode code, TypeId type, std::vector<VarId> args, SourceLoc loc);
  Value constant(TypeId type, std::vector<uint32_t> words, SourceLoc loc);
  // The structural ops the expressions build: target = source; a struct or array of `parts`;
  // base[path] with the path's dynamic `indices`; uniform u's [path].
  void copy(VarId target, VarId source, SourceLoc loc);
  Value make(TypeId type, std::vector<VarId> parts, SourceLoc loc);
  Value get(TypeId type, VarId base, const std::vector<VarId>& indices, std::vector<PathStep> path,
            SourceLoc loc);
  Value uniform_get(int u, TypeId type, std::vector<VarId> indices, std::vector<PathStep> path,
                    SourceLoc loc);
  // Stores `v` into variable `target`, retargeting the op that computed it when possible.
  void store(const Value& v, VarId target, SourceLoc loc);
  int new_block(SourceLoc loc, bool provisional = true);
  void switch_to(int block);
  void ensure_open();
  void terminate(Terminator term);
  void jump(int target, SourceLoc loc);
  bool open() const { return open_; }
  ConstLookup const_lookup();
  const Local* find_local(const std::string& name) const;
  void declare_local(const std::string& name, SourceLoc loc, Local local);

  Globals& globals_;
  const ast::FnDecl& decl_;
  Program& program_;
  Function& fn_;
  Diagnostics& diags_;
  const Signature& sig_;
  std::vector<bool> is_temp_;
  std::set<std::string> used_names_;
  std::vector<std::unordered_map<std::string, Local>> scopes_;
  std::vector<Loop> loops_;
  std::vector<bool> provisional_loc_;
  int current_ = 0;
  bool open_ = true;
  int end_block_ = -1;  // the block that falls off the end of the body, if any
};

}  // namespace ab::frontend
