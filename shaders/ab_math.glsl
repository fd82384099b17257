// The language's transcendental functions (docs/language.md, "Float functions"), written once in
// the common subset of GLSL and C++: the GPU prelude embeds this file and ir/float_math.cpp
// compiles it as C++, so every backend runs the same operation sequence.
//
// Why not the GLSL builtins: Vulkan lets sin/exp/log/pow be loose (sin(3e9) = -1 on lavapipe) and
// leaves their special values open. Why bit-identical: the code uses only + - * (correctly rounded
// on every Vulkan device), comparisons, integer and bit operations, never a device division or
// builtin; every float local is `precise` so no driver may reassociate or contract it.
// Rules for editing: float literals take the `f` suffix (C++ would make them double); no
// division; no builtins but the integer ones the C++ side defines (umulExtended, uaddCarry).
#ifndef AB_PRECISE
#define AB_PRECISE precise
#define AB_OUT(T) out T
#endif

float abm_bits(uint w) { return uintBitsToFloat(w); }
bool abm_is_nan(float x) { return (floatBitsToUint(x) & 0x7fffffffu) > 0x7f800000u; }
float abm_fabs(float x) { return uintBitsToFloat(floatBitsToUint(x) & 0x7fffffffu); }
float abm_nan() { return uintBitsToFloat(0x7fc00000u); }
float abm_inf() { return uintBitsToFloat(0x7f800000u); }

// 2^k for -126 <= k <= 127.
float abm_pow2(int k) { return uintBitsToFloat(uint(k + 127) << 23); }

// x * 2^k for any k, in steps that stay in the normal range until the last multiply (which
// rounds once, to a denormal or infinity if it must) for the |x| in [2^-26, 2^26] used here.
float abm_scale(float x, int k) {
  AB_PRECISE float r = x;
  if (k > 127) {
    r = r * abm_pow2(127);
    k = k - 127;
    if (k > 127) k = 127;
  } else if (k < -126) {  // two steps of 2^-100 keep |x| >= 2^-26 normal: one rounding
    r = r * abm_pow2(-100);
    k = k + 100;
    if (k < -126) {
      r = r * abm_pow2(-100);
      k = k + 100;
      if (k < -126) k = -126;
    }
  }
  AB_PRECISE float s = r * abm_pow2(k);
  return s;
}

// 1 / d for finite d > 0 (normal or denormal): Newton's iteration from a linear seed, three
// steps (error below 2^-27 before the last rounding). About 1 ulp.
float abm_recip(float d) {
  int shift = 0;
  AB_PRECISE float v = d;
  if (floatBitsToUint(v) < 0x00800000u) {
    v = v * abm_pow2(24);
    shift = 24;
  }
  const uint u = floatBitsToUint(v);
  const int e = int(u >> 23) - 126;
  AB_PRECISE float m = uintBitsToFloat((u & 0x007fffffu) | 0x3f000000u);  // [1/2, 1)
  AB_PRECISE float y = 2.8235294f - 1.8823529f * m;                      // 48/17 - 32/17 m
  // Three Newton steps, written out rather than looped: a device that caps a shader's loop
  // iterations (lavapipe) then counts none for the many elementwise ops built on this one.
  AB_PRECISE float t1 = 1.0f - m * y;
  y = y + y * t1;
  AB_PRECISE float t2 = 1.0f - m * y;
  y = y + y * t2;
  AB_PRECISE float t3 = 1.0f - m * y;
  y = y + y * t3;
  return abm_scale(y, shift - e);
}

// e^x. Cody-Waite reduction x = k ln2 + r, |r| <= ln2 / 2, then a degree-7 Taylor polynomial
// (truncation error 5e-9 relative). About 1 ulp.
float ab_exp(float x) {
  if (abm_is_nan(x)) return x;
  if (x >= 88.72283935546875f) return abm_inf();  // e^x rounds above FLT_MAX
  if (x < -103.97208404541016f) return 0.0f;      // below half the smallest denormal
  // k = round(x / ln2) by the 1.5 * 2^23 trick (|x / ln2| < 2^22 here).
  AB_PRECISE float shifted = x * 1.44269502f + 12582912.0f;
  const int k = int(floatBitsToUint(shifted) & 0x007fffffu) - 0x00400000;
  const float kf = float(k);
  AB_PRECISE float r_hi = x - kf * 0.693115234375f;  // ln2 high part: k * it is exact
  AB_PRECISE float r = r_hi - kf * 3.19461833e-05f;  // ln2 low part
  AB_PRECISE float q =
      0.5f +
      r * (0.16666667f +
           r * (0.041666668f + r * (0.0083333338f + r * (0.0013888889f + r * 0.00019841270f))));
  AB_PRECISE float p = 1.0f + (r + r * r * q);
  return abm_scale(p, k);
}

