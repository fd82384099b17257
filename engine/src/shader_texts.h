// The texts of shaders/ab_layout.h and shaders/ab_common.glsl, embedded at configure time so the
// generated GLSL declares exactly what the hand-written kernels declare, and of
// shaders/ab_math.glsl, the transcendental functions shared with the CPU (ir/float_math.h).
#pragma once

namespace ab {

extern const char* const kAbLayoutText;
extern const char* const kAbCommonText;
extern const char* const kAbMathText;

}  // namespace ab
