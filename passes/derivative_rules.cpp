#include "passes/derivative_rules.h"

#include <array>

#include "passes/analysis/activity.h"  // has_float

namespace ab {

// ---- emission ----

VarId AdjointEmitter::new_var(std::string name, TypeId type) {
  D_.vars.push_back(Var{std::move(name), type});
  return static_cast<VarId>(D_.vars.size() - 1);
}

Op& AdjointEmitter::emit(OpCode code, VarId dst, std::vector<VarId> args) {
  Op op;
  op.code = code;
  op.dst = dst;
  op.args = std::move(args);
  op.loc = loc_;
  std::vector<Op>& ops = current_ops();
  ops.push_back(std::move(op));
  return ops.back();
}

VarId AdjointEmitter::op(OpCode code, TypeId t, std::vector<VarId> args) {
  const VarId d = new_var("", t);
  emit(code, d, std::move(args));
  return d;
}

VarId AdjointEmitter::fconst(float f) {
  const VarId d = new_var("", Types::kFloat);
  emit(OpCode::Const, d, {}).imm = {float_bits(f)};
  return d;
}

VarId AdjointEmitter::zeros(TypeId t) {
  const VarId d = new_var("", t);
  emit(OpCode::Const, d, {}).imm.assign(T_.words(t), 0u);
  return d;
}

VarId AdjointEmitter::iconst(int32_t k) {
  const VarId d = new_var("", Types::kInt);
  emit(OpCode::Const, d, {}).imm = {static_cast<uint32_t>(k)};
  return d;
}

VarId AdjointEmitter::copy_of(VarId v) {
  return op(OpCode::Copy, type(v), {v});
}

VarId AdjointEmitter::mul(VarId a, VarId b) {
  return op(OpCode::Mul, T_.is_array(type(b)) ? type(b) : type(a), {a, b});
}

VarId AdjointEmitter::same(OpCode code, VarId a, std::vector<VarId> more) {
  more.insert(more.begin(), a);
  TypeId t = type(a);
  for (VarId m : more)
    if (T_.is_array(type(m))) t = type(m);
  return op(code, t, std::move(more));
}

void AdjointEmitter::acc(VarId target, VarId contribution) {
  if (!active(target)) return;
  add_into(adjoint_of(target), contribution);
}

void AdjointEmitter::add_into(VarId into, VarId c) {
  const TypeId ti = type(into), tc = type(c);
  if (T_.is_struct(ti)) {
    const StructDef& def = T_.struct_def(ti);
    for (const Field& f : def.fields) {
      if (!has_float(T_, f.type)) continue;
      const VarId part = field(into, f), add = field(c, f);
      add_into(part, add);
      Op& set = emit(OpCode::Set, into, {into, part});
      set.path = {PathStep{false, f.offset, 0, 0}};
    }
    return;
  }
  if (T_.is_scalar(ti) && T_.is_array(tc)) c = op(OpCode::Sum, ti, {c});
  emit(OpCode::Add, into, {into, c});
}

// Elementwise ops have no struct operands, so a struct (a loop's partial of a struct input) goes
// field by field.
void AdjointEmitter::add_scaled_into(VarId into, VarId x, VarId s) {
  if (!T_.is_struct(type(x))) {
    add_into(into, mul(x, s));
    return;
  }
  for (const Field& f : T_.struct_def(type(x)).fields) {
    if (!has_float(T_, f.type)) continue;
    const VarId part = field(into, f);
    add_scaled_into(part, field(x, f), s);
    Op& set = emit(OpCode::Set, into, {into, part});
    set.path = {PathStep{false, f.offset, 0, 0}};
  }
}

VarId AdjointEmitter::field(VarId s, const Field& f) {
  const VarId d = new_var("", f.type);
  emit(OpCode::Get, d, {s}).path = {PathStep{false, f.offset, 0, 0}};
  return d;
}

void AdjointEmitter::zero(VarId v) {
  // Straight into v: a constant and then a copy are two passes over a whole-array adjoint (a
  // vectorised loop's, 1192 words per lane for earnings_logearn_height.ab).
  emit(OpCode::Const, v, {}).imm.assign(T_.words(type(v)), 0u);
}

VarId AdjointEmitter::transposed(VarId m) {
  const TypeId t = type(m);
  const uint32_t rows = T_[t].count, cols = T_[T_[t].elem].count;
  return op(OpCode::Transpose, T_.array(T_.array(Types::kFloat, rows), cols), {m});
}

TypeId AdjointEmitter::with_leaf(TypeId t, TypeId scalar) {
  if (!T_.is_array(t)) return scalar;
  return T_.array(with_leaf(T_[t].elem, scalar), T_[t].count);
}

// ---- the rules ----

namespace {

// One op's rule, written in the emitter's terms: `a` are the op's operands, `g` the adjoint of
// its result, arg(k) operand k's primal value and res() the result's.
struct RuleTerms {
  AdjointEmitter& e;
  const Op& o;
  const std::vector<VarId>& a;
  VarId g, r;

