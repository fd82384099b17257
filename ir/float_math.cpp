#include "ir/float_math.h"

#include <bit>
#include <cmath>
#include <cstdint>

namespace ab {
namespace glsl_compat {

// The few GLSL builtins shaders/ab_math.glsl uses, with GLSL's exact semantics.
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

}  // namespace glsl_compat

using namespace glsl_compat;

#define AB_PRECISE
#define AB_OUT(T) T&
#include "shaders/ab_math.glsl"
#undef AB_OUT
#undef AB_PRECISE

}  // namespace ab
