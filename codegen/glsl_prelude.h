// The GLSL prelude of every generated module: the ab_* helper functions that the op table's GLSL
// spellings (OpInfo::glsl in ir/ops.cpp) call, overloaded per scalar type, with exactly the CPU
// semantics of eval_scalar (wrapping integers, faulting division, shifts mod 32, saturating
// float->int with NaN -> 0, min/max as b<a?b:a, C fmod) and the Philox4x32-10 stream of
// ir/random.cpp. A helper that faults sets `ab_fault_code` to one of the AB_FAULT_* codes of
// shaders/ab_layout.h, which must come before the prelude; the generated code checks it. The
// transcendental functions come first: shaders/ab_math.glsl, the same source as the CPU's.
#pragma once

#include <string>

namespace ab {

const std::string& glsl_prelude();

}  // namespace ab