  VarId arg(size_t k) { return e.val(a[k]); }
  VarId res() { return e.result_value(o, r); }
  VarId one() { return e.fconst(1.0f); }
  // The emitter's helpers under the names the rules are written in.
  void acc(VarId target, VarId c) { e.acc(target, c); }
  bool active(VarId v) const { return e.active(v); }
  VarId adjoint_of(VarId v) const { return e.adjoint_of(v); }
  TypeId source_type(VarId v) const { return e.source_type(v); }
  TypeId type(VarId v) const { return e.type(v); }
  TypeId with_leaf(TypeId t, TypeId scalar) { return e.with_leaf(t, scalar); }
  VarId val(VarId v) { return e.val(v); }
  VarId op(OpCode code, TypeId t, std::vector<VarId> args) {
    return e.op(code, t, std::move(args));
  }
  VarId same(OpCode code, VarId x, std::vector<VarId> more = {}) {
    return e.same(code, x, std::move(more));
  }
  VarId mul(VarId x, VarId y) { return e.mul(x, y); }
  VarId fconst(float f) { return e.fconst(f); }
  VarId zeros(TypeId t) { return e.zeros(t); }
  VarId new_var(std::string name, TypeId t) { return e.new_var(std::move(name), t); }
  Op& emit(OpCode code, VarId dst, std::vector<VarId> args) {
    return e.emit(code, dst, std::move(args));
  }
  void add_into(VarId into, VarId c) { e.add_into(into, c); }
  VarId field(VarId s, const Field& f) { return e.field(s, f); }
  VarId transposed(VarId m) { return e.transposed(m); }
  TypeId vjp_result_type(int f) { return e.vjp_result_type(f); }
  const Types& T_ = e.types();
};

// The rules, one member function per op or pair of ops.
struct Rule : RuleTerms {
  void identity_rule() { acc(a[0], g); }
  void neg_rule() { acc(a[0], same(OpCode::Neg, g)); }
  // sign: 1 - 2 [x < 0]
  void abs_rule() {
    const VarId x = arg(0);
    const VarId neg = op(OpCode::Lt, with_leaf(type(x), Types::kBool), {x, fconst(0.0f)});
    const VarId negf = op(OpCode::ToFloat, type(x), {neg});
    const VarId sign = same(OpCode::Sub, one(), {same(OpCode::Add, negf, {negf})});
    acc(a[0], mul(g, sign));
  }
  void sqrt_rule() { acc(a[0], same(OpCode::Div, mul(g, fconst(0.5f)), {res()})); }
  void exp_rule() { acc(a[0], mul(g, res())); }
  void log_rule() { acc(a[0], same(OpCode::Div, g, {arg(0)})); }
  void sin_rule() { acc(a[0], mul(g, same(OpCode::Cos, arg(0)))); }
  void cos_rule() { acc(a[0], same(OpCode::Neg, mul(g, same(OpCode::Sin, arg(0))))); }
  void tanh_rule() {
    const VarId t = res();
    acc(a[0], mul(g, same(OpCode::Sub, one(), {mul(t, t)})));
  }
  void lgamma_rule() { acc(a[0], mul(g, same(OpCode::Digamma, arg(0)))); }
  void digamma_rule() { acc(a[0], mul(g, same(OpCode::Trigamma, arg(0)))); }
  void log1p_rule() { acc(a[0], same(OpCode::Div, g, {same(OpCode::Add, one(), {arg(0)})})); }
  // -1 / (1 - x)
  void log1m_rule() {
    acc(a[0], same(OpCode::Neg, same(OpCode::Div, g, {same(OpCode::Sub, one(), {arg(0)})})));
  }
  void expm1_rule() { acc(a[0], mul(g, same(OpCode::Exp, arg(0)))); }
  void log1p_exp_rule() { acc(a[0], mul(g, same(OpCode::InvLogit, arg(0)))); }
  // +-2/sqrt(pi) e^(-x^2)
  void erf_or_erfc_rule() {
    const VarId x = arg(0);
    const VarId e = same(OpCode::Exp, same(OpCode::Neg, mul(x, x)));
    const float k = o.code == OpCode::Erf ? 1.12837917f : -1.12837917f;
    acc(a[0], mul(g, mul(e, fconst(k))));
  }
  void inv_logit_rule() {
    const VarId s = res();
    acc(a[0], mul(g, mul(s, same(OpCode::Sub, one(), {s}))));
  }
  void add_rule() {
    acc(a[0], g);
    acc(a[1], g);
  }
  void sub_rule() {
    acc(a[0], g);
    acc(a[1], same(OpCode::Neg, g));
  }
  void mul_rule() {
    if (active(a[0])) acc(a[0], mul(g, arg(1)));
    if (active(a[1])) acc(a[1], mul(g, arg(0)));
  }
  void div_rule() {
    const VarId q = same(OpCode::Div, g, {arg(1)});
    acc(a[0], q);
    if (active(a[1])) acc(a[1], same(OpCode::Neg, mul(q, res())));
  }
  // fmod(x, y) = x - trunc(x / y) y
  void rem_rule() {
    acc(a[0], g);
    if (active(a[1])) {
      const VarId n = same(OpCode::Div, same(OpCode::Sub, arg(0), {res()}), {arg(1)});
      acc(a[1], same(OpCode::Neg, mul(g, n)));
    }
  }
  // min = b < a ? b : a; max = b < a ? a : b
  void min_or_max_rule() {
    const VarId x = arg(0), y = arg(1);
    const TypeId ft = T_.is_array(type(x)) ? type(x) : type(y);
    const VarId lt = op(OpCode::Lt, with_leaf(ft, Types::kBool), {y, x});
    const VarId m = op(OpCode::ToFloat, ft, {lt});  // 1 where b < a
    const VarId rest = same(OpCode::Sub, one(), {m});
    acc(a[0], mul(g, o.code == OpCode::Min ? rest : m));
    acc(a[1], mul(g, o.code == OpCode::Min ? m : rest));
  }
  // min(max(x, lo), hi)
  void clamp_rule() {
    const VarId x = arg(0), lo = arg(1), hi = arg(2);
    const TypeId ft = type(o.dst);
    const VarId m = same(OpCode::Max, x, {lo});
    const VarId to_hi =
        op(OpCode::ToFloat, ft, {op(OpCode::Lt, with_leaf(ft, Types::kBool), {hi, m})});
    const VarId to_x =
        op(OpCode::ToFloat, ft, {op(OpCode::Lt, with_leaf(ft, Types::kBool), {lo, x})});
    const VarId below = mul(g, same(OpCode::Sub, one(), {to_hi}));
    acc(a[2], mul(g, to_hi));
    acc(a[0], mul(below, to_x));
    acc(a[1], mul(below, same(OpCode::Sub, one(), {to_x})));
  }
  void pow_rule() {
    const VarId x = arg(0), y = arg(1);
    if (active(a[0]))
      acc(a[0], mul(g, mul(y, same(OpCode::Pow, x, {same(OpCode::Sub, y, {one()})}))));
    if (active(a[1])) {
      // r ln x, and 0 where r is 0 (0^y, whose ln x is -inf) for scalars.
      VarId d = mul(res(), same(OpCode::Log, x));
      if (T_.is_scalar(type(d))) {
        const VarId nz = op(OpCode::Ne, Types::kBool, {res(), fconst(0.0f)});
        d = op(OpCode::Select, Types::kFloat, {nz, d, fconst(0.0f)});
      }
      acc(a[1], mul(g, d));
    }
  }
  void log_sum_exp_rule() {
    // The weights e^(a - r) and e^(b - r) from a - b alone: r = ln(e^a + e^b) keeps none of
    // a's low bits at large magnitudes (a - r at a = -1e7 is off by an ulp of 1e7, 1).
    const VarId diff = same(OpCode::Sub, arg(0), {arg(1)});
    acc(a[0], mul(g, same(OpCode::InvLogit, diff)));
    acc(a[1], mul(g, same(OpCode::InvLogit, same(OpCode::Neg, diff))));
  }
  void dot_rule() {
    if (active(a[0])) acc(a[0], mul(arg(1), g));
    if (active(a[1])) acc(a[1], mul(arg(0), g));
  }
  void sum_rule() { acc(a[0], g); }
  // shared evenly by the elements equal to the result
  void reduce_extreme_rule() {
    const VarId v = arg(0);
    const VarId at = op(OpCode::ToFloat, type(v),
                        {op(OpCode::Eq, with_leaf(type(v), Types::kBool), {v, res()})});
    const VarId share = op(OpCode::Div, Types::kFloat, {g, op(OpCode::Sum, Types::kFloat, {at})});
    acc(a[0], mul(at, share));
  }
  void reduce_log_sum_exp_rule() {
    // softmax from v - max(v), which is exact, not from v - r: r keeps none of v's low bits
    // at large magnitudes (as for the two-argument form).
    const VarId v = arg(0);
    const VarId e =
        same(OpCode::Exp, same(OpCode::Sub, v, {op(OpCode::ReduceMax, Types::kFloat, {v})}));
    acc(a[0], mul(e, op(OpCode::Div, Types::kFloat, {g, op(OpCode::Sum, Types::kFloat, {e})})));
  }
  void mat_mul_rule() {
    const TypeId ta = source_type(a[0]), tb = source_type(a[1]);
    const bool a_matrix = T_.is_array(T_[ta].elem), b_matrix = T_.is_array(T_[tb].elem);
    if (a_matrix && b_matrix) {  // A @ B: A' += G B^T, B' += A^T G
      if (active(a[0])) acc(a[0], op(OpCode::MatMul, ta, {g, transposed(arg(1))}));
      if (active(a[1])) acc(a[1], op(OpCode::MatMul, tb, {transposed(arg(0)), g}));
    } else if (a_matrix) {  // A @ v: A' += outer(g, v), v' += g @ A
      if (active(a[0])) acc(a[0], op(OpCode::Outer, ta, {g, arg(1)}));
      if (active(a[1])) acc(a[1], op(OpCode::MatMul, tb, {g, arg(0)}));
    } else {  // v @ A: v' += A @ g, A' += outer(v, g)
      if (active(a[0])) acc(a[0], op(OpCode::MatMul, ta, {arg(1), g}));
      if (active(a[1])) acc(a[1], op(OpCode::Outer, tb, {arg(0), g}));
    }
  }
  // a' += G @ b, b' += a @ G
  void outer_rule() {
    if (active(a[0])) acc(a[0], op(OpCode::MatMul, source_type(a[0]), {g, arg(1)}));
    if (active(a[1])) acc(a[1], op(OpCode::MatMul, source_type(a[1]), {arg(0), g}));
  }
  void transpose_rule() { acc(a[0], op(OpCode::Transpose, source_type(a[0]), {g})); }
  // A constant square matrix of type t: `below` under the diagonal, `diagonal` on it, `above`
  // over it.
  VarId triangle_mask(TypeId t, float below, float diagonal, float above) {
    const uint32_t n = T_[t].count;
    std::vector<uint32_t> words(size_t{n} * n);
    for (uint32_t i = 0; i < n; ++i)
      for (uint32_t j = 0; j < n; ++j)
        words[size_t{i} * n + j] = float_bits(i > j ? below : i == j ? diagonal : above);
    const VarId d = new_var("", t);
    emit(OpCode::Const, d, {}).imm = std::move(words);
    return d;
  }
  // L = cholesky(A) (Murray 2016, "Differentiation of the Cholesky decomposition"): with Phi the
  // lower triangle, its diagonal halved, M = L^-T Phi(L^T tril(L')) L^-1 and, since only A's
  // lower triangle is read, A' += Phi(M + M^T). L^-1 on the right is the transpose of L^-T on
  // the left.
  void cholesky_rule() {
    const VarId l = res();
    const TypeId t = type(l);
    const VarId phi = triangle_mask(t, 1.0f, 0.5f, 0.0f);
    const VarId p = op(OpCode::MatMul, t, {transposed(l), mul(g, triangle_mask(t, 1, 1, 0))});
    const VarId w = op(OpCode::TriSolveT, t, {l, mul(p, phi)});
    const VarId m = transposed(op(OpCode::TriSolveT, t, {l, transposed(w)}));
    acc(a[0], mul(same(OpCode::Add, m, {transposed(m)}), phi));
  }
  // X = L \ B: B' += L^-T X' =: G, and L' -= tril(G X^T) (tril(outer(G, X)) for vectors).
  void tri_solve_rule() {
    const TypeId tl = source_type(a[0]), tb = source_type(a[1]);
    const VarId grad_b = op(OpCode::TriSolveT, tb, {arg(0), g});
    acc(a[1], grad_b);
    if (!active(a[0])) return;
    const VarId x = res();
    const bool vector = !T_.is_array(T_[tb].elem);
    const VarId product = vector ? op(OpCode::Outer, tl, {grad_b, x})
                                 : op(OpCode::MatMul, tl, {grad_b, transposed(x)});
    acc(a[0], mul(product, triangle_mask(tl, -1.0f, -1.0f, 0.0f)));
  }
  void select_rule() {
    const VarId c = val(a[0]);
    const VarId z = zeros(type(g));
    acc(a[1], op(OpCode::Select, type(g), {c, g, z}));
    acc(a[2], op(OpCode::Select, type(g), {c, z, g}));
  }
  void make_rule() {
    const TypeId t = type(o.dst);
    for (size_t k = 0; k < a.size(); ++k) {
      if (!active(a[k])) continue;
      uint32_t offset = 0;
      if (T_.is_struct(t))
        offset = T_.struct_def(t).fields[k].offset;
      else
        offset = static_cast<uint32_t>(k) * T_.words(T_[t].elem);
      const VarId part = new_var("", source_type(a[k]));
      emit(OpCode::Get, part, {g}).path = {PathStep{false, offset, 0, 0}};
      acc(a[k], part);
    }
  }
  void get_rule() {
    if (!active(a[0])) return;
    std::vector<VarId> idx;
    for (size_t k = 1; k < a.size(); ++k)
      idx.push_back(val(a[k]));
    const VarId into = adjoint_of(a[0]);
    const VarId part = new_var("", type(o.dst));
    std::vector<VarId> get_args{into};
    get_args.insert(get_args.end(), idx.begin(), idx.end());
    emit(OpCode::Get, part, get_args).path = o.path;
    add_into(part, g);
    std::vector<VarId> set_args{into, part};
    set_args.insert(set_args.end(), idx.begin(), idx.end());
    emit(OpCode::Set, into, set_args).path = o.path;
  }
  // d = a0 with [path] = a1
  void set_rule() {
    std::vector<VarId> idx;
    for (size_t k = 2; k < a.size(); ++k)
      idx.push_back(val(a[k]));
    if (active(a[1])) {
      const VarId part = new_var("", source_type(a[1]));
      std::vector<VarId> get_args{g};
      get_args.insert(get_args.end(), idx.begin(), idx.end());
      emit(OpCode::Get, part, get_args).path = o.path;
      acc(a[1], part);
    }
    if (active(a[0])) {
      const VarId rest = new_var("", type(g));
      std::vector<VarId> set_args{g, zeros(source_type(a[1]))};
      set_args.insert(set_args.end(), idx.begin(), idx.end());
      emit(OpCode::Set, rest, set_args).path = o.path;
      acc(a[0], rest);
    }
  }
  void call_rule() {
    std::vector<VarId> args;
    for (VarId x : a)
      args.push_back(val(x));
    args.push_back(g);
    const int vjp = e.vjp_of(o.index);
    const Function& fn = e.callee(o.index);
    const TypeId adj_type = vjp_result_type(o.index);
    const VarId adj = new_var("", adj_type);
    emit(OpCode::Call, adj, args).index = vjp;
    const StructDef& def = T_.struct_def(adj_type);
    size_t field_k = 0;
    for (size_t k = 0; k < a.size(); ++k) {
      if (!has_float(T_, fn.vars[fn.params[k]].type)) continue;
      const Field& f = def.fields[field_k++];
      if (active(a[k])) acc(a[k], field(adj, f));
    }
  }
};

using RuleFn = void (Rule::*)();

constexpr size_t index(OpCode code) {
  return static_cast<size_t>(code);
}

// The rules keyed by op; an op without one has OpInfo::derivative Zero or Missing.
constexpr std::array<RuleFn, index(OpCode::Count_)> kRules = [] {
  std::array<RuleFn, index(OpCode::Count_)> t{};
  t[index(OpCode::Copy)] = &Rule::identity_rule;
  t[index(OpCode::ToFloat)] = &Rule::identity_rule;
  t[index(OpCode::Neg)] = &Rule::neg_rule;
  t[index(OpCode::Abs)] = &Rule::abs_rule;
  t[index(OpCode::Sqrt)] = &Rule::sqrt_rule;
  t[index(OpCode::Exp)] = &Rule::exp_rule;
  t[index(OpCode::Log)] = &Rule::log_rule;
  t[index(OpCode::Sin)] = &Rule::sin_rule;
  t[index(OpCode::Cos)] = &Rule::cos_rule;
  t[index(OpCode::Tanh)] = &Rule::tanh_rule;
  t[index(OpCode::Lgamma)] = &Rule::lgamma_rule;
  t[index(OpCode::Digamma)] = &Rule::digamma_rule;
  t[index(OpCode::Log1p)] = &Rule::log1p_rule;
  t[index(OpCode::Log1m)] = &Rule::log1m_rule;
  t[index(OpCode::Expm1)] = &Rule::expm1_rule;
  t[index(OpCode::Log1pExp)] = &Rule::log1p_exp_rule;
  t[index(OpCode::Erf)] = &Rule::erf_or_erfc_rule;
  t[index(OpCode::Erfc)] = &Rule::erf_or_erfc_rule;
  t[index(OpCode::InvLogit)] = &Rule::inv_logit_rule;
  t[index(OpCode::Add)] = &Rule::add_rule;
  t[index(OpCode::Sub)] = &Rule::sub_rule;
  t[index(OpCode::Mul)] = &Rule::mul_rule;
  t[index(OpCode::Div)] = &Rule::div_rule;
  t[index(OpCode::Rem)] = &Rule::rem_rule;
  t[index(OpCode::Min)] = &Rule::min_or_max_rule;
  t[index(OpCode::Max)] = &Rule::min_or_max_rule;
  t[index(OpCode::Clamp)] = &Rule::clamp_rule;
  t[index(OpCode::Pow)] = &Rule::pow_rule;
  t[index(OpCode::LogSumExp)] = &Rule::log_sum_exp_rule;
  t[index(OpCode::Dot)] = &Rule::dot_rule;
  t[index(OpCode::Sum)] = &Rule::sum_rule;
  t[index(OpCode::ReduceMax)] = &Rule::reduce_extreme_rule;
  t[index(OpCode::ReduceMin)] = &Rule::reduce_extreme_rule;
  t[index(OpCode::ReduceLogSumExp)] = &Rule::reduce_log_sum_exp_rule;
  t[index(OpCode::MatMul)] = &Rule::mat_mul_rule;
  t[index(OpCode::Outer)] = &Rule::outer_rule;
  t[index(OpCode::Transpose)] = &Rule::transpose_rule;
  t[index(OpCode::Cholesky)] = &Rule::cholesky_rule;
  t[index(OpCode::TriSolve)] = &Rule::tri_solve_rule;
  t[index(OpCode::Select)] = &Rule::select_rule;
  t[index(OpCode::Make)] = &Rule::make_rule;
  t[index(OpCode::Get)] = &Rule::get_rule;
  t[index(OpCode::Set)] = &Rule::set_rule;
  t[index(OpCode::Call)] = &Rule::call_rule;
  return t;
}();

}  // namespace

void AdjointEmitter::rule(const Op& o, VarId g, VarId r) {
  const RuleFn fn = kRules[index(o.code)];
  if (!fn) return;  // no derivative (integers, comparisons, floor, ceil, constants, uniforms)
  Rule rule{{*this, o, o.args, g, r}};
  (rule.*fn)();
}

bool AdjointEmitter::in_place_rule(const Op& o, VarId g0) {
  const VarId d = o.dst;
  if (o.args.size() < 2 || o.args[0] != d || o.args[1] == d) return false;
  if (o.code == OpCode::Add || o.code == OpCode::Sub) {
    acc(o.args[1], o.code == OpCode::Add ? g0 : same(OpCode::Neg, g0));
    return true;
  }
  if (o.code != OpCode::Set) return false;
  if (active(o.args[1])) {
    std::vector<VarId> idx;
    for (size_t k = 2; k < o.args.size(); ++k)
      idx.push_back(val(o.args[k]));
    const VarId part = new_var("", source_type(o.args[1]));
    std::vector<VarId> get_args{g0};
    get_args.insert(get_args.end(), idx.begin(), idx.end());
    emit(OpCode::Get, part, get_args).path = o.path;
    acc(o.args[1], part);
    const VarId z = zeros(source_type(o.args[1]));
    std::vector<VarId> set_args{g0, z};
    set_args.insert(set_args.end(), idx.begin(), idx.end());
    emit(OpCode::Set, g0, set_args).path = o.path;
  }
  return true;
}

bool has_derivative_rule(OpCode code) {
  return kRules[index(code)] != nullptr;
}

}  // namespace ab
