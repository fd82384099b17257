// The language's transcendental functions on the CPU: shaders/ab_math.glsl compiled as C++, so
// the interpreter, the VM and every GPU kernel run one definition (docs/language.md). Public in
// autobatch/numerics.h.
#pragma once

#include "autobatch/numerics.h"
