// Calls in the function builder: user functions and the builtin functions.
#include <fmt/format.h>

#include "lang/builder_state.h"
#include "lang/operators.h"

namespace ab::frontend {

using ast::Expr;
using ast::ExprKind;

namespace {

std::string arguments(size_t n) {
  return fmt::format("{} argument{}", n, n == 1 ? "" : "s");
}

}  // namespace

TypeId FunctionBuilder::with_leaf(TypeId t, TypeId scalar) {
  if (!types().is_array(t)) return scalar;
  const TypeId elem = types()[t].elem;
  const uint32_t count = types()[t].count;
  return types().array(with_leaf(elem, scalar), count);
}

Value FunctionBuilder::matrix_op(OpCode code, const Value& a, const Value& b, SourceLoc loc) {
  if (const Expected<MatrixShape> shape = checked_matrix_shape(types(), code, a.type, b.type);
      !shape) {
    error(loc, shape.error());
    return Value{};
  }
  const std::vector<uint32_t> dims = matrix_result_dims(types(), code, a.type, b.type);
  TypeId result = Types::kFloat;
  for (size_t d = dims.size(); d-- > 0;)
    result = types().array(result, dims[d]);
  std::vector<VarId> args = {a.var};
  if (op_info(code).arity == 2) args.push_back(b.var);  // transpose has one
  return op_value(code, result, std::move(args), loc);
}

Value FunctionBuilder::call(const Expr& e, TypeId hint, bool allow_void) {
  if (e.name == "emit") return emit_call(e, allow_void);
  if (auto b = builtin(e, hint)) return *b;
  const int f = globals_.function_index(e.name);
  if (f < 0) {
    if (find_local(e.name) || globals_.is_const(e.name) || globals_.uniform_index(e.name) >= 0)
      error(e.loc, fmt::format("'{}' is not a function", e.name));
    else
      error(e.loc, fmt::format("unknown function '{}'", e.name));
    return Value{};
  }
  const Signature& sig = globals_.signature(f);
  if (e.args.size() != sig.params.size()) {
    error(e.loc, fmt::format("'{}' takes {}, found {}", e.name, arguments(sig.params.size()),
                             e.args.size()));
    return Value{};
  }
  std::vector<VarId> args;
  bool ok = true;
  for (size_t i = 0; i < e.args.size(); ++i) {
    const Value v = expr(*e.args[i], sig.params[i]);
    if (!v.ok()) {
      ok = false;
    } else if (sig.params[i] != kPoison && v.type != sig.params[i]) {
      error(e.args[i]->loc, fmt::format("argument {} of '{}' must be '{}', found '{}'", i + 1,
                                        e.name, type_name(sig.params[i]), type_name(v.type)));
      ok = false;
    }
    args.push_back(v.var);
  }
  if (sig.result == Types::kVoid && !allow_void) {
    error(e.loc,
          fmt::format("function '{}' returns nothing and cannot be used as a value", e.name));
    return Value{};
  }
  if (!ok || !sig.ok) return Value{};
  if (sig.result == Types::kVoid) {
    emit(OpCode::Call, -1, std::move(args), e.loc).index = f;
    return Value{-1, Types::kVoid};
  }
  Value v = op_value(OpCode::Call, sig.result, std::move(args), e.loc);
  fn_.blocks[current_].ops.back().index = f;
  return v;
}

// emit(x): appends x to the lane's output stream. Every emit of a program has one type (the
// stream's record). Each emit starts a block of its own, so that a block holds at most one: the
// Vulkan kernels check for room in the stream once, before the block changes anything.
Value FunctionBuilder::emit_call(const Expr& e, bool allow_void) {
  if (!allow_void) {
    error(e.loc, "'emit' returns nothing and cannot be used as a value");
    return Value{};
  }
  if (e.args.size() != 1) {
    error(e.loc, fmt::format("'emit' takes 1 argument, found {}", e.args.size()));
    return Value{};
  }
  const int block = new_block(e.loc, false);
  jump(block, e.loc);
  switch_to(block);
  const TypeId expected = program_.emit_type == Types::kVoid ? kPoison : program_.emit_type;
  const Value v = expr(*e.args[0], expected);
  if (!v.ok()) return Value{-1, Types::kVoid};
  if (program_.emit_type == Types::kVoid) {
    program_.emit_type = v.type;
    program_.emit_loc = e.loc;
  } else if (v.type != program_.emit_type) {
    error(e.args[0]->loc,
          fmt::format("every 'emit' of a program emits one type: this one emits '{}', the one at "
                      "line {} emits '{}'",
                      type_name(v.type), program_.emit_loc.line, type_name(program_.emit_type)));
    return Value{-1, Types::kVoid};
  }
  emit(OpCode::Emit, -1, {v.var}, e.loc);
  return Value{-1, Types::kVoid};
}

// One call of a builtin: `e` with the type its context expects (`hint`). The builtins that are
// ops read their name, arity and operand kinds from the op's row (ir/ops.cpp).
class BuiltinCall {
 public:
  BuiltinCall(FunctionBuilder& fb, const Expr& e, TypeId hint) : fb(fb), e(e), hint(hint) {}
  bool arity_is(size_t want);  // or an error saying how many arguments it takes
  Value conversion(OpCode code);
  Value unary(OpCode code);
  Value fold_array(OpCode code);
  Value elementwise(OpCode code);
  Value mean();
  Value dot_or_sum();
  Value len();

