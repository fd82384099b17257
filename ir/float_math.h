// The language's transcendental functions on the CPU: shaders/ab_math.glsl compiled as C++, so
// the interpreter, the VM and every GPU kernel run one definition (docs/language.md).
#pragma once

namespace ab {

float ab_exp(float x);
float ab_log(float x);
float ab_sin(float x);
float ab_cos(float x);
float ab_tanh(float x);
float ab_pow(float x, float y);

}  // namespace ab
