// Analysis: classify_storage (over the split Figure 2 program; Radul et al. §3.2, opts 1-3).
// Requires: split_at_calls has run; changes nothing. Decides, per variable, where it lives in the
// PC form:
//   Stacked  - saved around some call that may re-enter its function (caller-saves, per variable);
//   Register - otherwise live across a block boundary (incl. params and results), no stack;
//   Temp     - live only inside one block: no storage at all.
// and, per call site, which variables the caller saves (live after the call, not its destination,
// and the callee can reach the caller). A non-recursive program gets no Stacked variables.
#pragma once

#include <vector>

#include "ir/ir.h"
#include "passes/analysis/call_graph.h"

namespace ab {

struct StoragePlan {
  std::vector<std::vector<Storage>> storage;           // [function][var]
  std::vector<std::vector<std::vector<VarId>>> saved;  // [function][block]: saved around its call
};

StoragePlan classify_storage(const Program& split, const CallGraph& calls);

}  // namespace ab
