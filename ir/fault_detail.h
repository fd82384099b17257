// The words a fault record adds to its code: for index_out_of_range, the index and the array
// it missed, named as the source names them ("index 25 out of range for q: float[25]"). Built
// from the faulting op and the IndexFault every backend records (ir/exec.h), so the message is the
// same whichever backend ran the lane.
#pragma once

#include <functional>
#include <string>

#include "ir/exec.h"
#include "ir/ir.h"

namespace ab {

struct NamedVar {
  std::string name;  // as the source wrote it; empty for a temporary
  TypeId type = Types::kVoid;
};

// `var` names op's variables; `uniforms` are the program's (a UniformGet's array).
std::string index_fault_text(const Types& types, const std::vector<Uniform>& uniforms, const Op& op,
                             const std::function<NamedVar(VarId)>& var, IndexFault fault);

// The same for an op of `fn` (the interpreter's IR) and of the lowered program (the VM's and the
// Vulkan engine's).
std::string index_fault_text(const Program& program, const Function& fn, const Op& op,
                             IndexFault fault);
std::string index_fault_text(const LoweredProgram& program, const Op& op, IndexFault fault);

}  // namespace ab
