#include "ir/ops.h"

#include <algorithm>
#include <array>
#include <bit>
#include <vector>

#include <fmt/format.h>

#include "ir/linear_algebra.h"
#include "ir/scalar_rule.h"

namespace ab {
namespace {

using C = OpClass;
using A = Accepts;
using Y = Yields;
using S = Surface;
using D = Derivative;

// Row makers for the common shapes; the rest spell their row out.
constexpr OpInfo structural(const char* name, int arity, D derivative = D::Rule) {
  return {name, C::Structural, arity,   true,      nullptr, A::None, Y::None,
          {},   nullptr,       S::None, derivative};
}
// A float function of one float: its GLSL helper, lavapipe cost and, for most, a derivative.
constexpr OpInfo float_fn(const char* name, const char* glsl, LoopCost cost = {},
                          D derivative = D::Rule) {
  return {name, C::Unary, 1, true, glsl, A::Float, Y::Float, cost, name, S::FloatMath, derivative};
}
constexpr OpInfo unary(const char* name, const char* glsl, A accepts, Y yields,
                       bool differentiable = false, const char* builtin = nullptr,
                       Surface surface = S::None) {
  return {name,
          C::Unary,
          1,
          true,
          glsl,
          accepts,
          yields,
          {},
          builtin,
          surface,
          differentiable ? D::Rule : D::Zero};
}
constexpr OpInfo binary(const char* name, const char* glsl, A accepts, Y yields,
                        bool differentiable = false, const char* builtin = nullptr,
                        Surface surface = S::None, LoopCost cost = {}) {
  return {name,
          C::Binary,
          2,
          true,
          glsl,
          accepts,
          yields,
          cost,
          builtin,
          surface,
          differentiable ? D::Rule : D::Zero};
}
constexpr OpInfo reduction(const char* name, int arity, A accepts, const char* builtin) {
  return {name,    C::Reduction, arity, true,    nullptr,
          accepts, Y::Same,      {},    builtin, builtin ? S::ArrayFold : S::None,
          D::Rule};
}
constexpr OpInfo matrix(const char* name, int arity) {
  return {name, C::Matrix, arity, true, nullptr, A::Float, Y::Float, {}, nullptr, S::None, D::Rule};
}
constexpr OpInfo stack(const char* name) {
  return {name, C::Stack, 1, false, nullptr};
}

// The special functions' costs: their own short loops and, below 0, abm_reduce through
// abm_sinpi_frac (62 + 8). abm_recip's Newton steps are written out (no loop), so the functions
// built on it cost none; the 4s the gamma functions' costs still count for it are a margin.
constexpr LoopCost kReduce = {62 + 8, 1 + 8};  // abm_reduce bit by bit; 4 table switches

// Indexed by OpCode, one op to a row (clang-format would spread a row over a dozen lines). GLSL
// helpers named ab_* live in the code generator's prelude; the transcendental and special ones
// (ab_exp ... ab_pow, ab_lgamma ...) are shaders/ab_math.glsl, which is also ir/float_math.
// clang-format off
constexpr std::array<OpInfo, static_cast<size_t>(OpCode::Count_)> kOps = {{
    structural("const", 0, D::Zero),
    structural("copy", 1),
    structural("make", -1),
    structural("get", -1),
    structural("set", -1),
    structural("uniform_get", -1, D::Zero),
    {"select", C::Structural, 3, true, "({0} ? {1} : {2})", A::Any, Y::Same, {}, nullptr, S::None, D::Rule},
    unary("neg", "ab_neg({0})", A::Numeric, Y::Same, true, "-", S::Operator),
    unary("not", "(!{0})", A::Bool, Y::Same, false, "!", S::Operator),
    unary("bitnot", "(~{0})", A::Integer, Y::Same, false, "~", S::Operator),
    unary("abs", "ab_abs({0})", A::Numeric, Y::Same, true, "abs", S::Numeric),
    float_fn("sqrt", "sqrt({0})"),
    float_fn("exp", "ab_exp({0})"),
    float_fn("log", "ab_log({0})"),
    float_fn("sin", "ab_sin({0})", kReduce),
    float_fn("cos", "ab_cos({0})", kReduce),
    float_fn("tanh", "ab_tanh({0})"),
    float_fn("lgamma", "ab_lgamma({0})", {7 + 4 + 4 + 62 + 8, 1 + 2 + 1 + 8}),
    float_fn("digamma", "ab_digamma({0})", {8 + 8 * 4 + 4 + 4 + 62 + 8 + 4, 1 + 4 + 1 + 8}),
    float_fn("trigamma", "ab_trigamma({0})", {11 + 11 * 4 + 4 + 62 + 8 + 4, 1 + 3 + 1 + 8}, D::Missing),
    float_fn("log1p", "ab_log1p({0})"),
    float_fn("log1m", "ab_log1m({0})"),
    float_fn("expm1", "ab_expm1({0})"),
    float_fn("log1p_exp", "ab_log1p_exp({0})"),
    float_fn("erf", "ab_erf({0})"),
    float_fn("erfc", "ab_erfc({0})"),
    float_fn("inv_logit", "ab_inv_logit({0})"),
    float_fn("floor", "floor({0})", {}, D::Zero),
    float_fn("ceil", "ceil({0})", {}, D::Zero),
    unary("to_int", "ab_to_int({0})", A::Any, Y::Int, false, "int", S::Conversion),
    unary("to_uint", "ab_to_uint({0})", A::Any, Y::UInt, false, "uint", S::Conversion),
    unary("to_float", "ab_to_float({0})", A::Any, Y::Float, true, "float", S::Conversion),
    binary("add", "({0} + {1})", A::Numeric, Y::Same, true, "+", S::Operator),
    binary("sub", "({0} - {1})", A::Numeric, Y::Same, true, "-", S::Operator),
    binary("mul", "({0} * {1})", A::Numeric, Y::Same, true, "*", S::Operator),
    binary("div", "ab_div({0}, {1})", A::Numeric, Y::Same, true, "/", S::Operator),
    binary("rem", "ab_rem({0}, {1})", A::Numeric, Y::Same, true, "%", S::Operator, {400, 4}),  // fmodf's long division
    binary("bitand", "({0} & {1})", A::Integer, Y::Same, false, "&", S::Operator),
    binary("bitor", "({0} | {1})", A::Integer, Y::Same, false, "|", S::Operator),
    binary("bitxor", "({0} ^ {1})", A::Integer, Y::Same, false, "^", S::Operator),
    binary("shl", "ab_shl({0}, {1})", A::Integer, Y::Same, false, "<<", S::Operator),
    binary("shr", "ab_shr({0}, {1})", A::Integer, Y::Same, false, ">>", S::Operator),
    binary("eq", "({0} == {1})", A::Any, Y::Bool, false, "==", S::Operator),
    binary("ne", "({0} != {1})", A::Any, Y::Bool, false, "!=", S::Operator),
    binary("lt", "({0} < {1})", A::Numeric, Y::Bool, false, "<", S::Operator),
    binary("le", "({0} <= {1})", A::Numeric, Y::Bool, false, "<=", S::Operator),
    binary("gt", "({0} > {1})", A::Numeric, Y::Bool, false, ">", S::Operator),
    binary("ge", "({0} >= {1})", A::Numeric, Y::Bool, false, ">=", S::Operator),
    binary("and", "({0} && {1})", A::Bool, Y::Same, false, "&&", S::Operator),
    binary("or", "({0} || {1})", A::Bool, Y::Same, false, "||", S::Operator),
    binary("min", "ab_min({0}, {1})", A::Numeric, Y::Same, true, "min", S::Elementwise),
    binary("max", "ab_max({0}, {1})", A::Numeric, Y::Same, true, "max", S::Elementwise),
    binary("log_sum_exp", "ab_log_sum_exp({0}, {1})", A::Float, Y::Same, true, "log_sum_exp", S::FloatPair),
    binary("pow", "ab_pow({0}, {1})", A::Float, Y::Same, true, "pow", S::FloatPair, {8, 1}),  // square-and-multiply
    {"clamp", C::Ternary, 3, true, "ab_min(ab_max({0}, {1}), {2})", A::Numeric, Y::Same, {}, "clamp", S::Elementwise, D::Rule},
    reduction("dot", 2, A::Numeric, nullptr),
    reduction("sum", 1, A::Numeric, nullptr),
    reduction("reduce_max", 1, A::Numeric, "max"),
    reduction("reduce_min", 1, A::Numeric, "min"),
    reduction("reduce_log_sum_exp", 1, A::Float, "log_sum_exp"),
    {"matmul", C::Matrix, 2, true, nullptr, A::Float, Y::Float, {}, "@", S::Operator, D::Rule},
    matrix("outer", 2),
    matrix("transpose", 1),
    matrix("cholesky", 1),
    matrix("tri_solve", 2),
    {"tri_solve_t", C::Matrix, 2, true, nullptr, A::Float, Y::Float, {}, nullptr, S::None, D::Missing},  // derivatives' own
    {"rand_uniform", C::Random, 0, true, nullptr, A::None, Y::Float, {11, 1}, "uniform", S::Random},  // Philox rounds
    {"rand_normal", C::Random, 0, true, nullptr, A::None, Y::Float, {11 + 62 + 8, 1 + 9}, "normal", S::Random},  // then ab_cos
    {"assert", C::Check, 1, false, nullptr},
    {"emit", C::Output, 1, false, nullptr},
    {"call", C::Control, -1, true, nullptr, A::None, Y::None, {}, nullptr, S::None, D::Rule},
    stack("push"),
    stack("pop"),
    stack("update"),
}};
// clang-format on

}  // namespace

const OpInfo& op_info(OpCode code) {
  return kOps.at(static_cast<size_t>(code));
}

std::optional<OpCode> op_by_name(std::string_view name) {
  for (size_t i = 0; i < kOps.size(); ++i)
    if (name == kOps[i].name) return static_cast<OpCode>(i);
  return std::nullopt;
}

// max(v) and max(a, b) share a name: one argument means the fold over an array.
std::optional<OpCode> op_by_builtin(std::string_view name, size_t args) {
  std::optional<OpCode> other;
  for (size_t i = 0; i < kOps.size(); ++i) {
    const OpInfo& op = kOps[i];
    if (!op.builtin || op.surface == Surface::Operator || name != op.builtin) continue;
    const bool fold = op.surface == Surface::ArrayFold;
    if (fold == (args == 1)) return static_cast<OpCode>(i);
    if (!fold) other = static_cast<OpCode>(i);
  }
  return other;
}

std::optional<OpCode> op_by_operator(std::string_view symbol, int arity) {
  for (size_t i = 0; i < kOps.size(); ++i) {
    const OpInfo& op = kOps[i];
    if (op.surface == Surface::Operator && symbol == op.builtin && op.arity == arity)
      return static_cast<OpCode>(i);
  }
  return std::nullopt;
}

bool is_op_builtin(std::string_view name) {
  return std::any_of(kOps.begin(), kOps.end(), [&](const OpInfo& op) {
    return op.builtin && op.surface != Surface::Operator && name == op.builtin;
  });
}

LoopCost helper_cost(OpCode code, Scalar in) {
  return in == Scalar::Float ? op_info(code).cost : LoopCost{};
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

Expected<MatrixShape> checked_matrix_shape(const Types& types, OpCode code, TypeId a, TypeId b) {
  const std::vector<uint32_t> da = float_dims(types, a);
  if (code == OpCode::Transpose) {
    if (da.size() == 2) return MatrixShape{da[0], da[1], 0};
    return Error{fmt::format("'transpose' needs a float matrix ('float[M][K]'), found '{}'",
                             spelling(types, a))};
  }
  if (code == OpCode::Cholesky) {
    if (da.size() == 2 && da[0] == da[1]) return MatrixShape{da[0], da[0], 0};
    return Error{
        fmt::format("'cholesky_decompose' needs a square float matrix ('float[N][N]'), found '{}'",
                    spelling(types, a))};
  }
  const std::vector<uint32_t> db = float_dims(types, b);
  if (is_triangular(code)) {
    if (da.size() == 2 && da[0] == da[1] && !db.empty() && db[0] == da[0])
      return MatrixShape{da[0], da[0], db.size() == 2 ? db[1] : 1};
    return Error{fmt::format(
        "'mdivide_left_tri_low' needs a square float matrix 'float[N][N]' and a float vector "
        "'float[N]' or matrix 'float[N][P]' of as many rows, found '{}' and '{}'",
        spelling(types, a), spelling(types, b))};
  }
  if (code == OpCode::Outer) {
    if (da.size() == 1 && db.size() == 1) return MatrixShape{da[0], 1, db[0]};
    return Error{fmt::format("'outer' needs two float vectors, found '{}' and '{}'",
                             spelling(types, a), spelling(types, b))};
  }
  if (da.empty() || db.empty() || (da.size() == 1 && db.size() == 1)) {
    return Error{fmt::format(
        "'@' multiplies a float matrix by a float vector or matrix ('float[M][K] @ float[K]', "
        "'float[M] @ float[M][K]', 'float[M][K] @ float[K][P]'), found '{}' @ '{}'{}",
        spelling(types, a), spelling(types, b),
        da.size() == 1 && db.size() == 1 ? ": for two vectors use 'dot'" : "")};
  }
  const MatrixShape s{da.size() == 2 ? da[0] : 1, da.back(), db.size() == 2 ? db[1] : 1};
  if (s.k == db[0]) return s;
  return Error{fmt::format(
      "'@' needs the left operand's {} ({}) to equal the right one's {} ({}): "
      "'{}' @ '{}'",
      da.size() == 2 ? "column count" : "length", s.k, db.size() == 2 ? "row count" : "length",
      db[0], spelling(types, a), spelling(types, b))};
}

MatrixShape matrix_shape(const Types& types, OpCode code, TypeId a, TypeId b) {
  return *checked_matrix_shape(types, code, a, b);
}

std::vector<uint32_t> matrix_result_dims(const Types& types, OpCode code, TypeId a, TypeId b) {
  const MatrixShape s = matrix_shape(types, code, a, b);
  if (code == OpCode::Transpose) return {s.k, s.m};
  if (code == OpCode::Outer) return {s.m, s.p};
  if (code == OpCode::Cholesky) return {s.m, s.m};
  if (is_triangular(code)) return float_dims(types, b);
  const bool a_matrix = float_dims(types, a).size() == 2,
             b_matrix = float_dims(types, b).size() == 2;
  if (a_matrix && b_matrix) return {s.m, s.p};
  return {a_matrix ? s.m : s.p};
}

void matrix_words(OpCode code, const MatrixShape& s, const uint32_t* a, const uint32_t* b,
                  uint32_t* out) {
  Fault fault = Fault::None;
  if (is_triangular(code)) return triangular_words(code, s, a, b, out);
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
      for_each_product_block(s.k, [&](uint32_t first, uint32_t end) {
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
      });
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
    case Fault::ShardFailed: return "shard_failed";
  }
  return "unknown";
}

// clang-format on
std::optional<Scalar> elementwise_result(OpCode code, Scalar in) {
  const OpInfo& op = op_info(code);
  bool accepted = false;
  switch (op.accepts) {
    case Accepts::None:
      return std::nullopt;
    case Accepts::Any:
      accepted = true;
      break;
    case Accepts::Numeric:
      accepted = in != Scalar::Bool;
      break;
    case Accepts::Bool:
      accepted = in == Scalar::Bool;
      break;
    case Accepts::Integer:
      accepted = in == Scalar::Int || in == Scalar::UInt;
      break;
    case Accepts::Float:
      accepted = in == Scalar::Float;
      break;
  }
  if (!accepted) return std::nullopt;
  switch (op.yields) {
    case Yields::None:
      return std::nullopt;
    case Yields::Same:
      return in;
    case Yields::Bool:
      return Scalar::Bool;
    case Yields::Int:
      return Scalar::Int;
    case Yields::UInt:
      return Scalar::UInt;
    case Yields::Float:
      return Scalar::Float;
  }
  return std::nullopt;
}
// clang-format off

uint32_t float_bits(float f) { return std::bit_cast<uint32_t>(f); }
float bits_float(uint32_t w) { return std::bit_cast<float>(w); }

bool eval_scalar(OpCode code, Scalar in, const uint32_t* x, uint32_t& r, Fault& fault) {
  return scalar_rule(code, in, x, r, fault);
}

// clang-format on
}  // namespace ab
