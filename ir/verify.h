// The IR verifier: checks every structural and typing rule of the Figure 2 and Figure 4 forms
// (operand counts and types per ops.h, valid variable/block/function/uniform indices, terminators,
// access paths within bounds, Call only in Figure 2, stack ops only on Stacked vars in Figure 4).
#pragma once

#include "autobatch/expected.h"
#include "ir/ir.h"

namespace ab {

// Ok if the program is valid, else an Error listing every problem found, one per line, each
// "function 'f' block 2 op 3: message".
Status verify(const Program& program);
Status verify(const LoweredProgram& lowered);

}  // namespace ab
