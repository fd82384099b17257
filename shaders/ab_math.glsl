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
  for (int i = 0; i < 3; ++i) {
    AB_PRECISE float t = 1.0f - m * y;
    y = y + y * t;
  }
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
