#version 450
// Global schedule, once per run: counts the live lanes waiting at each block. From then on the
// step kernel keeps the counts up to date as lanes move.
#extension GL_GOOGLE_include_directive : require
#include "ab_common.glsl"

void main() {
  const uint lane = gl_GlobalInvocationID.x;
  if (lane >= P.lanes) return;
  const uint pc = state.w[AB_SLOT_PC * P.lanes + lane];
  if (pc < P.exit_pc) atomicAdd(ctrl.w[AB_CTRL_COUNTS + pc], 1u);
}
