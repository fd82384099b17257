// Executes one op for one lane. The interpreter (per lane, Figure 2 IR) and the VM (batched,
// Figure 4 IR) both run every non-control op through `exec_op`, so an op means the same thing on
// both; the GLSL code generator spells the same rules from ops.h.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "autobatch/batch.h"  // UniformData
#include "ir/ir.h"

namespace ab {

// A lane's variables as flat words: variable v occupies words[offset[v] .. offset[v] + words(v)),
// offsets as layout_words (ir/types.h) packs them.
struct FrameView {
  uint32_t* words = nullptr;
  const uint32_t* offset = nullptr;
  const TypeId* type = nullptr;
};

struct LaneRandom {
  uint64_t seed = 0;
  uint32_t lane = 0;
  uint64_t draws = 0;  // draws made so far by this lane
};

// Runs `op` (anything but Call, Push, Pop and Update). Returns Fault::None or the lane's fault;
// on a fault the destination is left unchanged. Emit appends its value's words to `emitted`,
// which the backend hands on (RunOptions::on_emit).
Fault exec_op(const Op& op, const Types& types, const FrameView& frame, LaneRandom& rng,
              const UniformData& uniforms, std::vector<uint32_t>& emitted);

// An index_out_of_range fault's cause: which dynamic index of the op's access path (0 = the first
// the path takes) and its raw word. Every backend records both (the Vulkan kernels in the fault
// slots of shaders/ab_layout.h); ir/fault_detail.h names the array and its bound from them.
struct IndexFault {
  uint32_t ordinal = 0;
  uint32_t value = 0;
};

// The first operand of a Get, Set or UniformGet that is an index (the path's first dynamic step).
size_t first_index_arg(OpCode code);

// The first dynamic index of `op`'s path that is out of range in `frame`; none for an op without
// a path or whose indices are all in range. Read after exec_op faulted, on the same frame.
std::optional<IndexFault> find_index_fault(const Op& op, const Types& types,
                                           const FrameView& frame);

}  // namespace ab