// ln x. x = 2^e m with m in [sqrt(1/2), sqrt(2)), ln(1 + f) = f + f^2 R(f) with R a degree-10
// Chebyshev fit (error 3e-9 relative); denormals are scaled up first. About 1 ulp.
float ab_log(float x) {
  if (abm_is_nan(x)) return x;
  if (x < 0.0f) return abm_nan();
  if (x == 0.0f) return -abm_inf();
  if (x == abm_inf()) return x;
  AB_PRECISE float v = x;
  int e = 0;
  if (floatBitsToUint(v) < 0x00800000u) {
    v = v * abm_pow2(24);
    e = -24;
  }
  const uint u = floatBitsToUint(v);
  e = e + int(u >> 23) - 127;
  AB_PRECISE float m = uintBitsToFloat((u & 0x007fffffu) | 0x3f800000u);
  if (m > 1.41421354f) {
    m = m * 0.5f;
    e = e + 1;
  }
  AB_PRECISE float f = m - 1.0f;
  AB_PRECISE float poly =
      -0.5f +
      f * (0.33333331f +
           f * (-0.24999936f +
                f * (0.20000170f +
                     f * (-0.16670384f +
                          f * (0.14283799f +
                               f * (-0.12410886f +
                                    f * (0.11042736f +
                                         f * (-0.10898112f +
                                              f * (0.10636544f + f * -0.058456745f)))))))));
  const float ef = float(e);
  AB_PRECISE float hi = ef * 0.693115234375f;  // exact: e has at most 8 bits
  AB_PRECISE float lo = ef * 3.19461833e-05f + f * f * poly;
  AB_PRECISE float r = hi + (f + lo);
  return r;
}

// Word i (0 = most significant) of the binary expansion of 2/pi.
uint abm_two_over_pi(int i) {
  switch (i) {
    case 0: return 0xa2f9836eu;
    case 1: return 0x4e441529u;
    case 2: return 0xfc2757d1u;
    case 3: return 0xf534ddc0u;
    case 4: return 0xdb629599u;
    case 5: return 0x3c439041u;
    case 6: return 0xfe5163abu;
    default: return 0xdebbc561u;
  }
}

// Bits [b, b + 32) of the 160-bit number r0:r1:r2:r3:r4 (r4 least significant), b < 128.
uint abm_bits_at(uint r0, uint r1, uint r2, uint r3, uint r4, int b) {
  const int w = b >> 5, s = b & 31;
  const uint lo = w == 0 ? r4 : w == 1 ? r3 : w == 2 ? r2 : r1;
  const uint hi = w == 0 ? r3 : w == 1 ? r2 : w == 2 ? r1 : r0;
  if (s == 0) return lo;
  return (lo >> uint(s)) | (hi << uint(32 - s));
}

