#include "lang/operators.h"

#include <fmt/format.h>

namespace ab::frontend {

// The op table (ir/ops.cpp) spells each operator's symbol in its row.
std::optional<OpCode> binary_opcode(Tok op) {
  return op_by_operator(spelling(op), 2);
}

std::optional<OpCode> unary_opcode(Tok op) {
  return op_by_operator(spelling(op), 1);
}

Tok compound_operator(Tok assign) {
  switch (assign) {
    case Tok::PlusAssign:
      return Tok::Plus;
    case Tok::MinusAssign:
      return Tok::Minus;
    case Tok::StarAssign:
      return Tok::Star;
    case Tok::SlashAssign:
      return Tok::Slash;
    case Tok::PercentAssign:
      return Tok::Percent;
    case Tok::AmpAssign:
      return Tok::Amp;
    case Tok::PipeAssign:
      return Tok::Pipe;
    case Tok::CaretAssign:
      return Tok::Caret;
    case Tok::ShlAssign:
      return Tok::Shl;
    case Tok::ShrAssign:
      return Tok::Shr;
    default:
      return Tok::End;
  }
}

const char* spelling(Tok op) {
  switch (op) {
    case Tok::Plus:
      return "+";
    case Tok::Minus:
      return "-";
    case Tok::Star:
      return "*";
    case Tok::Slash:
      return "/";
    case Tok::Percent:
      return "%";
    case Tok::At:
      return "@";
    case Tok::Amp:
      return "&";
    case Tok::Pipe:
      return "|";
    case Tok::Caret:
      return "^";
    case Tok::Shl:
      return "<<";
    case Tok::Shr:
      return ">>";
    case Tok::Eq:
      return "==";
    case Tok::Ne:
      return "!=";
    case Tok::Lt:
      return "<";
    case Tok::Le:
      return "<=";
    case Tok::Gt:
      return ">";
    case Tok::Ge:
      return ">=";
    case Tok::AmpAmp:
      return "&&";
    case Tok::PipePipe:
      return "||";
    case Tok::Bang:
      return "!";
    case Tok::Tilde:
      return "~";
    default:
      return "?";
  }
}

std::optional<Scalar> leaf_scalar(const Types& types, TypeId t) {
  if (t < 0 || static_cast<size_t>(t) >= types.size()) return std::nullopt;
  const Type& leaf = types[types.leaf(t)];
  if (leaf.kind != Type::Kind::Scalar) return std::nullopt;
  return leaf.scalar;
}

namespace {

std::string arithmetic_error(Tok op, const std::string& l, const std::string& r) {
  switch (op) {
    case Tok::Plus:
      return fmt::format("cannot add '{}' and '{}'", l, r);
    case Tok::Minus:
      return fmt::format("cannot subtract '{}' from '{}'", r, l);
    case Tok::Star:
      return fmt::format("cannot multiply '{}' by '{}'", l, r);
    case Tok::Slash:
      return fmt::format("cannot divide '{}' by '{}'", l, r);
    default:
      return fmt::format("cannot apply '{}' to '{}' and '{}'", spelling(op), l, r);
  }
}

}  // namespace

Expected<TypeId> binary_result_type(const Types& types, Tok op, TypeId l, TypeId r) {
  const std::optional<OpCode> code = binary_opcode(op);
  const std::string ls = types.to_string(l), rs = types.to_string(r);
  if (!code) return Error{fmt::format("unknown operator '{}'", spelling(op))};
  if (op == Tok::At) {  // FunctionBuilder::matrix_product types '@' (it makes the result type)
    const Expected<MatrixShape> shape = checked_matrix_shape(types, *code, l, r);
    if (!shape) return shape.failure();
    return Error{"'@' is not allowed in a constant expression"};
  }
  if (op == Tok::AmpAmp || op == Tok::PipePipe) {
    if (l == Types::kBool && r == Types::kBool) return Types::kBool;
    return Error{
        fmt::format("'{}' needs 'bool' operands, found '{}' and '{}'", spelling(op), ls, rs)};
  }
  if (op_info(*code).yields == Yields::Bool) {  // comparisons
    if (l == r && types.is_scalar(l) && elementwise_result(*code, types[l].scalar))
      return Types::kBool;
    return Error{fmt::format("cannot compare '{}' and '{}'", ls, rs)};
  }
  // Arithmetic and bitwise: equal types, or an array with a scalar of its leaf type.
  std::optional<TypeId> result;
  if (l == r)
    result = l;
  else if (types.is_array(l) && types.is_scalar(r) && types.leaf(l) == r)
    result = l;
  else if (types.is_scalar(l) && types.is_array(r) && types.leaf(r) == l)
    result = r;
  const std::optional<Scalar> leaf = result ? leaf_scalar(types, *result) : std::nullopt;
  if (!leaf || !elementwise_result(*code, *leaf)) return Error{arithmetic_error(op, ls, rs)};
  return *result;
}

Expected<TypeId> unary_result_type(const Types& types, Tok op, TypeId t) {
  const std::optional<OpCode> code = unary_opcode(op);
  const std::optional<Scalar> leaf = leaf_scalar(types, t);
  if (code && leaf && elementwise_result(*code, *leaf)) return t;
  const std::string ts = types.to_string(t);
  switch (op) {
    case Tok::Minus:
      return Error{fmt::format("cannot negate '{}'", ts)};
    case Tok::Bang:
      return Error{fmt::format("'!' needs a 'bool' operand, found '{}'", ts)};
    default:
      return Error{fmt::format("'~' needs an 'int' or 'uint' operand, found '{}'", ts)};
  }
}

}  // namespace ab::frontend
