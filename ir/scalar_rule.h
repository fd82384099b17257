// eval_scalar's rules (ir/ops.h), written once and inline: the VM's batched loops
// (cpu/vm_kernels.cpp) call scalar_rule with a constant op and scalar kind, so the
// compiler folds the switches away and the loop body is the bare operation; everything else
// calls eval_scalar, which forwards here.
#pragma once

#include <bit>
#include <cmath>
#include <limits>

#include "ir/float_math.h"
#include "ir/ops.h"

namespace ab {

namespace scalar_detail {

inline uint32_t to_bits(float f) {
  return std::bit_cast<uint32_t>(f);
}
inline float to_float(uint32_t w) {
  return std::bit_cast<float>(w);
}
inline int32_t as_int(uint32_t w) {
  return static_cast<int32_t>(w);
}
inline uint32_t from_bool(bool b) {
  return b ? 1u : 0u;
}

inline int32_t float_to_int(float f) {
  if (std::isnan(f)) return 0;
  if (f >= 2147483648.0f) return std::numeric_limits<int32_t>::max();
  if (f < -2147483648.0f) return std::numeric_limits<int32_t>::min();
  return static_cast<int32_t>(f);
}

inline uint32_t float_to_uint(float f) {
  if (std::isnan(f) || f <= -1.0f) return 0;
  if (f >= 4294967296.0f) return std::numeric_limits<uint32_t>::max();
  return f < 0.0f ? 0u : static_cast<uint32_t>(f);
}

inline bool is_numeric(Scalar s) {
  return s != Scalar::Bool;
}
inline bool is_integer(Scalar s) {
  return s == Scalar::Int || s == Scalar::UInt;
}

}  // namespace scalar_detail

// clang-format off
namespace scalar_detail {

// The rules of one operand (and Select): true when `code` is one of them.
[[gnu::always_inline]] inline bool unary_rule(OpCode code, Scalar in, const uint32_t* x, uint32_t& r) {
  const uint32_t a = x[0];
  const bool is_f = in == Scalar::Float, is_i = in == Scalar::Int;
  const float fa = to_float(a);
  switch (code) {
    case OpCode::Select: r = x[0] ? x[1] : x[2]; return true;
    case OpCode::Neg: r = is_f ? to_bits(-fa) : 0u - a; return true;
    case OpCode::Not: r = from_bool(!a); return true;
    case OpCode::BitNot: r = ~a; return true;
    case OpCode::Abs:
      if (is_f) r = to_bits(std::fabs(fa));
      else if (is_i) r = as_int(a) < 0 ? 0u - a : a;
      else r = a;
      return true;
    case OpCode::Sqrt: r = to_bits(std::sqrt(fa)); return true;
    case OpCode::Exp: r = to_bits(ab_exp(fa)); return true;
    case OpCode::Log: r = to_bits(ab_log(fa)); return true;
    case OpCode::Sin: r = to_bits(ab_sin(fa)); return true;
    case OpCode::Cos: r = to_bits(ab_cos(fa)); return true;
    case OpCode::Tanh: r = to_bits(ab_tanh(fa)); return true;
    case OpCode::Lgamma: r = to_bits(ab_lgamma(fa)); return true;
    case OpCode::Digamma: r = to_bits(ab_digamma(fa)); return true;
    case OpCode::Trigamma: r = to_bits(ab_trigamma(fa)); return true;
    case OpCode::Log1p: r = to_bits(ab_log1p(fa)); return true;
    case OpCode::Log1m: r = to_bits(ab_log1m(fa)); return true;
    case OpCode::Expm1: r = to_bits(ab_expm1(fa)); return true;
    case OpCode::Log1pExp: r = to_bits(ab_log1p_exp(fa)); return true;
    case OpCode::Erf: r = to_bits(ab_erf(fa)); return true;
    case OpCode::Erfc: r = to_bits(ab_erfc(fa)); return true;
    case OpCode::InvLogit: r = to_bits(ab_inv_logit(fa)); return true;
    case OpCode::Floor: r = to_bits(std::floor(fa)); return true;
    case OpCode::Ceil: r = to_bits(std::ceil(fa)); return true;
    case OpCode::ToInt:
      r = is_f ? static_cast<uint32_t>(float_to_int(fa)) : a;  // int/uint bit-cast, bool 0/1
      return true;
    case OpCode::ToUInt:
      r = is_f ? float_to_uint(fa) : a;
      return true;
    case OpCode::ToFloat:
      if (is_f) r = a;
      else if (is_i) r = to_bits(static_cast<float>(as_int(a)));
      else r = to_bits(static_cast<float>(a));  // uint, bool
      return true;
    default: return false;
  }
}

// The rules of two or three operands: false for a faulting input (with `fault` set) or another op.
[[gnu::always_inline]] inline bool binary_rule(OpCode code, Scalar in, const uint32_t* x, uint32_t& r,
                                               Fault& fault) {
  const uint32_t a = x[0], b = x[1];
  const bool is_f = in == Scalar::Float, is_i = in == Scalar::Int;
  const float fa = to_float(a);
  auto fb = [&] { return to_float(x[1]); };
  auto less = [&](uint32_t p, uint32_t q) {
    return is_f ? to_float(p) < to_float(q) : is_i ? as_int(p) < as_int(q) : p < q;
  };
  switch (code) {
    case OpCode::Add: r = is_f ? to_bits(fa + fb()) : a + b; return true;
    case OpCode::Sub: r = is_f ? to_bits(fa - fb()) : a - b; return true;
    case OpCode::Mul: r = is_f ? to_bits(fa * fb()) : a * b; return true;
    case OpCode::Div:
    case OpCode::Rem: {
      const bool div = code == OpCode::Div;
      if (is_f) {
        r = to_bits(div ? fa / fb() : std::fmod(fa, fb()));
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
    case OpCode::Max:
      // min(a, b) = b < a ? b : a, spelled the same way in GLSL so NaNs agree.
      r = (code == OpCode::Min) == less(b, a) ? b : a;
      return true;
    case OpCode::Pow: r = to_bits(ab_pow(fa, fb())); return true;
    case OpCode::LogSumExp: r = to_bits(ab_log_sum_exp(fa, fb())); return true;
    case OpCode::Clamp: {  // min(max(a, lo), hi)
      const uint32_t m = less(b, a) ? a : b;
      r = less(x[2], m) ? x[2] : m;
      return true;
    }
    default: break;
  }
  return false;
}


}  // namespace scalar_detail

[[gnu::always_inline]] inline bool scalar_rule(OpCode code, Scalar in, const uint32_t* x, uint32_t& r,
                                               Fault& fault) {
  return scalar_detail::unary_rule(code, in, x, r) || scalar_detail::binary_rule(code, in, x, r, fault);
}

// clang-format on

}  // namespace ab
