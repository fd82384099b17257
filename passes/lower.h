// The lowering pipeline, Figure 2 -> Figure 4 (Radul et al. §3): split_at_calls, then the
// analysis classify_storage (passes/analysis/), then merge_and_lower, then pop_push_to_update. Each
// pass has its own header.
#pragma once

#include "ir/ir.h"

namespace ab {

struct LowerOptions {
  bool pop_push_to_update = true;  // §3.2 optimization 5
};

// Lowers the functions reachable from `entry`. `program` must outlive the result (it is
// referenced for types, uniforms and names).
LoweredProgram lower(const Program& program, int entry, const LowerOptions& options = {});

}  // namespace ab
