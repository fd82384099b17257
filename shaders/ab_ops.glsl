//! The op helpers of the generated code's prelude (codegen/glsl_prelude.h): the ab_* functions
//! that the op table's GLSL spellings (OpInfo::glsl in ir/ops.cpp) call, with exactly the CPU
//! semantics of eval_scalar, and the Philox4x32-10 stream of ir/random.cpp. Embedded at build time
//! (codegen/shader_texts.h) after ab_math.glsl, and after ab_common.glsl's declarations.

// ---- prelude: op helpers (semantics of ir/ops.cpp eval_scalar) ----
uint ab_fault_code = AB_FAULT_NONE;  // the codes are ab_layout.h's

bool ab_is_nan(float f) { return (floatBitsToUint(f) & 0x7fffffffu) > 0x7f800000u; }

int ab_neg(int a) { return 0 - a; }
uint ab_neg(uint a) { return 0u - a; }
float ab_neg(float a) { return uintBitsToFloat(floatBitsToUint(a) ^ 0x80000000u); }

int ab_abs(int a) { return a < 0 ? 0 - a : a; }
uint ab_abs(uint a) { return a; }
float ab_abs(float a) { return uintBitsToFloat(floatBitsToUint(a) & 0x7fffffffu); }

int ab_to_int(int a) { return a; }
int ab_to_int(uint a) { return int(a); }
int ab_to_int(bool a) { return a ? 1 : 0; }
int ab_to_int(float f) {
  if (ab_is_nan(f)) return 0;
  if (f >= 2147483648.0) return 2147483647;
  if (f < -2147483648.0) return int(0x80000000u);
  return int(f);
}
uint ab_to_uint(int a) { return uint(a); }
uint ab_to_uint(uint a) { return a; }
uint ab_to_uint(bool a) { return a ? 1u : 0u; }
uint ab_to_uint(float f) {
  if (ab_is_nan(f) || f <= -1.0) return 0u;
  if (f >= 4294967296.0) return 0xffffffffu;
  return f < 0.0 ? 0u : uint(f);
}
float ab_to_float(int a) { return float(a); }
float ab_to_float(uint a) { return float(a); }
float ab_to_float(bool a) { return a ? 1.0 : 0.0; }
float ab_to_float(float a) { return a; }

int ab_div(int a, int b) {
  if (b == 0) { ab_fault_code = AB_FAULT_DIVISION_BY_ZERO; return 0; }
  if (a == int(0x80000000u) && b == -1) return a;  // the one overflowing case wraps
  return a / b;
}
uint ab_div(uint a, uint b) {
  if (b == 0u) { ab_fault_code = AB_FAULT_DIVISION_BY_ZERO; return 0u; }
  return a / b;
}
float ab_div(float a, float b) {
  precise float r = a / b;
  return r;
}
int ab_rem(int a, int b) {
  if (b == 0) { ab_fault_code = AB_FAULT_DIVISION_BY_ZERO; return 0; }
  if (a == int(0x80000000u) && b == -1) return 0;
  return a - (a / b) * b;  // C's truncating remainder (GLSL % on negatives is undefined)
}
uint ab_rem(uint a, uint b) {
  if (b == 0u) { ab_fault_code = AB_FAULT_DIVISION_BY_ZERO; return 0u; }
  return a % b;
}
// C fmodf, exactly: long division on the significands (the result is always representable).
float ab_rem(float x, float y) {
  uint ux = floatBitsToUint(x), uy = floatBitsToUint(y);
  int ex = int((ux >> 23) & 0xffu), ey = int((uy >> 23) & 0xffu);
  const uint sx = ux & 0x80000000u;
  if ((uy << 1) == 0u || ab_is_nan(y) || ex == 0xff) return uintBitsToFloat(0x7fc00000u);
  if ((ux << 1) <= (uy << 1)) {
    if ((ux << 1) == (uy << 1)) return uintBitsToFloat(sx);
    return x;
  }
  if (ex == 0) {
    uint i = ux << 9;
    while ((i >> 31) == 0u) { --ex; i <<= 1; }
    ux <<= uint(1 - ex);
  } else {
    ux = (ux & 0x007fffffu) | 0x00800000u;
  }
  if (ey == 0) {
    uint i = uy << 9;
    while ((i >> 31) == 0u) { --ey; i <<= 1; }
    uy <<= uint(1 - ey);
  } else {
    uy = (uy & 0x007fffffu) | 0x00800000u;
  }
  for (; ex > ey; --ex) {
    const uint i = ux - uy;
    if ((i >> 31) == 0u) {
      if (i == 0u) return uintBitsToFloat(sx);
      ux = i;
    }
    ux <<= 1;
  }
  const uint i = ux - uy;
  if ((i >> 31) == 0u) {
    if (i == 0u) return uintBitsToFloat(sx);
    ux = i;
  }
  while ((ux >> 23) == 0u) { ux <<= 1; --ex; }
  if (ex > 0) {
    ux = (ux - 0x00800000u) | (uint(ex) << 23);
  } else {
    ux >>= uint(1 - ex);
  }
  return uintBitsToFloat(ux | sx);
}

int ab_shl(int a, int b) { return a << (uint(b) & 31u); }
uint ab_shl(uint a, uint b) { return a << (b & 31u); }
int ab_shr(int a, int b) { return a >> (uint(b) & 31u); }
uint ab_shr(uint a, uint b) { return a >> (b & 31u); }

int ab_min(int a, int b) { return b < a ? b : a; }
uint ab_min(uint a, uint b) { return b < a ? b : a; }
float ab_min(float a, float b) { return b < a ? b : a; }
int ab_max(int a, int b) { return b < a ? a : b; }
uint ab_max(uint a, uint b) { return b < a ? a : b; }
float ab_max(float a, float b) { return b < a ? a : b; }

// ---- Philox4x32-10 (ir/random.cpp): draw k of lane L is philox({k, 0, L, 0}, seed). L is the
// lane's place in the whole batch: the engine's kernels pass P.first_lane + lane (a shard's
// first lane, RunOptions::first_lane); a user's compute kernel (compute.h) passes its own. ----
uvec4 ab_philox(uvec4 c, uvec2 k) {
  for (int round = 0; round < 10; ++round) {
    uint hi0, lo0, hi1, lo1;
    umulExtended(0xD2511F53u, c.x, hi0, lo0);
    umulExtended(0xCD9E8D57u, c.z, hi1, lo1);
    c = uvec4(hi1 ^ c.y ^ k.x, lo1, hi0 ^ c.w ^ k.y, lo0);
    k += uvec2(0x9E3779B9u, 0xBB67AE85u);
  }
  return c;
}
uvec4 ab_draw(uint lane, uint draw) {
  return ab_philox(uvec4(draw, 0u, lane, 0u), uvec2(P.seed_lo, P.seed_hi));
}
float ab_rand_uniform(uint lane, uint draw) {
  return float(ab_draw(lane, draw).x >> 8) * (1.0 / 16777216.0);
}
float ab_rand_normal(uint lane, uint draw) {
  const uvec4 w = ab_draw(lane, draw);
  const float u1 = float((w.x >> 8) + 1u) * (1.0 / 16777216.0);
  const float u2 = float(w.y >> 8) * (1.0 / 16777216.0);
  precise float r = sqrt(-2.0 * ab_log(u1)) * ab_cos(6.2831853 * u2);
  return r;
}
