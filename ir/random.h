// Per-lane counter-based random numbers: Philox4x32-10 (Salmon et al., SC 2011), public in
// autobatch/numerics.h (which documents the stream) so hosts reproduce a program's draws.
// The GLSL code generator emits the same function (see its prelude).
#pragma once

#include "autobatch/numerics.h"
