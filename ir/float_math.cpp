#include "ir/float_math.h"

#include "ir/glsl_compat.h"

namespace ab {

using namespace glsl_compat;

#define AB_PRECISE
#define AB_OUT(T) T&
#include "shaders/ab_math.glsl"
#undef AB_OUT
#undef AB_PRECISE

}  // namespace ab