// Reduces finite x to r in [-pi/4, pi/4] with x = r + j pi/2 (mod 2 pi), returning r and setting
// j (0..3). Exact reduction for every float (Payne-Hanek with 128 bits of 2/pi), so sin(3e9)
// is right, not whatever a 32-bit pi leaves.
float abm_reduce(float x, AB_OUT(int) j) {
  const uint ux = floatBitsToUint(x) & 0x7fffffffu;
  if (ux < 0x3f490fdbu) {  // |x| < pi/4
    j = 0;
    return x;
  }
  const uint m = (ux & 0x007fffffu) | 0x00800000u;  // |x| = m 2^e
  const int e = int(ux >> 23) - 150;
  const int j0 = e >= 2 ? (e - 2) >> 5 : 0;  // earlier words of 2/pi only add multiples of 4
  const int s = e - 32 * j0;
  uint r0 = 0u, r1 = 0u, r2 = 0u, r3 = 0u, r4 = 0u, hi = 0u, lo = 0u, c = 0u;
  // m * (2/pi words j0 .. j0+3) into r0:r1:r2:r3:r4; the value is that number times 2^(s-128).
  umulExtended(m, abm_two_over_pi(j0 + 3), hi, lo);
  r4 = lo;
  r3 = hi;
  umulExtended(m, abm_two_over_pi(j0 + 2), hi, lo);
  r3 = uaddCarry(r3, lo, c);
  r2 = hi + c;
  umulExtended(m, abm_two_over_pi(j0 + 1), hi, lo);
  r2 = uaddCarry(r2, lo, c);
  r1 = hi + c;
  umulExtended(m, abm_two_over_pi(j0), hi, lo);
  r1 = uaddCarry(r1, lo, c);
  r0 = hi + c;
  // 64 bits from 2 above the binary point: quadrant (2 bits), fraction (62 bits).
  const int t = 66 - s;
  uint f_hi = abm_bits_at(r0, r1, r2, r3, r4, t + 32);
  uint f_lo = abm_bits_at(r0, r1, r2, r3, r4, t);
  int q = int(f_hi >> 30);
  f_hi = f_hi & 0x3fffffffu;
  bool negative = false;
  if ((f_hi & 0x20000000u) != 0u) {  // fraction >= 1/2: round to the next quadrant
    q = q + 1;
    negative = true;
    f_lo = 0u - f_lo;  // 2^62 - fraction
    f_hi = (0x3fffffffu - f_hi + (f_lo == 0u ? 1u : 0u)) & 0x3fffffffu;
  }
  // The fraction (< 2^61 units of 2^-62) as hi + lo floats: 48 significant bits.
  int shift = 0;
  while (shift < 61 && (f_hi & 0x20000000u) == 0u) {  // normalize the top bit to bit 61
    f_hi = (f_hi << 1) | (f_lo >> 31);
    f_lo = f_lo << 1;
    shift = shift + 1;
  }
  const uint top = f_hi >> 6;                              // 24 bits
  const uint next = ((f_hi & 0x3fu) << 18) | (f_lo >> 14);  // 24 bits
  AB_PRECISE float a = float(top) * abm_scale(1.0f, -(shift + 24));
  AB_PRECISE float b = float(next) * abm_scale(1.0f, -(shift + 48));
  AB_PRECISE float r = a * 1.57079637f + (a * -4.37113883e-08f + b * 1.57079637f);
  if (negative) r = -r;
  if (x < 0.0f) {
    r = -r;
    q = -q;
  }
  j = q & 3;
  return r;
}

// sin and cos of r in [-pi/4, pi/4]: Taylor to degree 9 and 10 (truncation below 2e-9).
float abm_sin_poly(float r) {
  AB_PRECISE float z = r * r;
  AB_PRECISE float p =
      -0.16666667f + z * (0.0083333338f + z * (-0.00019841270f + z * 2.7557319e-06f));
  AB_PRECISE float s = r + r * z * p;
  return s;
}
float abm_cos_poly(float r) {
  AB_PRECISE float z = r * r;
  AB_PRECISE float p =
      0.041666668f +
      z * (-0.0013888889f + z * (2.4801587e-05f + z * (-2.7557319e-07f + z * 2.0876757e-09f)));
  AB_PRECISE float c = 1.0f + (z * -0.5f + z * z * p);
  return c;
}

float ab_sin(float x) {
  if ((floatBitsToUint(x) & 0x7fffffffu) >= 0x7f800000u) return abm_nan() + x;  // inf, NaN
  if ((floatBitsToUint(x) & 0x7fffffffu) < 0x39800000u) return x;  // |x| < 2^-12: x, and -0
  int j = 0;
  const float r = abm_reduce(x, j);
  AB_PRECISE float v = (j & 1) == 0 ? abm_sin_poly(r) : abm_cos_poly(r);
  if (j >= 2) v = -v;
  return v;
}

float ab_cos(float x) {
  if ((floatBitsToUint(x) & 0x7fffffffu) >= 0x7f800000u) return abm_nan() + x;
  int j = 0;
  const float r = abm_reduce(x, j);
  AB_PRECISE float v = (j & 1) == 0 ? abm_cos_poly(r) : abm_sin_poly(r);
  if (j == 1 || j == 2) v = -v;
  return v;
}

