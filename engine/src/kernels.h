// The hand-written kernels of shaders/*.comp (compiled to SPIR-V at build time by glslc) and the
// push constants every kernel, hand-written or generated, receives (mirrors `Params` in
// shaders/ab_common.glsl).
#pragma once

#include <cstdint>
#include <vector>

namespace ab {

struct PushConstants {
  uint32_t lanes = 0;
  uint32_t exit_pc = 0;
  uint32_t depth = 0;
  uint32_t max_steps = 0;
  uint32_t heuristic = 0;
  uint32_t trace_cap = 0;
  uint32_t seed_lo = 0;
  uint32_t seed_hi = 0;
  uint32_t budget = 0;
  uint32_t zero = 0;  // always 0 (ab_common.glsl: hides float constants from the driver's algebra)
  uint32_t stream_cap = 0;
};

// LocalRound: the indirect arguments of a recorded local-schedule round (shaders/local_round.comp).
enum class HandKernel { GlobalCount, GlobalPick, GlobalCompact, LocalRound };
const std::vector<uint32_t>& hand_kernel_spirv(HandKernel k);

}  // namespace ab
