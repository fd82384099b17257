// The hand-written kernels of shaders/*.comp (compiled to SPIR-V at build time by glslc) and the
// push constants every kernel, hand-written or generated, receives (`Params` in
// shaders/ab_common.glsl; both follow the offsets of shaders/ab_layout.h, checked below).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "shaders/ab_layout.h"

namespace ab {

struct PushConstants {
  uint32_t lanes = 0;
  uint32_t exit_pc = 0;
  uint32_t depth = 0;
  uint32_t max_steps = 0;
  uint32_t heuristic = 0;  // a Heuristic's value, one of AB_HEURISTIC_*
  uint32_t trace_cap = 0;
  uint32_t seed_lo = 0;
  uint32_t seed_hi = 0;
  uint32_t budget = 0;
  uint32_t zero = 0;  // always 0 (ab_common.glsl: hides float constants from the driver's algebra)
  uint32_t stream_cap = 0;
  uint32_t first_lane = 0;  // RunOptions::first_lane: lane L draws lane first_lane + L's stream
};
static_assert(offsetof(PushConstants, lanes) == AB_PUSH_LANES);
static_assert(offsetof(PushConstants, exit_pc) == AB_PUSH_EXIT_PC);
static_assert(offsetof(PushConstants, depth) == AB_PUSH_DEPTH);
static_assert(offsetof(PushConstants, max_steps) == AB_PUSH_MAX_STEPS);
static_assert(offsetof(PushConstants, heuristic) == AB_PUSH_HEURISTIC);
static_assert(offsetof(PushConstants, trace_cap) == AB_PUSH_TRACE_CAP);
static_assert(offsetof(PushConstants, seed_lo) == AB_PUSH_SEED_LO);
static_assert(offsetof(PushConstants, seed_hi) == AB_PUSH_SEED_HI);
static_assert(offsetof(PushConstants, budget) == AB_PUSH_BUDGET);
static_assert(offsetof(PushConstants, zero) == AB_PUSH_ZERO);
static_assert(offsetof(PushConstants, stream_cap) == AB_PUSH_STREAM_CAP);
static_assert(offsetof(PushConstants, first_lane) == AB_PUSH_FIRST_LANE);
static_assert(sizeof(PushConstants) == AB_PUSH_BYTES);
// The product kernel's words (shaders/ab_product.glsl), pushed after PushConstants: AB_PRODUCT_*.
struct ProductPush {
  uint32_t words[AB_PRODUCT_WORDS] = {};
};
static_assert(AB_PUSH_PRODUCT == sizeof(PushConstants));
static_assert(AB_PUSH_RANGE_BYTES == sizeof(PushConstants) + sizeof(ProductPush));

// LocalRound: the indirect arguments of a recorded local-schedule round (shaders/local_round.comp).
enum class HandKernel { GlobalCount, GlobalPick, GlobalCompact, LocalRound };
const std::vector<uint32_t>& hand_kernel_spirv(HandKernel k);

}  // namespace ab
