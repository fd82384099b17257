// Expressions of the function builder: typing and lowering to ops.
#include <fmt/format.h>

#include <algorithm>

#include "lang/builder_state.h"
#include "lang/operators.h"

namespace ab::frontend {

using ast::Expr;
using ast::ExprKind;

std::optional<ConstScalar> FunctionBuilder::fold(const Expr& e, TypeId hint) {
  return eval_const(types(), const_lookup(), e, hint, nullptr);
}

Value FunctionBuilder::expr(const Expr& e, TypeId hint, bool allow_void) {
  switch (e.kind) {
    case ExprKind::IntLit:
    case ExprKind::FloatLit:
    case ExprKind::BoolLit:
      return literal(e, hint);
    case ExprKind::Name:
      return name(e);
    case ExprKind::Unary:
      return unary(e, hint);
    case ExprKind::Binary:
      return binary(e, hint);
    case ExprKind::Call:
      return call(e, hint, allow_void);
    case ExprKind::Index:
    case ExprKind::Field:
      return access(e);
    case ExprKind::StructLit:
      return struct_literal(e);
    case ExprKind::ArrayLit:
      return array_literal(e, hint);
    case ExprKind::RepeatLit:
      return repeat_literal(e, hint);
  }
  return Value{};
}

Value FunctionBuilder::literal(const Expr& e, TypeId hint) {
  if (e.kind == ExprKind::FloatLit)
    return constant(Types::kFloat, {float_bits(e.float_value)}, e.loc);
  if (e.kind == ExprKind::BoolLit) return constant(Types::kBool, {e.bool_value ? 1u : 0u}, e.loc);
  std::string message;
  auto v = int_literal(types(), e, hint, message);
  if (!v) {
    error(e.loc, message);
    return Value{};
  }
  return constant(v->type, {v->bits}, e.loc);
}

Value FunctionBuilder::name(const Expr& e) {
  if (const Local* l = find_local(e.name)) return Value{l->var, l->type};
  if (globals_.is_const(e.name)) {
    auto v = globals_.lookup_const(e, nullptr);  // a bad constant was reported at its declaration
    if (!v) return Value{};
    return constant(v->type, {v->bits}, e.loc);
  }
  const int u = globals_.uniform_index(e.name);
  if (u >= 0) {
    const TypeId type = program_.uniforms[u].type;
    if (type == Types::kVoid) return Value{};
    return uniform_get(u, type, {}, {}, e.loc);
  }
  if (globals_.function_index(e.name) >= 0)
    error(e.loc, fmt::format("'{}' is a function; call it with '{}(...)'", e.name, e.name));
  else
    error(e.loc, fmt::format("unknown variable '{}'", e.name));
  return Value{};
}

Value FunctionBuilder::unary(const Expr& e, TypeId hint) {
  if (auto c = fold(e, hint)) return constant(c->type, {c->bits}, e.loc);
  const Value v = expr(*e.args[0], hint);
  if (!v.ok()) return Value{};
  const Expected<TypeId> type = unary_result_type(types(), e.op, v.type);
  if (!type) {
    error(e.op_loc, type.error());
    return Value{};
  }
  return op_value(*unary_opcode(e.op), *type, {v.var}, e.op_loc);
}

Value FunctionBuilder::binary(const Expr& e, TypeId hint) {
  if (auto c = fold(e, hint)) return constant(c->type, {c->bits}, e.loc);
  if (e.op == Tok::AmpAmp || e.op == Tok::PipePipe) return logical(e);
  const OpCode code = *binary_opcode(e.op);
  if (op_info(code).cls == OpClass::Matrix) {  // '@'
    const Value lv = expr(*e.args[0], kPoison);
    const Value rv = expr(*e.args[1], kPoison);
    if (!lv.ok() || !rv.ok()) return Value{};
    return matrix_op(code, lv, rv, e.op_loc);
  }
  const bool compares = op_info(code).yields == Yields::Bool;
  const TypeId context = compares ? kPoison : hint;
  const Expr& l = *e.args[0];
  const Expr& r = *e.args[1];
  Value lv, rv;
  if (is_flexible_literal(l) && !is_flexible_literal(r)) {
    rv = expr(r, context);
    if (!rv.ok()) return Value{};
    lv = expr(l, rv.type);
  } else {
    lv = expr(l, context);
    if (!lv.ok()) return Value{};
    rv = expr(r, lv.type);
  }
  if (!lv.ok() || !rv.ok()) return Value{};
  const Expected<TypeId> type = binary_result_type(types(), e.op, lv.type, rv.type);
  if (!type) {
    error(e.op_loc, type.error());
    return Value{};
  }
  return op_value(code, *type, {lv.var, rv.var}, e.op_loc);
}

// `a && b` / `a || b`. Evaluates b in a block of its own; if b turned out to be straight-line
// code that cannot fault, call or draw random numbers, its ops move back and an And/Or combines
// the two; otherwise the branch stays and b runs only when it decides the result.
Value FunctionBuilder::logical(const Expr& e) {
  const bool is_and = e.op == Tok::AmpAmp;
  auto check_bool = [&](const Value& v, const Expr& side) {
    if (!v.ok()) return false;
    if (v.type == Types::kBool) return true;
    error(side.loc,
          fmt::format("'{}' needs 'bool' operands, found '{}'", spelling(e.op), type_name(v.type)));
    return false;
  };
  const Value a = expr(*e.args[0], Types::kBool);
  const bool a_ok = check_bool(a, *e.args[0]);
  ensure_open();
  const int head = current_;
  const int rhs_block = new_block(e.args[1]->loc, false);
  switch_to(rhs_block);
  const Value b = expr(*e.args[1], Types::kBool);
  const bool b_ok = check_bool(b, *e.args[1]);
  if (!a_ok || !b_ok) {
    // Keep the CFG connected so later code is still checked in a reachable block.
    switch_to(head);
    return Value{};
  }
  bool straight = open_ && current_ == rhs_block;
  if (straight) {
    for (const Op& op : fn_.blocks[rhs_block].ops) {
      const bool integer_division =
          is_division(op) && leaf_scalar(types(), fn_.vars[op.args[0]].type) != Scalar::Float;
      const bool dynamic_index =
          std::any_of(op.path.begin(), op.path.end(), [](const PathStep& s) { return s.dynamic; });
      if (is_call(op) || is_random(op) || integer_division || dynamic_index) straight = false;
    }
  }
  if (straight) {
    std::vector<Op> ops = std::move(fn_.blocks[rhs_block].ops);
    fn_.blocks[rhs_block].ops.clear();  // the block stays behind, unreachable, and is removed
    switch_to(head);
    for (Op& op : ops)
      fn_.blocks[head].ops.push_back(std::move(op));
    return op_value(*binary_opcode(e.op), Types::kBool, {a.var, b.var}, e.op_loc);
  }
  // result = a; if a (for &&) / if !a (for ||) then result = b.
  const VarId result = temp(Types::kBool);
  copy(result, b.var, e.args[1]->loc);
  const int join = new_block(e.op_loc, true);
  jump(join, e.op_loc);
  switch_to(head);
  copy(result, a.var, e.op_loc);
  Terminator branch;
  branch.kind = Terminator::Kind::Branch;
  branch.cond = a.var;
  branch.target = is_and ? rhs_block : join;
  branch.target_else = is_and ? join : rhs_block;
  branch.loc = e.op_loc;
  terminate(branch);
  switch_to(join);
  return Value{result, Types::kBool, true, false};
}

bool FunctionBuilder::walk_path(const std::vector<const Expr*>& chain, TypeId base, Access& out) {
  TypeId t = base;
  auto add_static = [&](uint32_t offset) {
    if (!out.path.empty() && !out.path.back().dynamic) {
      out.path.back().offset += offset;
    } else {
      PathStep step;
      step.offset = offset;
      out.path.push_back(step);
    }
  };
  for (const Expr* node : chain) {
    if (node->kind == ExprKind::Field) {
      if (!types().is_struct(t)) {
        error(node->op_loc, fmt::format("'{}' has no fields", type_name(t)));
        return false;
      }
      const StructDef& def = types().struct_def(t);
      const int f = def.find_field(node->name);
      if (f < 0) {
        error(node->op_loc, fmt::format("struct '{}' has no field '{}'", def.name, node->name));
        return false;
      }
      add_static(def.fields[f].offset);
      t = def.fields[f].type;
      continue;
    }
    if (!types().is_array(t)) {
      error(node->op_loc, fmt::format("cannot index '{}'", type_name(t)));
      return false;
    }
    const TypeId elem = types()[t].elem;
    const uint32_t count = types()[t].count;
    const uint32_t stride = types().words(elem);
    const Expr& index = *node->args[1];
    if (auto c = fold(index, kPoison)) {
      if (c->type != Types::kInt && c->type != Types::kUInt) {
        error(index.loc,
              fmt::format("index must be 'int' or 'uint', found '{}'", type_name(c->type)));
        return false;
      }
      const int64_t i =
          c->type == Types::kInt ? int64_t{static_cast<int32_t>(c->bits)} : int64_t{c->bits};
      if (i < 0 || i >= count) {
        error(index.loc, fmt::format("index {} out of range for '{}'", i, type_name(t)));
        return false;
      }
      add_static(static_cast<uint32_t>(i) * stride);
    } else {
      const Value v = expr(index, kPoison);
      if (!v.ok()) return false;
      if (v.type != Types::kInt && v.type != Types::kUInt) {
        error(index.loc,
              fmt::format("index must be 'int' or 'uint', found '{}'", type_name(v.type)));
        return false;
      }
      PathStep step;
      step.dynamic = true;
      step.stride = stride;
      step.count = count;
      out.path.push_back(step);
      out.indices.push_back(v.var);
    }
    t = elem;
  }
  // A trailing "+0" step adds nothing; drop it unless it is all the path says.
  if (out.path.size() > 1 && !out.path.back().dynamic && out.path.back().offset == 0)
    out.path.pop_back();
  out.type = t;
  return true;
}

Value FunctionBuilder::access(const Expr& e) {
  std::vector<const Expr*> chain;
  const Expr* root = &e;
  while (root->kind == ExprKind::Index || root->kind == ExprKind::Field) {
    chain.push_back(root);
    root = root->args[0].get();
  }
  std::reverse(chain.begin(), chain.end());
  // A uniform is read in place: only the accessed part is copied out.
  if (root->kind == ExprKind::Name && !find_local(root->name) && !globals_.is_const(root->name)) {
    const int u = globals_.uniform_index(root->name);
    if (u >= 0) {
      const TypeId base = program_.uniforms[u].type;
      if (base == Types::kVoid) return Value{};
      Access a;
      if (!walk_path(chain, base, a)) return Value{};
      return uniform_get(u, a.type, a.indices, std::move(a.path), e.loc);
    }
  }
  const Value base = expr(*root, kPoison);
  if (!base.ok()) return Value{};
  Access a;
  if (!walk_path(chain, base.type, a)) return Value{};
  return get(a.type, base.var, a.indices, std::move(a.path), e.loc);
}

std::optional<Place> FunctionBuilder::place(const Expr& target) {
  std::vector<const Expr*> chain;
  const Expr* root = &target;
  while (root->kind == ExprKind::Index || root->kind == ExprKind::Field) {
    chain.push_back(root);
    root = root->args[0].get();
  }
  std::reverse(chain.begin(), chain.end());
  if (root->kind != ExprKind::Name) {
    error(target.loc, "cannot assign to this expression");
    return std::nullopt;
  }
  const std::string& n = root->name;
  const Local* l = find_local(n);
  if (!l) {
    if (globals_.is_const(n))
      error(root->loc, fmt::format("cannot assign to constant '{}'", n));
    else if (globals_.uniform_index(n) >= 0)
      error(root->loc, fmt::format("cannot assign to uniform '{}': uniforms are read-only", n));
    else if (globals_.function_index(n) >= 0)
      error(root->loc, fmt::format("cannot assign to function '{}'", n));
    else
      error(root->loc, fmt::format("unknown variable '{}'", n));
    return std::nullopt;
  }
  if (l->kind == LocalKind::Let) {
    error(root->loc, fmt::format("cannot assign to '{}': it is declared with 'let'", n));
    return std::nullopt;
  }
  if (l->kind == LocalKind::LoopIndex) {
    error(root->loc, fmt::format("cannot assign to loop variable '{}'", n));
    return std::nullopt;
  }
  Place p;
  p.root = l->var;
  if (l->type == kPoison) return p;
  Access a;
  if (!walk_path(chain, l->type, a)) return std::nullopt;
  p.path = std::move(a.path);
  p.indices = std::move(a.indices);
  p.type = a.type;
  return p;
}

std::vector<Value> FunctionBuilder::operands(const std::vector<ast::ExprPtr>& exprs, TypeId hint) {
  std::vector<Value> values(exprs.size());
  TypeId common = kPoison;
  for (size_t i = 0; i < exprs.size(); ++i) {
    if (is_flexible_literal(*exprs[i])) continue;
    values[i] = expr(*exprs[i], hint);
    if (common == kPoison && values[i].ok()) common = values[i].type;
  }
  if (common == kPoison) common = hint;
  for (size_t i = 0; i < exprs.size(); ++i)
    if (is_flexible_literal(*exprs[i])) values[i] = expr(*exprs[i], common);
  return values;
}

Value FunctionBuilder::struct_literal(const Expr& e) {
  auto type = globals_.struct_type(e.name, e.loc);
  std::vector<Value> values(e.args.size());
  if (!type) {
    for (const ast::ExprPtr& a : e.args)
      expr(*a, kPoison);
    return Value{};
  }
  const StructDef def = types().struct_def(*type);  // a copy: types() may grow below
  std::vector<int> given(def.fields.size(), -1);
  bool ok = true;
  for (size_t i = 0; i < e.args.size(); ++i) {
    const int f = def.find_field(e.field_names[i]);
    if (f < 0) {
      error(e.field_locs[i],
            fmt::format("struct '{}' has no field '{}'", def.name, e.field_names[i]));
      expr(*e.args[i], kPoison);
      ok = false;
      continue;
    }
    if (given[f] >= 0) {
      error(e.field_locs[i], fmt::format("field '{}' is given twice", e.field_names[i]));
      ok = false;
      continue;
    }
    given[f] = static_cast<int>(i);
    values[i] = expr(*e.args[i], def.fields[f].type);
    if (!values[i].ok()) {
      ok = false;
    } else if (values[i].type != def.fields[f].type) {
      error(e.args[i]->loc,
            fmt::format("field '{}' of '{}' must be '{}', found '{}'", def.fields[f].name, def.name,
                        type_name(def.fields[f].type), type_name(values[i].type)));
      ok = false;
    }
  }
  for (size_t f = 0; f < def.fields.size(); ++f) {
    if (given[f] < 0) {
      error(e.loc, fmt::format("missing field '{}' in '{}' literal", def.fields[f].name, def.name));
      ok = false;
    }
  }
  if (!ok) return Value{};
  std::vector<VarId> args;
  for (size_t f = 0; f < def.fields.size(); ++f)
    args.push_back(values[given[f]].var);
  return make(*type, std::move(args), e.loc);
}

Value FunctionBuilder::array_literal(const Expr& e, TypeId hint) {
  const TypeId elem_hint = hint >= 0 && types().is_array(hint) ? types()[hint].elem : kPoison;
  const std::vector<Value> values = operands(e.args, elem_hint);
  TypeId elem = kPoison;
  bool ok = true;
  for (size_t i = 0; i < values.size(); ++i) {
    if (!values[i].ok()) {
      ok = false;
      continue;
    }
    if (elem == kPoison) {
      elem = values[i].type;
    } else if (values[i].type != elem) {
      error(e.args[i]->loc, fmt::format("array elements must have the same type, found '{}' "
                                        "and '{}'",
                                        type_name(elem), type_name(values[i].type)));
      ok = false;
    }
  }
  if (!ok || elem == kPoison) return Value{};
  if (uint64_t{types().words(elem)} * values.size() > kMaxTypeWords) {
    error(e.loc, "array literal is too large");
    return Value{};
  }
  const TypeId type = types().array(elem, static_cast<uint32_t>(values.size()));
  std::vector<VarId> args;
  for (const Value& v : values)
    args.push_back(v.var);
  return make(type, std::move(args), e.op_loc);
}

Value FunctionBuilder::repeat_literal(const Expr& e, TypeId hint) {
  const TypeId elem_hint = hint >= 0 && types().is_array(hint) ? types()[hint].elem : kPoison;
  const Expr& count_expr = *e.args[1];
  auto count = eval_const(types(), const_lookup(), count_expr, Types::kInt, &diags_);
  const Value v = expr(*e.args[0], elem_hint);
  if (!count || !v.ok()) return Value{};
  const bool is_int = count->type == Types::kInt || count->type == Types::kUInt;
  if (!is_int || count->bits == 0 ||
      (count->type == Types::kInt && static_cast<int32_t>(count->bits) < 0)) {
    error(count_expr.loc, "repeat count must be a positive integer constant");
    return Value{};
  }
  const uint32_t words = types().words(v.type);
  if (uint64_t{words} * count->bits > kMaxTypeWords) {
    error(e.loc, "array literal is too large");
    return Value{};
  }
  const TypeId type = types().array(v.type, count->bits);
  // A constant element makes a constant array: one Const instead of a Make of n copies.
  Block& b = fn_.blocks[current_];
  if (v.fresh && v.single && open_ && !b.ops.empty() && b.ops.back().dst == v.var &&
      is_const(b.ops.back())) {
    const std::vector<uint32_t> element = std::move(b.ops.back().imm);
    b.ops.pop_back();  // its temporary is now unused and dropped in finish()
    std::vector<uint32_t> imm;
    imm.reserve(uint64_t{words} * count->bits);
    for (uint32_t i = 0; i < count->bits; ++i)
      imm.insert(imm.end(), element.begin(), element.end());
    return constant(type, std::move(imm), e.op_loc);
  }
  return make(type, std::vector<VarId>(count->bits, v.var), e.op_loc);
}

}  // namespace ab::frontend