// tanh: an odd Chebyshev fit below 0.55, 1 - 2 / (e^2|x| + 1) up to 9.1, +-1 beyond (where
// tanhf rounds to +-1). About 2 ulp.
float ab_tanh(float x) {
  if (abm_is_nan(x)) return x;
  const float a = abm_fabs(x);
  if (a < 0.000244140625f) return x;  // |x| < 2^-12: x, and -0
  AB_PRECISE float t;
  if (a < 0.55f) {
    AB_PRECISE float z = x * x;
    AB_PRECISE float p =
        -0.33333334f +
        z * (0.13333331f +
             z * (-0.053967632f +
                  z * (0.021861270f + z * (-0.0088037224f + z * (0.0033485121f +
                                                                 z * -0.00091056805f)))));
    t = x + x * z * p;
    return t;
  }
  if (a >= 9.1f) return x < 0.0f ? -1.0f : 1.0f;
  t = 1.0f - 2.0f * abm_recip(ab_exp(a + a) + 1.0f);
  return x < 0.0f ? -t : t;
}

// x^y with the special values of C99 Annex F (F.9.4.4); integral |y| <= 64 by repeated squaring
// (exact whenever the result is representable and every partial product is), else
// e^(y ln|x|) (relative error grows with |y ln|x||: docs/language.md).
float ab_pow(float x, float y) {
  if (y == 0.0f || x == 1.0f) return 1.0f;
  if (abm_is_nan(x) || abm_is_nan(y)) return abm_nan();
  const float ax = abm_fabs(x), ay = abm_fabs(y);
  const bool y_big = ay >= 16777216.0f;  // every float this large is an even integer
  const bool y_int = y_big || floor(ay) == ay;
  const bool y_odd = y_int && !y_big && (int(ay) & 1) == 1;
  if (ay == abm_inf()) {
    if (ax == 1.0f) return 1.0f;  // (-1)^inf
    return (ax < 1.0f) == (y > 0.0f) ? 0.0f : abm_inf();
  }
  if (ax == 0.0f) {  // +-0: the sign survives odd powers
    if (y < 0.0f) return y_odd ? uintBitsToFloat(floatBitsToUint(x) | 0x7f800000u) : abm_inf();
    return y_odd ? x : 0.0f;
  }
  if (ax == abm_inf()) {
    if (x > 0.0f) return y < 0.0f ? 0.0f : abm_inf();
    if (y < 0.0f) return y_odd ? -0.0f : 0.0f;
    return y_odd ? -abm_inf() : abm_inf();
  }
  if (x < 0.0f && !y_int) return abm_nan();
  AB_PRECISE float mag = 0.0f;
  bool done = false;
  if (y_int && ay <= 64.0f) {
    int n = int(ay);
    AB_PRECISE float base = ax;
    AB_PRECISE float acc = 1.0f;
    while (n > 0) {
      if ((n & 1) == 1) acc = acc * base;
      base = base * base;
      n = n >> 1;
    }
    if (y > 0.0f) {
      mag = acc;
      done = true;
    } else if (acc != 0.0f && acc != abm_inf()) {
      mag = abm_recip(acc);
      done = true;
    }
  }
  if (!done) {
    AB_PRECISE float t = y * ab_log(ax);
    mag = ab_exp(t);
  }
  return x < 0.0f && y_odd ? -mag : mag;
}

// ---- Special functions (docs/language.md, "Special functions") -------------------------------
// Each with the same rules as above: + - * only, abm_recip for reciprocals, every float local
// precise. Their derivatives, which passes/differentiate.cpp emits as ordinary ops, are other
// functions of this file: lgamma' = digamma, digamma' = trigamma, log1p_exp' = inv_logit, ...

// ln(1 + x): ln(u) for u = 1 + x rounded, corrected by the rounding error of u.
float ab_log1p(float x) {
  if (abm_is_nan(x)) return x;
  if (x <= -1.0f) return x == -1.0f ? -abm_inf() : abm_nan();
  if (x == abm_inf()) return x;
  if (abm_fabs(x) < 2.98023224e-08f) return x;  // |x| < 2^-25: ln(1 + x) rounds to x (and -0)
  AB_PRECISE float u = 1.0f + x;
  AB_PRECISE float c = (u - 1.0f) - x;
  AB_PRECISE float r = ab_log(u) - c * abm_recip(u);
  return r;
}

