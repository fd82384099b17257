// The few GLSL builtins shaders/ab_math.glsl uses, with GLSL's exact semantics, so that the same
// source compiles as C++: float_math.cpp (the language's math for the interpreter and the vm) and
// vm_kernels.cpp (the same functions inlined into its loops across lanes) include it.
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>

namespace ab::glsl_compat {

using uint = uint32_t;
inline float uintBitsToFloat(uint w) {
  return std::bit_cast<float>(w);
}
inline uint floatBitsToUint(float f) {
  return std::bit_cast<uint>(f);
}
inline float floor(float x) {
  return std::floor(x);
}
inline void umulExtended(uint a, uint b, uint& msb, uint& lsb) {
  const uint64_t p = uint64_t{a} * b;
  msb = static_cast<uint>(p >> 32);
  lsb = static_cast<uint>(p);
}
inline uint uaddCarry(uint a, uint b, uint& carry) {
  const uint s = a + b;
  carry = s < a ? 1u : 0u;
  return s;
}

}  // namespace ab::glsl_compat
