// The syntax tree the parser builds and the checker lowers to IR. Plain data: every node keeps
// the source locations the checker needs for its messages.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "lang/token.h"

namespace ab::frontend::ast {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

enum class ExprKind : uint8_t {
  IntLit,
  FloatLit,
  BoolLit,
  Name,
  Unary,
  Binary,
  Call,
  Index,
  Field,
  StructLit,
  ArrayLit,
  RepeatLit,
};

struct Expr {
  ExprKind kind = ExprKind::IntLit;
  SourceLoc loc;      // where the expression starts
  SourceLoc op_loc;   // Unary/Binary: the operator; Index: '['; Field: the field name; Call: '('
  Tok op = Tok::End;  // Unary/Binary
  std::string name;   // Name, Call (callee), Field (field), StructLit (struct)
  uint64_t int_value = 0;        // IntLit
  bool unsigned_suffix = false;  // IntLit
  bool hex = false;              // IntLit
  float float_value = 0;         // FloatLit
  bool bool_value = false;       // BoolLit
  bool parenthesized = false;    // written in parentheses: `-(2147483648)` is no int literal
  // Unary: {operand}; Binary: {lhs, rhs}; Call: arguments; Index: {base, index};
  // Field: {base}; StructLit: field values; ArrayLit: elements; RepeatLit: {value, count}.
  std::vector<ExprPtr> args;
  std::vector<std::string> field_names;  // StructLit, parallel to args
  std::vector<SourceLoc> field_locs;     // StructLit, parallel to args
  int depth = 1;                         // height of this subtree
};

struct TypeExpr {
  std::string name;  // "int", "float", a struct name, ...
  SourceLoc loc;
  std::vector<ExprPtr> dims;  // T[A][B]: {A, B}, outermost first
  // float<lower=A, upper=B>: constant expressions, on struct fields only (FloatBounds).
  ExprPtr lower, upper;
  SourceLoc bounds_loc;  // the '<'
  // A bound that uses earlier fields or data (lang/dependent_bounds.cpp): the function computing
  // it from the struct, which took the expression over (lower/upper are then null).
  std::string lower_fn, upper_fn;
};

struct Stmt;
using StmtPtr = std::unique_ptr<Stmt>;
struct Block;

// One `else if c { }` of an if statement.
struct ElseIf {
  SourceLoc loc;  // the `if` after `else`
  ExprPtr condition;
  std::unique_ptr<Block> body;
};

struct Block {
  std::vector<StmtPtr> stmts;
  SourceLoc loc;      // '{'
  SourceLoc end_loc;  // '}'
};

enum class StmtKind : uint8_t {
  Let,
  Var,
  Assign,
  If,
  While,
  For,
  Break,
  Continue,
  Return,
  Assert,
  Expr,
  Block,
};

struct Stmt {
  StmtKind kind = StmtKind::Expr;
  SourceLoc loc;     // the statement's first token
  std::string name;  // Let/Var/For: the variable
  SourceLoc name_loc;
  std::optional<TypeExpr> type;  // Let/Var
  // Let/Var: initializer (may be null for Var); Assign: value; If/While: condition;
  // For: lower bound; Return: value (may be null); Assert: condition; Expr: the expression.
  ExprPtr expr;
  ExprPtr expr2;                // Assign: target; For: upper bound
  Tok assign_op = Tok::Assign;  // Assign: '=' or a compound operator
  SourceLoc op_loc;             // Assign: the operator
  std::unique_ptr<Block> body;  // If (then), While, For, Block
  // If: the `else if` arms in order, then the final `else` block (may be null). A chain of
  // `else if`s is a list, not a nesting, so that a long one costs no depth anywhere.
  std::vector<ElseIf> else_ifs;
  std::unique_ptr<Block> else_body;
};

struct FieldDecl {
  std::string name;
  SourceLoc loc;
  TypeExpr type;
};

struct StructDecl {
  std::string name;
  SourceLoc loc, name_loc;
  std::vector<FieldDecl> fields;
};

struct ConstDecl {
  std::string name;
  SourceLoc loc, name_loc;
  TypeExpr type;
  ExprPtr init;
};

struct UniformDecl {
  std::string name;
  SourceLoc loc, name_loc;
  TypeExpr type;
  // `uniform logw: float[N] = log(weight);`: Stan's transformed data, computed from the data
  // when the uniforms are bound (lang/transformed_data.h); null for a uniform the caller binds.
  ExprPtr init;
};

struct Param {
  std::string name;
  SourceLoc loc;
  TypeExpr type;
};

struct FnDecl {
  std::string name;
  SourceLoc loc, name_loc;
  std::vector<Param> params;
  std::optional<TypeExpr> result;
  Block body;
  bool library = false;  // from the draws' library (lang/rng_library.cpp), not the user's source
  std::string bound_of;  // a dependent bound's function: "the upper bound of 'beta1'"
  std::string transformed_data;  // a transformed data's function: the uniform it computes
};

struct Module {
  std::vector<StructDecl> structs;
  std::vector<ConstDecl> consts;
  std::vector<UniformDecl> uniforms;
  std::vector<FnDecl> functions;
};

}  // namespace ab::frontend::ast