// ln(1 - x) = ln(1 + (-x)): negation is exact, so log1p's accuracy over the mirrored range; 0
// maps to +0 as ln(1 - 0) does (log1p(-0) would give -0).
float ab_log1m(float x) {
  if (x == 0.0f) return 0.0f;
  return ab_log1p(-x);
}

// e^r - 1 for |r| <= 1/2: Taylor to degree 10 (truncation below 2e-11 relative).
float abm_expm1_poly(float r) {
  AB_PRECISE float p =
      0.5f +
      r * (0.16666667f +
           r * (0.041666668f +
                r * (0.0083333338f +
                     r * (0.0013888889f +
                          r * (0.00019841270f +
                               r * (2.4801587e-05f + r * (2.7557319e-06f + r * 2.7557319e-07f)))))));
  AB_PRECISE float s = r + r * r * p;
  return s;
}

// e^x - 1: the polynomial for |x| <= 1/2; above, x = k ln2 + r and 2^k (e^r - 1) + (2^k - 1),
// both exact before the one rounding add (k <= 24).
float ab_expm1(float x) {
  if (abm_is_nan(x)) return x;
  if (abm_fabs(x) < 2.98023224e-08f) return x;
  if (abm_fabs(x) <= 0.5f) return abm_expm1_poly(x);
  if (x < -17.5f) return -1.0f;  // e^x < 2^-25
  if (x < 0.0f || x > 16.0f) {
    AB_PRECISE float e = ab_exp(x) - 1.0f;
    return e;
  }
  AB_PRECISE float shifted = x * 1.44269502f + 12582912.0f;
  const int k = int(floatBitsToUint(shifted) & 0x007fffffu) - 0x00400000;
  const float kf = float(k);
  AB_PRECISE float r_hi = x - kf * 0.693115234375f;
  AB_PRECISE float r = r_hi - kf * 3.19461833e-05f;
  const float two_k = abm_pow2(k);
  AB_PRECISE float s = two_k * abm_expm1_poly(r) + (two_k - 1.0f);
  return s;
}

// ln(1 + e^x) (softplus), without overflow: x + ln(1 + e^-x) for x > 0.
float ab_log1p_exp(float x) {
  if (abm_is_nan(x)) return x;
  if (x > 0.0f) {
    AB_PRECISE float r = x + ab_log1p(ab_exp(-x));
    return r;
  }
  return ab_log1p(ab_exp(x));
}

// ln(e^a + e^b) = max + ln(1 + e^-|a - b|); -inf when both are -inf.
float ab_log_sum_exp(float a, float b) {
  if (abm_is_nan(a) || abm_is_nan(b)) return abm_nan();
  const float m = b < a ? a : b;
  if (m == -abm_inf() || m == abm_inf()) return m;
  AB_PRECISE float d = a - b;
  AB_PRECISE float r = m + ab_log1p(ab_exp(-abm_fabs(d)));
  return r;
}

// log_sum_exp(v) of an array (docs/language.md) is shift + log(s), where m is the array's max
// (the chain max(max(v[0], v[1]), v[2])...), shift is m, or 0 when m is infinite (so that all
// -inf gives -inf and any +inf gives +inf), and s sums exp(v[i] - shift) in order from +0.
float ab_lse_shift(float m) { return (m == -abm_inf() || m == abm_inf()) ? 0.0f : m; }

// 1 / (1 + e^-x) (the logistic function), from e^-|x| so it never overflows.
float ab_inv_logit(float x) {
  if (abm_is_nan(x)) return x;
  if (x >= 0.0f) return abm_recip(1.0f + ab_exp(-x));
  AB_PRECISE float e = ab_exp(x);
  AB_PRECISE float r = e * abm_recip(1.0f + e);
  return r;
}

// erf for |x| < 1/2: Taylor to degree 17 (truncation below 1e-10 relative).
float abm_erf_small(float x) {
  AB_PRECISE float t = x * x;
  AB_PRECISE float p =
      1.128379167e+00f +
      t * (-3.761263890e-01f +
           t * (1.128379167e-01f +
                t * (-2.686617065e-02f +
                     t * (5.223977625e-03f +
                          t * (-8.548327023e-04f +
                               t * (1.205533298e-04f +
                                    t * (-1.492565036e-05f + t * 1.646211437e-06f)))))));
  AB_PRECISE float r = x * p;
  return r;
}

