// The texts of shaders/ab_layout.h and shaders/ab_common.glsl, embedded at configure time so the
// generated GLSL declares exactly what the hand-written kernels declare.
#pragma once

namespace ab {

extern const char* const kAbLayoutText;
extern const char* const kAbCommonText;

}  // namespace ab
