#include "ir/ops.h"

#include <array>
#include <bit>

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
    case OpCode::Dot: case OpCode::Sum:
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
    case OpCode::InvLogit: case OpCode::LogSumExp:
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