// e^(-x^2) with x^2 split exactly: x = h + l where h keeps 12 bits, so h * h is exact.
float abm_exp_neg_sq(float x) {
  const float h = uintBitsToFloat(floatBitsToUint(x) & 0xfffff000u);
  AB_PRECISE float l = (x - h) * (x + h);
  AB_PRECISE float r = ab_exp(-(h * h)) * ab_exp(-l);
  return r;
}

// erfc(x) for x >= 1/2: x e^(x^2) erfc(x) is a Chebyshev series of degree 18 in 1/x over
// [1/10.1, 2] (fit error 2e-9 relative), evaluated by Clenshaw's recurrence; 0 beyond 10.1.
float abm_erfc_pos(float x) {
  if (x >= 10.1f) return 0.0f;
  AB_PRECISE float u = abm_recip(x);
  AB_PRECISE float s = (u + u - 2.099009901f) * 0.526041667f;
  AB_PRECISE float s2 = s + s;
  AB_PRECISE float b1 = 0.0f;
  AB_PRECISE float b2 = 0.0f;
  AB_PRECISE float t = 0.0f;
  t = b1;
  b1 = s2 * b1 - b2 + -7.429126130e-10f;
  b2 = t;
  t = b1;
  b1 = s2 * b1 - b2 + 3.542882895e-09f;
  b2 = t;
  t = b1;
  b1 = s2 * b1 - b2 + -1.185246947e-08f;
  b2 = t;
  t = b1;
  b1 = s2 * b1 - b2 + 3.054220154e-08f;
  b2 = t;
  t = b1;
  b1 = s2 * b1 - b2 + -5.896705719e-08f;
  b2 = t;
  t = b1;
  b1 = s2 * b1 - b2 + 5.938875570e-08f;
  b2 = t;
  t = b1;
  b1 = s2 * b1 - b2 + 1.415934104e-07f;
  b2 = t;
  t = b1;
  b1 = s2 * b1 - b2 + -1.084951589e-06f;
  b2 = t;
  t = b1;
  b1 = s2 * b1 - b2 + 4.021361575e-06f;
  b2 = t;
  t = b1;
  b1 = s2 * b1 - b2 + -1.065531858e-05f;
  b2 = t;
  t = b1;
  b1 = s2 * b1 - b2 + 1.876352061e-05f;
  b2 = t;
  t = b1;
  b1 = s2 * b1 - b2 + -1.562135676e-06f;
  b2 = t;
  t = b1;
  b1 = s2 * b1 - b2 + -1.595879928e-04f;
  b2 = t;
  t = b1;
  b1 = s2 * b1 - b2 + 8.257790402e-04f;
  b2 = t;
  t = b1;
  b1 = s2 * b1 - b2 + -2.664797401e-03f;
  b2 = t;
  t = b1;
  b1 = s2 * b1 - b2 + 4.942726702e-03f;
  b2 = t;
  t = b1;
  b1 = s2 * b1 - b2 + 7.468207820e-03f;
  b2 = t;
  t = b1;
  b1 = s2 * b1 - b2 + -1.325646697e-01f;
  b2 = t;
  AB_PRECISE float g = s * b1 - b2 + 4.299878676e-01f;
  AB_PRECISE float r = g * u * abm_exp_neg_sq(x);
  return r;
}

float ab_erfc(float x) {
  if (abm_is_nan(x)) return x;
  if (x >= 0.5f) return abm_erfc_pos(x);
  if (x > -0.5f) {
    AB_PRECISE float r = 1.0f - abm_erf_small(x);
    return r;
  }
  AB_PRECISE float r = 2.0f - abm_erfc_pos(-x);
  return r;
}

float ab_erf(float x) {
  if (abm_is_nan(x)) return x;
  const float a = abm_fabs(x);
  if (a < 0.5f) return abm_erf_small(x);
  AB_PRECISE float r = 1.0f - abm_erfc_pos(a);
  return x < 0.0f ? -r : r;
}

