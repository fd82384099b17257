// Compile-time evaluation of constant expressions (const initializers, array lengths, constant
// indices, foldable subexpressions). Every operation goes through eval_scalar from ir/ops.h, so a
// folded constant is bit-identical to what the same expression computes at run time.
//
// Also home of the integer-literal typing rule: an unsuffixed integer literal takes the type the
// context expects when that is uint or float, and is an int otherwise.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "ir/diagnostics.h"
#include "ir/types.h"
#include "lang/ast.h"

namespace ab::frontend {

struct ConstScalar {
  TypeId type = Types::kInt;  // a scalar type
  uint32_t bits = 0;
};

// Resolves a name inside a constant expression: the constant's value, or nullopt when the name is
// not a usable constant (reporting why to `diags` when it is non-null).
using ConstLookup =
    std::function<std::optional<ConstScalar>(const ast::Expr& name, Diagnostics* diags)>;

// True for integer literals without suffix and -, ~ and arithmetic over only such literals: the
// expressions whose type follows the context.
bool is_flexible_literal(const ast::Expr& e);

// Types an integer literal for a context expecting `hint` (its leaf type is used; -1 = none).
std::optional<ConstScalar> int_literal(const Types& types, const ast::Expr& lit, TypeId hint,
                                       std::string& error);

// Evaluates `e` as a constant scalar expression. With `diags`, every reason it is not a valid
// constant is reported; without, the evaluation just fails quietly (used to probe whether a
// run-time expression happens to be constant).
std::optional<ConstScalar> eval_const(const Types& types, const ConstLookup& lookup,
                                      const ast::Expr& e, TypeId hint, Diagnostics* diags);

}  // namespace ab::frontend
