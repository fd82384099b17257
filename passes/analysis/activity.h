// Activity analysis for reverse-mode differentiation (passes/differentiate.h): which variables
// of a function carry a derivative with respect to its parameters. A variable is active when it
// holds floats and some op writing it has an active operand through which the value can change
// (the op's row says whether its derivative is zero: ir/ops.cpp, OpInfo::derivative).
#pragma once

#include <vector>

#include "ir/ir.h"

namespace ab {

// Whether a value of type `id` holds a float anywhere (a float, or an array or struct of them).
bool has_float(const Types& types, TypeId id);

struct Activity {
  std::vector<bool> active;  // per variable
  std::vector<int> defs;     // per variable: its writes, a parameter's binding counted as one
};

// The active variables of `fn`: its float-carrying parameters (only the first when
// `first_param_only`, value_and_grad's case) and what depends on them.
Activity find_activity(const Function& fn, const Types& types, bool first_param_only);

// Whether `op`'s destination can depend on an active operand: not through a zero-derivative op
// (a constant, floor, a comparison, a random draw); non-float operands are never active.
bool carries_activity(const Op& op, const std::vector<bool>& active);

}  // namespace ab
