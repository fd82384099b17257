// Executes one op for one lane. The interpreter (per lane, Figure 2 IR) and the VM (batched,
// Figure 4 IR) both run every non-control op through `exec_op`, so an op means the same thing on
// both; the GLSL code generator spells the same rules from ops.h.
#pragma once

#include <cstdint>
#include <vector>

#include "ir/ir.h"

namespace ab {

// Bound uniform data: one run of words per declared uniform, in declaration order.
using UniformData = std::vector<std::vector<uint32_t>>;

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

}  // namespace ab
