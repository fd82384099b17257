#include "ir/ops.h"

#include "ir/float_math.h"

#include <array>
#include <bit>
#include <cmath>
#include <limits>

namespace ab {
namespace {

using C = OpClass;

// Indexed by OpCode. GLSL helpers named ab_* live in the code generator's prelude; the
// transcendental ones (ab_exp ... ab_pow) are shaders/ab_math.glsl, which is also ir/float_math.
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

int32_t as_int(uint32_t w) {
  return static_cast<int32_t>(w);
}
uint32_t from_bool(bool b) {
  return b ? 1u : 0u;
}

int32_t float_to_int(float f) {
  if (std::isnan(f)) return 0;
  if (f >= 2147483648.0f) return std::numeric_limits<int32_t>::max();
  if (f < -2147483648.0f) return std::numeric_limits<int32_t>::min();
  return static_cast<int32_t>(f);
}

uint32_t float_to_uint(float f) {
  if (std::isnan(f) || f <= -1.0f) return 0;
  if (f >= 4294967296.0f) return std::numeric_limits<uint32_t>::max();
  return f < 0.0f ? 0u : static_cast<uint32_t>(f);
}

bool is_numeric(Scalar s) {
  return s != Scalar::Bool;
}
bool is_integer(Scalar s) {
  return s == Scalar::Int || s == Scalar::UInt;
}

}  // namespace

const OpInfo& op_info(OpCode code) {
  return kOps.at(static_cast<size_t>(code));
}

std::optional<OpCode> op_by_name(std::string_view name) {
  for (size_t i = 0; i < kOps.size(); ++i)
    if (name == kOps[i].name) return static_cast<OpCode>(i);
  return std::nullopt;
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

uint32_t float_bits(float f) { return std::bit_cast<uint32_t>(f); }
float bits_float(uint32_t w) { return std::bit_cast<float>(w); }

std::optional<Scalar> elementwise_result(OpCode code, Scalar in) {
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

bool eval_scalar(OpCode code, Scalar in, const uint32_t* x, uint32_t& r, Fault& fault) {
  const uint32_t a = x[0];
  const bool is_f = in == Scalar::Float, is_i = in == Scalar::Int;
  const float fa = bits_float(a);
  auto fb = [&] { return bits_float(x[1]); };
  switch (code) {
    case OpCode::Select: r = x[0] ? x[1] : x[2]; return true;
    case OpCode::Neg: r = is_f ? float_bits(-fa) : 0u - a; return true;
    case OpCode::Not: r = from_bool(!a); return true;
    case OpCode::BitNot: r = ~a; return true;
    case OpCode::Abs:
      if (is_f) r = float_bits(std::fabs(fa));
      else if (is_i) r = as_int(a) < 0 ? 0u - a : a;
      else r = a;
      return true;
    case OpCode::Sqrt: r = float_bits(std::sqrt(fa)); return true;
    case OpCode::Exp: r = float_bits(ab_exp(fa)); return true;
    case OpCode::Log: r = float_bits(ab_log(fa)); return true;
    case OpCode::Sin: r = float_bits(ab_sin(fa)); return true;
    case OpCode::Cos: r = float_bits(ab_cos(fa)); return true;
    case OpCode::Tanh: r = float_bits(ab_tanh(fa)); return true;
    case OpCode::Floor: r = float_bits(std::floor(fa)); return true;
    case OpCode::Ceil: r = float_bits(std::ceil(fa)); return true;
    case OpCode::ToInt:
      r = is_f ? static_cast<uint32_t>(float_to_int(fa)) : a;  // int/uint bit-cast, bool 0/1
      return true;
    case OpCode::ToUInt:
      r = is_f ? float_to_uint(fa) : a;
      return true;
    case OpCode::ToFloat:
      if (is_f) r = a;
      else if (is_i) r = float_bits(static_cast<float>(as_int(a)));
      else r = float_bits(static_cast<float>(a));  // uint, bool
      return true;
    default: break;
  }
  const uint32_t b = x[1];
  switch (code) {
    case OpCode::Add: r = is_f ? float_bits(fa + fb()) : a + b; return true;
    case OpCode::Sub: r = is_f ? float_bits(fa - fb()) : a - b; return true;
    case OpCode::Mul: r = is_f ? float_bits(fa * fb()) : a * b; return true;
    case OpCode::Div:
    case OpCode::Rem: {
      const bool div = code == OpCode::Div;
      if (is_f) {
        r = float_bits(div ? fa / fb() : std::fmod(fa, fb()));
        return true;
      }
      if (b == 0) {
        fault = Fault::DivisionByZero;
        return false;
      }
      if (!is_i) {
        r = div ? a / b : a % b;
      } else if (as_int(a) == std::numeric_limits<int32_t>::min() && as_int(b) == -1) {
        r = div ? a : 0u;  // the one overflowing case wraps
      } else {
        r = static_cast<uint32_t>(div ? as_int(a) / as_int(b) : as_int(a) % as_int(b));
      }
      return true;
    }
    case OpCode::BitAnd: r = a & b; return true;
    case OpCode::BitOr: r = a | b; return true;
    case OpCode::BitXor: r = a ^ b; return true;
    case OpCode::Shl: r = a << (b & 31u); return true;
    case OpCode::Shr:
      r = is_i ? static_cast<uint32_t>(as_int(a) >> (b & 31u)) : a >> (b & 31u);
      return true;
    case OpCode::Eq: r = from_bool(is_f ? fa == fb() : a == b); return true;
    case OpCode::Ne: r = from_bool(is_f ? fa != fb() : a != b); return true;
    case OpCode::Lt:
      r = from_bool(is_f ? fa < fb() : is_i ? as_int(a) < as_int(b) : a < b);
      return true;
    case OpCode::Le:
      r = from_bool(is_f ? fa <= fb() : is_i ? as_int(a) <= as_int(b) : a <= b);
      return true;
    case OpCode::Gt:
      r = from_bool(is_f ? fa > fb() : is_i ? as_int(a) > as_int(b) : a > b);
      return true;
    case OpCode::Ge:
      r = from_bool(is_f ? fa >= fb() : is_i ? as_int(a) >= as_int(b) : a >= b);
      return true;
    case OpCode::And: r = from_bool(a && b); return true;
    case OpCode::Or: r = from_bool(a || b); return true;
    case OpCode::Min:
    case OpCode::Max: {
      // min(a, b) = b < a ? b : a, spelled the same way in GLSL so NaNs agree.
      const bool b_less = is_f ? fb() < fa : is_i ? as_int(b) < as_int(a) : b < a;
      r = (code == OpCode::Min) == b_less ? b : a;
      return true;
    }
    case OpCode::Pow: r = float_bits(ab_pow(fa, fb())); return true;
    case OpCode::Clamp: {
      uint32_t lo_first[2] = {a, b}, m = 0;
      eval_scalar(OpCode::Max, in, lo_first, m, fault);
      uint32_t then_hi[2] = {m, x[2]};
      return eval_scalar(OpCode::Min, in, then_hi, r, fault);
    }
    default: break;
  }
  return false;
}

// clang-format on
}  // namespace ab
