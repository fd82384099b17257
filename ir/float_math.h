// The language's transcendental functions on the CPU: shaders/ab_math.glsl compiled as C++, so
// the interpreter, the VM and every GPU kernel run one definition (docs/language.md). Public in
// autobatch/numerics.h.
#pragma once

#include "autobatch/numerics.h"

namespace ab {
// log_sum_exp(v)'s shift for an array whose max is m (shaders/ab_math.glsl).
float ab_lse_shift(float m);
}  // namespace ab