 private:
  std::optional<Value> one_array(bool floats_only);

  FunctionBuilder& fb;
  const Expr& e;
  TypeId hint;
};

// The builtins that are ops read their name, arity and operand kinds from the op's row
// (ir/ops.cpp); the rest (dot, sum, mean, len, transpose, grad) are written here.
std::optional<Value> FunctionBuilder::builtin(const Expr& e, TypeId hint) {
  const std::string& n = e.name;
  BuiltinCall call{*this, e, hint};
  if (const std::optional<OpCode> code = op_by_builtin(n, e.args.size())) {
    switch (op_info(*code).surface) {
      case Surface::Conversion:
        return call.conversion(*code);
      case Surface::FloatMath:
      case Surface::Numeric:
        return call.unary(*code);
      case Surface::ArrayFold:
        return call.fold_array(*code);
      case Surface::Elementwise:
      case Surface::FloatPair:
        return call.elementwise(*code);
      case Surface::Random:
        if (!call.arity_is(0)) return Value{};
        return op_value(*code, Types::kFloat, {}, e.loc);
      case Surface::None:
      case Surface::Operator:
        break;
    }
  }
  if (auto d = distribution(e)) return d;
  if (auto m = linear_algebra(e)) return m;
  if (n == "grad" || n == "value_and_grad") return derivative(e);
  if (n == "mean") return call.mean();
  if (n == "transpose") {
    if (!call.arity_is(1)) return Value{};
    const Value v = expr(*e.args[0], kPoison);
    if (!v.ok()) return Value{};
    return matrix_op(OpCode::Transpose, v, Value{}, e.loc);
  }
  if (n == "dot" || n == "sum") return call.dot_or_sum();
  if (n == "len") return call.len();
  return std::nullopt;
}

bool BuiltinCall::arity_is(size_t want) {
  if (e.args.size() == want) return true;
  fb.error(e.loc, fmt::format("'{}' takes {}, found {}", e.name, arguments(want), e.args.size()));
  return false;
}

// int(x), uint(x), float(x): folded when x is constant, else elementwise over any scalars.
Value BuiltinCall::conversion(OpCode code) {
  if (auto folded = fb.fold(e, hint)) return fb.constant(folded->type, {folded->bits}, e.loc);
  if (!arity_is(1)) return Value{};
  const Value v = fb.expr(*e.args[0], kPoison);
  if (!v.ok()) return Value{};
  if (!leaf_scalar(fb.types(), v.type)) {
    fb.error(e.args[0]->loc,
             fmt::format("cannot convert '{}' to '{}'", fb.type_name(v.type), e.name));
    return Value{};
  }
  const Yields to = op_info(code).yields;
  const TypeId target = to == Yields::Int    ? Types::kInt
                        : to == Yields::UInt ? Types::kUInt
                                             : Types::kFloat;
  return fb.op_value(code, fb.with_leaf(v.type, target), {v.var}, e.loc);
}

// f(x) of one float (sqrt, log1m, ...) or one numeric value (abs), elementwise over arrays.
Value BuiltinCall::unary(OpCode code) {
  if (!arity_is(1)) return Value{};
  const bool floats = op_info(code).accepts == Accepts::Float;
  const Value v = fb.expr(*e.args[0], floats ? Types::kFloat : hint);
  if (!v.ok()) return Value{};
  const auto leaf = leaf_scalar(fb.types(), v.type);
  if (!leaf || !elementwise_result(code, *leaf)) {
    fb.error(e.args[0]->loc, fmt::format("'{}' needs a {} argument, found '{}'", e.name,
                                         floats ? "'float'" : "numeric", fb.type_name(v.type)));
    return Value{};
  }
  return fb.op_value(code, v.type, {v.var}, e.loc);
}

// The one array argument of max(v), min(v), log_sum_exp(v) and mean(v), checked.
std::optional<Value> BuiltinCall::one_array(bool floats_only) {
  if (!arity_is(1)) return std::nullopt;
  const Value v = fb.expr(*e.args[0], kPoison);
  if (!v.ok()) return std::nullopt;
  const auto leaf = leaf_scalar(fb.types(), v.type);
  if (!fb.types().is_array(v.type) || !leaf || *leaf == Scalar::Bool ||
      (floats_only && *leaf != Scalar::Float)) {
    fb.error(e.args[0]->loc,
             fmt::format("'{}' of one argument needs {} array, found '{}'", e.name,
                         floats_only ? "a float" : "a numeric", fb.type_name(v.type)));
    return std::nullopt;
  }
  return v;
}

Value BuiltinCall::fold_array(OpCode code) {
  const auto v = one_array(op_info(code).accepts == Accepts::Float);
  if (!v) return Value{};
  return fb.op_value(code, fb.types().leaf(v->type), {v->var}, e.loc);
}

// mean(v) = sum(v) / (the element count): '/' rounds as everywhere.
Value BuiltinCall::mean() {
  const auto v = one_array(true);
  if (!v) return Value{};
  const TypeId scalar = fb.types().leaf(v->type);
  const Value total = fb.op_value(OpCode::Sum, scalar, {v->var}, e.loc);
  const Value count =
      fb.constant(scalar, {float_bits(static_cast<float>(fb.types().words(v->type)))}, e.loc);
  return fb.op_value(OpCode::Div, scalar, {total.var, count.var}, e.loc);
}

// min(a, b), max, clamp, pow, log_sum_exp(a, b): equal types, or arrays of one type together
// with scalars of their leaf type.
Value BuiltinCall::elementwise(OpCode code) {
  const OpInfo& info = op_info(code);
  if (!arity_is(static_cast<size_t>(info.arity))) return Value{};
  const bool floats = info.surface == Surface::FloatPair;
  const std::vector<Value> vals = fb.operands(e.args, floats ? Types::kFloat : hint);
  for (const Value& v : vals)
    if (!v.ok()) return Value{};
  TypeId common = vals[0].type;
  for (size_t i = 1; i < vals.size(); ++i) {
    const TypeId t = vals[i].type;
    if (t == common) continue;
    if (fb.types().is_array(common) && fb.types().is_scalar(t) && fb.types().leaf(common) == t)
      continue;
    if (fb.types().is_scalar(common) && fb.types().is_array(t) && fb.types().leaf(t) == common) {
      common = t;
      continue;
    }
    fb.error(e.args[i]->loc, fmt::format("'{}' arguments must have matching types, found '{}' "
                                         "and '{}'",
                                         e.name, fb.type_name(common), fb.type_name(t)));
    return Value{};
  }
  const auto leaf = leaf_scalar(fb.types(), common);
  if (!leaf || !elementwise_result(code, *leaf)) {
    fb.error(e.loc, fmt::format("'{}' needs {} arguments, found '{}'", e.name,
                                floats ? "'float'" : "numeric", fb.type_name(common)));
    return Value{};
  }
  std::vector<VarId> args;
  for (const Value& v : vals)
    args.push_back(v.var);
  return fb.op_value(code, common, std::move(args), e.loc);
}

Value BuiltinCall::dot_or_sum() {
  const bool is_dot = e.name == "dot";
  if (!arity_is(is_dot ? 2 : 1)) return Value{};
  const std::vector<Value> vals = fb.operands(e.args, kPoison);
  for (const Value& v : vals)
    if (!v.ok()) return Value{};
  const TypeId t = vals[0].type;
  const auto leaf = leaf_scalar(fb.types(), t);
  const bool numeric_array = fb.types().is_array(t) && leaf && *leaf != Scalar::Bool;
  if (!numeric_array || (is_dot && vals[1].type != t)) {
    if (is_dot)
      fb.error(e.loc, fmt::format("'dot' needs two numeric arrays of the same type, found '{}' "
                                  "and '{}'",
                                  fb.type_name(t), fb.type_name(vals[1].type)));
    else
      fb.error(e.args[0]->loc,
               fmt::format("'sum' needs a numeric array, found '{}'", fb.type_name(t)));
    return Value{};
  }
  std::vector<VarId> args;
  for (const Value& v : vals)
    args.push_back(v.var);
  return fb.op_value(is_dot ? OpCode::Dot : OpCode::Sum, fb.types().leaf(t), std::move(args),
                     e.loc);
}

// len(a): a constant; for a named array only its type is needed, so nothing is copied.
Value BuiltinCall::len() {
  if (!arity_is(1)) return Value{};
  const Expr& a = *e.args[0];
  TypeId t = kPoison;
  const auto* l = a.kind == ExprKind::Name ? fb.find_local(a.name) : nullptr;
  const int u = a.kind == ExprKind::Name && !l ? fb.globals_.uniform_index(a.name) : -1;
  if (l) {
    t = l->type;
  } else if (u >= 0) {
    t = fb.program_.uniforms[u].type;
    if (t == Types::kVoid) t = kPoison;
  } else {
    const Value v = fb.expr(a, kPoison);
    if (v.ok()) t = v.type;
  }
  if (t == kPoison) return Value{};
  if (!fb.types().is_array(t)) {
    fb.error(a.loc, fmt::format("'len' needs an array, found '{}'", fb.type_name(t)));
    return Value{};
  }
  return fb.constant(Types::kInt, {fb.types()[t].count}, e.loc);
}

// grad(f, x, ...) and value_and_grad(f, x, ...): a call of f's derived function
// (passes/differentiate.h) with f's arguments; the gradient is with respect to the first one.
Value FunctionBuilder::derivative(const Expr& e) {
  const std::string& n = e.name;
  if (e.args.size() < 2) {
    error(e.loc, fmt::format("'{}' takes a function and its arguments, found {}", n,
                             arguments(e.args.size())));
    return Value{};
  }
  const Expr& fe = *e.args[0];
  const int f = fe.kind == ExprKind::Name ? globals_.function_index(fe.name) : -1;
  if (f < 0) {
    error(fe.loc, fmt::format("the first argument of '{}' must name a function", n));
    return Value{};
  }
  const Signature& sig = globals_.signature(f);
  if (!sig.ok) return Value{};
  if (sig.result != Types::kFloat) {
    error(fe.loc, fmt::format("'{}' differentiates a function returning 'float'; '{}' returns '{}'",
                              n, fe.name, type_name(sig.result)));
    return Value{};
  }
  if (e.args.size() - 1 != sig.params.size()) {
    error(e.loc, fmt::format("'{}' of '{}' takes {} after the function, found {}", n, fe.name,
                             arguments(sig.params.size()), e.args.size() - 1));
    return Value{};
  }
  const TypeId x = sig.params[0];
  if (x == kPoison || !types().is_array_of(x, Scalar::Float)) {
    error(fe.loc, fmt::format("'{}' differentiates with respect to the first parameter, which "
                              "must be 'float' or a float array; '{}' takes '{}'",
                              n, fe.name, type_name(x)));
    return Value{};
  }
  std::vector<VarId> args;
  bool ok = true;
  for (size_t i = 0; i < sig.params.size(); ++i) {
    const Value v = expr(*e.args[i + 1], sig.params[i]);
    if (!v.ok()) {
      ok = false;
    } else if (v.type != sig.params[i]) {
      error(e.args[i + 1]->loc, fmt::format("argument {} of '{}' must be '{}', found '{}'", i + 1,
                                            fe.name, type_name(sig.params[i]), type_name(v.type)));
      ok = false;
    }
    args.push_back(v.var);
  }
  if (!ok) return Value{};
  const TypeId vg = value_and_grad_type(types(), x);
  Value v = op_value(OpCode::Call, vg, std::move(args), e.loc);
  fn_.blocks[current_].ops.back().index = globals_.derivative(f, e.loc);
  if (n == "value_and_grad") return v;
  return get(x, v.var, {}, {PathStep{false, 1, 0, 0}}, e.loc);  // its .grad
}

}  // namespace ab::frontend
