#version 450
// Global schedule, compacted variant: lists the lanes waiting at the chosen block so the step
// kernel runs only those (its indirect-dispatch size was written by global_pick). The list's
// order is arbitrary; lanes are independent, so results do not depend on it.
#extension GL_GOOGLE_include_directive : require
#include "ab_common.glsl"

void main() {
  const uint lane = gl_GlobalInvocationID.x;
  if (lane >= P.lanes) return;
  if (state.w[AB_SLOT_PC * P.lanes + lane] != ctrl.w[AB_CTRL_BLOCK]) return;
  list.w[atomicAdd(ctrl.w[AB_CTRL_LIST_LEN], 1u)] = lane;
}
