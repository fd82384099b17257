// Quoting the user's own input in an error message: excerpt() of the public
// autobatch/user_input.h (tools that embed the library quote input the same way).
//
// In ir/, the lowest layer, because every layer above quotes input: the tool's readers, the
// debugger's script runner, the bench's option checks.
#pragma once

#include "autobatch/user_input.h"