// sin(pi r) and cos(pi r) for r = x - floor(x) in [0, 1), x finite: sin through the nearer
// end of the interval, so that sin(pi r) stays accurate near r = 1.
float abm_sinpi_frac(float r) {
  const float h = r > 0.5f ? 1.0f - r : r;
  AB_PRECISE float a = h * 3.14159274f;
  return ab_sin(a);
}
float abm_cospi_frac(float r) {
  const float h = r > 0.5f ? 1.0f - r : r;
  AB_PRECISE float a = h * 3.14159274f;
  AB_PRECISE float c = ab_cos(a);
  return r > 0.5f ? -c : c;
}

// ln Gamma(2 + z) for -3/4 <= z <= 1/2: (1 - gamma) z + sum_k (-1)^k (zeta(k) - 1) z^k / k, to k = 16.
float abm_lgamma_series2(float z) {
  AB_PRECISE float p =
      4.227843351e-01f +
      z * (3.224670334e-01f +
           z * (-6.735230105e-02f +
                z * (2.058080843e-02f +
                     z * (-7.385551029e-03f +
                          z * (2.890510331e-03f +
                               z * (-1.192753912e-03f +
                                    z * (5.096695247e-04f +
                                         z * (-2.231547585e-04f +
                                              z * (9.945751278e-05f +
                                                   z * (-4.492623674e-05f +
                                                        z * (2.050721278e-05f +
                                                             z * (-9.439488275e-06f +
                                                                  z * (4.374866790e-06f +
                                                                       z * (-2.039215754e-06f +
                                                                            z * 9.551412130e-07f))))))))))))));
  AB_PRECISE float r = z * p;
  return r;
}

// ln Gamma(x) for finite x > 0: the series around 2 (through ln Gamma(1 + z) = ln Gamma(2 + z) -
// ln(1 + z) below 1.25), the recurrence down to [1.5, 2.5) below 8, Stirling's series above.
float abm_lgamma_pos(float x) {
  if (x < 0.5f) {
    AB_PRECISE float r = (abm_lgamma_series2(x) - ab_log1p(x)) - ab_log(x);
    return r;
  }
  if (x < 1.25f) {
    const float z = x - 1.0f;
    AB_PRECISE float r = abm_lgamma_series2(z) - ab_log1p(z);
    return r;
  }
  if (x < 2.5f) return abm_lgamma_series2(x - 2.0f);
  if (x < 8.0f) {
    AB_PRECISE float y = x;
    AB_PRECISE float prod = 1.0f;
    for (int i = 0; i < 6; ++i) {
      if (y >= 2.5f) {
        y = y - 1.0f;
        prod = prod * y;
      }
    }
    AB_PRECISE float r = abm_lgamma_series2(y - 2.0f) + ab_log(prod);
    return r;
  }
  AB_PRECISE float u = abm_recip(x);
  AB_PRECISE float z = u * u;
  AB_PRECISE float s =
      u * (0.083333333f - z * (0.0027777778f - z * (0.00079365079f - z * 0.00059523810f)));
  AB_PRECISE float r = (x - 0.5f) * (ab_log(x) - 1.0f) + (0.41893853f + s);
  return r;
}

// ln |Gamma(x)|; +inf at 0 and the negative integers; ln(pi / |sin(pi x)|) - ln Gamma(1 - x) below 0.
float ab_lgamma(float x) {
  if (abm_is_nan(x)) return x;
  if (x == abm_inf()) return x;
  if (x <= 0.0f) {
    const float f = floor(x);
    if (f == x) return abm_inf();
    AB_PRECISE float r = 1.14472989f - ab_log(abm_sinpi_frac(x - f)) - abm_lgamma_pos(1.0f - x);
    return r;
  }
  return abm_lgamma_pos(x);
}

// digamma(x) for x in [1/2, 2]: Taylor series of degree 22 around its zero x0 = 1.46163214...
// (x0 = hi + lo, so x - x0 keeps every bit near the zero).
float abm_digamma_root(float x, float x0_hi) {
  AB_PRECISE float d = (x - x0_hi) - 1.243814896e-08f;
  AB_PRECISE float p =
      9.676722454e-01f + d * (-4.427631690e-01f + d * (2.584997610e-01f + d * (-1.639427054e-01f + d * (1.078240507e-01f + d * (-7.219956126e-02f + d * (4.880428816e-02f + d * (-3.316112647e-02f + d * (2.259764823e-02f + d * (-1.542476590e-02f + d * (1.053879162e-02f + d * (-7.204534386e-03f + d * (4.926781396e-03f + d * (-3.369801655e-03f + d * (2.305126327e-03f + d * (-1.576936771e-03f + d * (1.078825202e-03f + d * (-7.380709390e-04f + d * (5.049532658e-04f + d * (-3.454680251e-04f + d * (2.363560156e-04f + d * (-1.617062209e-04f)))))))))))))))))))));
  AB_PRECISE float r = d * p;
  return r;
}

