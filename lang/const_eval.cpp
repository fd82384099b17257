#include "lang/const_eval.h"

#include <fmt/format.h>

#include "ir/ops.h"
#include "lang/operators.h"

namespace ab::frontend {
namespace {

using ast::Expr;
using ast::ExprKind;

bool is_compare_or_logic(Tok op) {
  switch (op) {
    case Tok::Eq:
    case Tok::Ne:
    case Tok::Lt:
    case Tok::Le:
    case Tok::Gt:
    case Tok::Ge:
    case Tok::AmpAmp:
    case Tok::PipePipe:
      return true;
    default:
      return false;
  }
}

class Folder {
 public:
  Folder(const Types& types, const ConstLookup& lookup, Diagnostics* diags)
      : types_(types), lookup_(lookup), diags_(diags) {}

  std::optional<ConstScalar> eval(const Expr& e, TypeId hint) {
    switch (e.kind) {
      case ExprKind::IntLit: {
        std::string error;
        auto v = int_literal(types_, e, hint, error);
        if (!v) report(e.loc, error);
        return v;
      }
      case ExprKind::FloatLit:
        return ConstScalar{Types::kFloat, float_bits(e.float_value)};
      case ExprKind::BoolLit:
        return ConstScalar{Types::kBool, e.bool_value ? 1u : 0u};
      case ExprKind::Name:
        return lookup_(e, diags_);
      case ExprKind::Unary:
        return unary(e, hint);
      case ExprKind::Binary:
        return binary(e, hint);
      case ExprKind::Call:
        return call(e);
      default:
        report(e.loc, "not a constant expression");
        return std::nullopt;
    }
  }

 private:
  void report(SourceLoc loc, const std::string& message) {
    if (diags_) diags_->error(loc, message);
  }

  std::optional<ConstScalar> apply(OpCode code, TypeId in, TypeId out, const uint32_t* x,
                                   SourceLoc loc) {
    uint32_t r = 0;
    Fault fault = Fault::None;
    if (!eval_scalar(code, types_[in].scalar, x, r, fault)) {
      report(loc, fault == Fault::DivisionByZero ? "division by zero in constant expression"
                                                 : "cannot evaluate constant expression");
      return std::nullopt;
    }
    return ConstScalar{out, r};
  }

  std::optional<ConstScalar> unary(const Expr& e, TypeId hint) {
    const Expr& operand = *e.args[0];
    // -2147483648 is the one int literal whose magnitude alone does not fit: a minus directly
    // before the literal. In -(2147483648) the minus negates an int, which 2147483648 is not.
    if (e.op == Tok::Minus && operand.kind == ExprKind::IntLit && !operand.unsigned_suffix &&
        !operand.parenthesized && operand.int_value == 0x80000000ull) {
      const std::optional<Scalar> h = leaf_scalar(types_, hint);
      if (!h || (*h != Scalar::UInt && *h != Scalar::Float))
        return ConstScalar{Types::kInt, 0x80000000u};
    }
    auto v = eval(operand, hint);
    if (!v) return std::nullopt;
    const Expected<TypeId> type = unary_result_type(types_, e.op, v->type);
    if (!type) {
      report(e.op_loc, type.error());
      return std::nullopt;
    }
    return apply(*unary_opcode(e.op), v->type, *type, &v->bits, e.op_loc);
  }

  std::optional<ConstScalar> binary(const Expr& e, TypeId hint) {
    const Expr& l = *e.args[0];
    const Expr& r = *e.args[1];
    const TypeId context = is_compare_or_logic(e.op) ? -1 : hint;
    std::optional<ConstScalar> lv, rv;
    if (is_flexible_literal(l) && !is_flexible_literal(r)) {
      rv = eval(r, context);
      if (!rv) return std::nullopt;
      lv = eval(l, rv->type);
    } else {
      lv = eval(l, context);
      if (!lv) return std::nullopt;
      rv = eval(r, lv->type);
    }
    if (!lv || !rv) return std::nullopt;
    const Expected<TypeId> type = binary_result_type(types_, e.op, lv->type, rv->type);
    if (!type) {
      report(e.op_loc, type.error());
      return std::nullopt;
    }
    const uint32_t x[2] = {lv->bits, rv->bits};
    return apply(*binary_opcode(e.op), lv->type, *type, x, e.op_loc);
  }

  std::optional<ConstScalar> call(const Expr& e) {
    // Only the conversions int(x), uint(x), float(x) fold (their rows in ir/ops.cpp).
    const std::optional<OpCode> code = op_by_builtin(e.name, 1);
    const OpInfo* info = code ? &op_info(*code) : nullptr;
    if (!info || info->surface != Surface::Conversion) {
      report(e.loc, fmt::format("cannot call '{}' in a constant expression", e.name));
      return std::nullopt;
    }
    if (e.args.size() != 1) {
      report(e.op_loc, fmt::format("'{}' takes 1 argument, found {}", e.name, e.args.size()));
      return std::nullopt;
    }
    auto v = eval(*e.args[0], -1);
    if (!v) return std::nullopt;
    const TypeId to = info->yields == Yields::Int    ? Types::kInt
                      : info->yields == Yields::UInt ? Types::kUInt
                                                     : Types::kFloat;
    return apply(*code, v->type, to, &v->bits, e.loc);
  }

  const Types& types_;
  const ConstLookup& lookup_;
  Diagnostics* diags_;
};

}  // namespace

bool is_flexible_literal(const ast::Expr& e) {
  switch (e.kind) {
    case ExprKind::IntLit:
      return !e.unsigned_suffix;
    case ExprKind::Unary:
      return e.op != Tok::Bang && is_flexible_literal(*e.args[0]);
    case ExprKind::Binary:
      return !is_compare_or_logic(e.op) && is_flexible_literal(*e.args[0]) &&
             is_flexible_literal(*e.args[1]);
    default:
      return false;
  }
}

std::optional<ConstScalar> int_literal(const Types& types, const ast::Expr& lit, TypeId hint,
                                       std::string& error) {
  const uint64_t v = lit.int_value;
  if (v > 0xFFFFFFFFull) {
    error = "integer literal out of range";
    return std::nullopt;
  }
  const auto bits = static_cast<uint32_t>(v);
  if (lit.unsigned_suffix) return ConstScalar{Types::kUInt, bits};
  const std::optional<Scalar> h = leaf_scalar(types, hint);
  if (h == Scalar::Float) return ConstScalar{Types::kFloat, float_bits(static_cast<float>(v))};
  if (h == Scalar::UInt) return ConstScalar{Types::kUInt, bits};
  // Hex literals may spell any 32-bit pattern; decimal ones must fit a positive int.
  if (!lit.hex && v > 0x7FFFFFFFull) {
    error = fmt::format("integer literal {} out of range for 'int'", v);
    return std::nullopt;
  }
  return ConstScalar{Types::kInt, bits};
}

std::optional<ConstScalar> eval_const(const Types& types, const ConstLookup& lookup,
                                      const ast::Expr& e, TypeId hint, Diagnostics* diags) {
  return Folder(types, lookup, diags).eval(e, hint);
}

}  // namespace ab::frontend
