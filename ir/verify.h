// The IR verifier: checks every structural and typing rule of the Figure 2 and Figure 4 forms
// (operand counts and types per ops.h, valid variable/block/function/uniform indices, terminators,
// access paths within bounds, Call only in Figure 2, stack ops only on Stacked vars in Figure 4).
#pragma once

#include <string>
#include <vector>

#include "ir/ir.h"

namespace ab {

// Returns the problems found, each "function 'f' block 2 op 3: message"; empty if valid.
std::vector<std::string> verify(const Program& program);
std::vector<std::string> verify(const LoweredProgram& lowered);

}  // namespace ab