// digamma(x) for finite x > 0: the series around the zero on [1, 2] (and, through
// digamma(x) = digamma(x + 1) - 1/x, on (0, 1), and the same recurrence up from (1, 2] on
// (2, 3]); above 3 the recurrence up to 10 and the
// asymptotic series ln x - 1/(2x) - sum B_2k / (2k x^2k).
float abm_digamma_pos(float x) {
  if (x < 1.0f) {
    // x0 - 1 with x0's high part: exact, so (x + 1) - x0 needs no rounded x + 1.
    AB_PRECISE float r = abm_digamma_root(x, 0.461632133f) - abm_recip(x);
    return r;
  }
  if (x <= 2.0f) return abm_digamma_root(x, 1.46163213f);
  if (x <= 3.0f) {  // digamma(x - 1) + 1/(x - 1), x - 1 exact
    const float y = x - 1.0f;
    AB_PRECISE float r = abm_digamma_root(y, 1.46163213f) + abm_recip(y);
    return r;
  }
  AB_PRECISE float acc = 0.0f;
  AB_PRECISE float y = x;
  for (int i = 0; i < 7; ++i) {
    if (y < 10.0f) {
      acc = acc - abm_recip(y);
      y = y + 1.0f;
    }
  }
  AB_PRECISE float u = abm_recip(y);
  AB_PRECISE float z = u * u;
  AB_PRECISE float asym =
      ab_log(y) - 0.5f * u -
      z * (0.083333333f -
           z * (0.0083333333f - z * (0.0039682540f - z * (0.0041666667f - z * 0.0075757576f))));
  AB_PRECISE float r = acc + asym;
  return r;
}

// digamma(x) = d/dx ln Gamma(x); NaN at 0 and the negative integers, the reflection
// digamma(1 - x) - pi cot(pi x) below 0.
float ab_digamma(float x) {
  if (abm_is_nan(x)) return x;
  if (x == abm_inf()) return x;
  if (x <= 0.0f) {
    const float f = floor(x);
    if (f == x) return abm_nan();
    const float r = x - f;
    AB_PRECISE float cot = abm_cospi_frac(r) * abm_recip(abm_sinpi_frac(r));
    AB_PRECISE float v = abm_digamma_pos(1.0f - x) - 3.14159274f * cot;
    return v;
  }
  return abm_digamma_pos(x);
}

// trigamma(x) for finite x > 0: sum of 1/(x+k)^2 up to 10, then the asymptotic series
// 1/x + 1/(2x^2) + sum B_2k / x^(2k+1).
float abm_trigamma_pos(float x) {
  AB_PRECISE float acc = 0.0f;
  AB_PRECISE float y = x;
  for (int i = 0; i < 10; ++i) {
    if (y < 10.0f) {
      AB_PRECISE float u = abm_recip(y);
      acc = acc + u * u;
      y = y + 1.0f;
    }
  }
  AB_PRECISE float u = abm_recip(y);
  AB_PRECISE float z = u * u;
  AB_PRECISE float asym =
      u + z * (0.5f + u * (0.16666667f -
                           z * (0.033333333f - z * (0.023809524f - z * (0.033333333f -
                                                                        z * 0.075757576f)))));
  AB_PRECISE float r = acc + asym;
  return r;
}

// trigamma(x) = d/dx digamma(x); +inf at 0 and the negative integers, the reflection
// pi^2 / sin^2(pi x) - trigamma(1 - x) below 0.
float ab_trigamma(float x) {
  if (abm_is_nan(x)) return x;
  if (x == abm_inf()) return 0.0f;
  if (x <= 0.0f) {
    const float f = floor(x);
    if (f == x) return abm_inf();
    AB_PRECISE float s = abm_sinpi_frac(x - f);
    AB_PRECISE float v = 9.8696044f * abm_recip(s * s) - abm_trigamma_pos(1.0f - x);
    return v;
  }
  return abm_trigamma_pos(x);
}
