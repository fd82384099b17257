#include "ir/ops.h"

#include <algorithm>
#include <array>
#include <bit>
#include <vector>

#include <fmt/format.h>

#include "ir/scalar_rule.h"

namespace ab {
namespace {

using C = OpClass;

// Indexed by OpCode. GLSL helpers named ab_* live in the code generator's prelude; the
// transcendental and special ones (ab_exp ... ab_pow, ab_lgamma ...) are shaders/ab_math.glsl,
// which is also ir/float_math.
constexpr std::array<OpInfo, static_cast<size_t>(OpCode::Count_)> kOps = {{
    {"const", C::Structural, 0, true, nullptr},
    {"copy", C::Structural, 1, true, nullptr},
    {"make", C::Structural, -1, true, nullptr},
    {"get", C::Structural, -1, true, nullptr},
    {"set", C::Structural, -1, true, nullptr},
    {"uniform_get", C::Structural, -1, true, nullptr},
    {"select", C::Structural, 3, true, "({0} ? {1} : {2})"},
    {"neg", C::Unary, 1, true, "ab_neg({0})"},
    {"not", C::Unary, 1, true, "(!{0})"},
    {"bitnot", C::Unary, 1, true, "(~{0})"},
    {"abs", C::Unary, 1, true, "ab_abs({0})"},
    {"sqrt", C::Unary, 1, true, "sqrt({0})"},
    {"exp", C::Unary, 1, true, "ab_exp({0})"},
    {"log", C::Unary, 1, true, "ab_log({0})"},
    {"sin", C::Unary, 1, true, "ab_sin({0})"},
    {"cos", C::Unary, 1, true, "ab_cos({0})"},
    {"tanh", C::Unary, 1, true, "ab_tanh({0})"},
    {"lgamma", C::Unary, 1, true, "ab_lgamma({0})"},
    {"digamma", C::Unary, 1, true, "ab_digamma({0})"},
    {"trigamma", C::Unary, 1, true, "ab_trigamma({0})"},
    {"log1p", C::Unary, 1, true, "ab_log1p({0})"},
    {"expm1", C::Unary, 1, true, "ab_expm1({0})"},
    {"log1p_exp", C::Unary, 1, true, "ab_log1p_exp({0})"},
    {"erf", C::Unary, 1, true, "ab_erf({0})"},
    {"erfc", C::Unary, 1, true, "ab_erfc({0})"},
    {"inv_logit", C::Unary, 1, true, "ab_inv_logit({0})"},
    {"floor", C::Unary, 1, true, "floor({0})"},
    {"ceil", C::Unary, 1, true, "ceil({0})"},
    {"to_int", C::Unary, 1, true, "ab_to_int({0})"},
    {"to_uint", C::Unary, 1, true, "ab_to_uint({0})"},
    {"to_float", C::Unary, 1, true, "ab_to_float({0})"},
    {"add", C::Binary, 2, true, "({0} + {1})"},
    {"sub", C::Binary, 2, true, "({0} - {1})"},
    {"mul", C::Binary, 2, true, "({0} * {1})"},
    {"div", C::Binary, 2, true, "ab_div({0}, {1})"},
    {"rem", C::Binary, 2, true, "ab_rem({0}, {1})"},
    {"bitand", C::Binary, 2, true, "({0} & {1})"},
    {"bitor", C::Binary, 2, true, "({0} | {1})"},
    {"bitxor", C::Binary, 2, true, "({0} ^ {1})"},
    {"shl", C::Binary, 2, true, "ab_shl({0}, {1})"},
    {"shr", C::Binary, 2, true, "ab_shr({0}, {1})"},
    {"eq", C::Binary, 2, true, "({0} == {1})"},
    {"ne", C::Binary, 2, true, "({0} != {1})"},
    {"lt", C::Binary, 2, true, "({0} < {1})"},
    {"le", C::Binary, 2, true, "({0} <= {1})"},
    {"gt", C::Binary, 2, true, "({0} > {1})"},
    {"ge", C::Binary, 2, true, "({0} >= {1})"},
    {"and", C::Binary, 2, true, "({0} && {1})"},
    {"or", C::Binary, 2, true, "({0} || {1})"},
    {"min", C::Binary, 2, true, "ab_min({0}, {1})"},
    {"max", C::Binary, 2, true, "ab_max({0}, {1})"},
    {"log_sum_exp", C::Binary, 2, true, "ab_log_sum_exp({0}, {1})"},
    {"pow", C::Binary, 2, true, "ab_pow({0}, {1})"},
    {"clamp", C::Ternary, 3, true, "ab_min(ab_max({0}, {1}), {2})"},
    {"dot", C::Reduction, 2, true, nullptr},
    {"sum", C::Reduction, 1, true, nullptr},
    {"reduce_max", C::Reduction, 1, true, nullptr},
    {"reduce_min", C::Reduction, 1, true, nullptr},
    {"reduce_log_sum_exp", C::Reduction, 1, true, nullptr},
    {"matmul", C::Matrix, 2, true, nullptr},
    {"outer", C::Matrix, 2, true, nullptr},
    {"transpose", C::Matrix, 1, true, nullptr},
    {"rand_uniform", C::Random, 0, true, nullptr},
    {"rand_normal", C::Random, 0, true, nullptr},
    {"assert", C::Check, 1, false, nullptr},
    {"emit", C::Output, 1, false, nullptr},
    {"call", C::Control, -1, true, nullptr},
    {"push", C::Stack, 1, false, nullptr},
    {"pop", C::Stack, 1, false, nullptr},
    {"update", C::Stack, 1, false, nullptr},
}};

}  // namespace

const OpInfo& op_info(OpCode code) {
  return kOps.at(static_cast<size_t>(code));
}

std::optional<OpCode> op_by_name(std::string_view name) {
  for (size_t i = 0; i < kOps.size(); ++i)
    if (name == kOps[i].name) return static_cast<OpCode>(i);
  return std::nullopt;
}

namespace {

// The dimensions of a float vector (one) or matrix (two), or none for anything else.
std::vector<uint32_t> float_dims(const Types& types, TypeId t) {
  std::vector<uint32_t> dims;
  while (t >= 0 && types.is_array(t)) {
    dims.push_back(types[t].count);
    t = types[t].elem;
  }
  if (t != Types::kFloat || dims.size() > 2) dims.clear();
  return dims;
}

std::string spelling(const Types& types, TypeId t) {
  return types.to_string(t);
}

}  // namespace

std::optional<MatrixShape> matrix_shape(const Types& types, OpCode code, TypeId a, TypeId b,
                                        std::string& why) {
  const std::vector<uint32_t> da = float_dims(types, a);
  if (code == OpCode::Transpose) {
    if (da.size() == 2) return MatrixShape{da[0], da[1], 0};
    why = fmt::format("'transpose' needs a float matrix ('float[M][K]'), found '{}'",
                      spelling(types, a));
    return std::nullopt;
  }
  const std::vector<uint32_t> db = float_dims(types, b);
  if (code == OpCode::Outer) {
    if (da.size() == 1 && db.size() == 1) return MatrixShape{da[0], 1, db[0]};
    why = fmt::format("'outer' needs two float vectors, found '{}' and '{}'", spelling(types, a),
                      spelling(types, b));
    return std::nullopt;
  }
  if (da.empty() || db.empty() || (da.size() == 1 && db.size() == 1)) {
    why = fmt::format(
        "'@' multiplies a float matrix by a float vector or matrix ('float[M][K] @ float[K]', "
        "'float[M] @ float[M][K]', 'float[M][K] @ float[K][P]'), found '{}' @ '{}'{}",
        spelling(types, a), spelling(types, b),
        da.size() == 1 && db.size() == 1 ? ": for two vectors use 'dot'" : "");
    return std::nullopt;
  }
  const MatrixShape s{da.size() == 2 ? da[0] : 1, da.back(), db.size() == 2 ? db[1] : 1};
  if (s.k == db[0]) return s;
  why = fmt::format(
      "'@' needs the left operand's {} ({}) to equal the right one's {} ({}): "
      "'{}' @ '{}'",
      da.size() == 2 ? "column count" : "length", s.k, db.size() == 2 ? "row count" : "length",
      db[0], spelling(types, a), spelling(types, b));
  return std::nullopt;
}

MatrixShape matrix_shape(const Types& types, OpCode code, TypeId a, TypeId b) {
  std::string why;
  return *matrix_shape(types, code, a, b, why);
}

std::vector<uint32_t> matrix_result_dims(const Types& types, OpCode code, TypeId a, TypeId b) {
  const MatrixShape s = matrix_shape(types, code, a, b);
  if (code == OpCode::Transpose) return {s.k, s.m};
  if (code == OpCode::Outer) return {s.m, s.p};
  const bool a_matrix = float_dims(types, a).size() == 2,
             b_matrix = float_dims(types, b).size() == 2;
  if (a_matrix && b_matrix) return {s.m, s.p};
  return {a_matrix ? s.m : s.p};
}

void matrix_words(OpCode code, const MatrixShape& s, const uint32_t* a, const uint32_t* b,
                  uint32_t* out) {
  Fault fault = Fault::None;
  if (code == OpCode::Transpose) {
    for (uint32_t m = 0; m < s.m; ++m)
      for (uint32_t k = 0; k < s.k; ++k)
        out[size_t{k} * s.m + m] = a[size_t{m} * s.k + k];
    return;
  }
  if (code == OpCode::Outer) {
    for (uint32_t m = 0; m < s.m; ++m)
      for (uint32_t p = 0; p < s.p; ++p) {
        const uint32_t pair[2] = {a[m], b[p]};
        scalar_rule(OpCode::Mul, Scalar::Float, pair, out[size_t{m} * s.p + p], fault);
      }
    return;
  }
  for (uint32_t m = 0; m < s.m; ++m)
    for (uint32_t p = 0; p < s.p; ++p) {
      uint32_t total = 0;  // +0
      for (uint32_t first = 0; first < s.k; first += kProductBlock) {
        const uint32_t end = std::min(first + kProductBlock, s.k);
        uint32_t partial = 0;
        for (uint32_t k = first; k < end; ++k) {
          const uint32_t pair[2] = {a[size_t{m} * s.k + k], b[size_t{k} * s.p + p]};
          uint32_t term;
          scalar_rule(OpCode::Mul, Scalar::Float, pair, term, fault);
          const uint32_t sum[2] = {partial, term};
          scalar_rule(OpCode::Add, Scalar::Float, sum, partial, fault);
        }
        const uint32_t sum[2] = {total, partial};
        scalar_rule(OpCode::Add, Scalar::Float, sum, total, fault);
      }
      out[size_t{m} * s.p + p] = total;
    }
}

std::string fault_text(const LaneError& e) {
  return e.detail.empty() ? std::string(fault_name(e.code))
                          : fmt::format("{}: {}", fault_name(e.code), e.detail);
}

// From here to the end the op semantics are written as tables, one case to a line; clang-format
// would spread each case over two or three.
// clang-format off
const char* fault_name(Fault f) {
  switch (f) {
    case Fault::None: return "none";
    case Fault::StackOverflow: return "stack_overflow";
    case Fault::DivisionByZero: return "division_by_zero";
    case Fault::IndexOutOfRange: return "index_out_of_range";
    case Fault::AssertFailed: return "assert_failed";
    case Fault::StepBudget: return "step_budget";
  }
  return "unknown";
}

std::optional<Scalar> elementwise_result(OpCode code, Scalar in) {
  using namespace scalar_detail;
  switch (code) {
    case OpCode::Neg: case OpCode::Abs: case OpCode::Add: case OpCode::Sub: case OpCode::Mul:
    case OpCode::Div: case OpCode::Rem: case OpCode::Min: case OpCode::Max: case OpCode::Clamp:
    case OpCode::Dot: case OpCode::Sum: case OpCode::ReduceMax: case OpCode::ReduceMin:
      if (is_numeric(in)) return in;
      return std::nullopt;
    case OpCode::Not: case OpCode::And: case OpCode::Or:
      if (in == Scalar::Bool) return in;
      return std::nullopt;
    case OpCode::BitNot: case OpCode::BitAnd: case OpCode::BitOr: case OpCode::BitXor:
    case OpCode::Shl: case OpCode::Shr:
      if (is_integer(in)) return in;
      return std::nullopt;
    case OpCode::Sqrt: case OpCode::Exp: case OpCode::Log: case OpCode::Sin: case OpCode::Cos:
    case OpCode::Tanh: case OpCode::Floor: case OpCode::Ceil: case OpCode::Pow:
    case OpCode::Lgamma: case OpCode::Digamma: case OpCode::Trigamma: case OpCode::Log1p:
    case OpCode::Expm1: case OpCode::Log1pExp: case OpCode::Erf: case OpCode::Erfc:
    case OpCode::InvLogit: case OpCode::LogSumExp: case OpCode::ReduceLogSumExp:
    case OpCode::MatMul: case OpCode::Outer: case OpCode::Transpose:
      if (in == Scalar::Float) return in;
      return std::nullopt;
    case OpCode::Eq: case OpCode::Ne: return Scalar::Bool;
    case OpCode::Lt: case OpCode::Le: case OpCode::Gt: case OpCode::Ge:
      if (is_numeric(in)) return Scalar::Bool;
      return std::nullopt;
    case OpCode::ToInt: return Scalar::Int;
    case OpCode::ToUInt: return Scalar::UInt;
    case OpCode::ToFloat: return Scalar::Float;
    case OpCode::Select: return in;
    default: return std::nullopt;
  }
}

uint32_t float_bits(float f) { return std::bit_cast<uint32_t>(f); }
float bits_float(uint32_t w) { return std::bit_cast<float>(w); }

bool eval_scalar(OpCode code, Scalar in, const uint32_t* x, uint32_t& r, Fault& fault) {
  return scalar_rule(code, in, x, r, fault);
}

// clang-format on
}  // namespace ab
