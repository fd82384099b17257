#version 450
// Global schedule, once per run and after the host changed lanes' PCs (a drained stream, a
// restored checkpoint): counts the live lanes waiting at each block (the host zeroed the counts).
// With per-block lane lists it also appends each lane to its block's list. From then on the step
// kernel keeps the counts (and lists) up to date as lanes move.
#extension GL_GOOGLE_include_directive : require
#include "ab_common.glsl"

void main() {
  const uint lane = gl_GlobalInvocationID.x;
  if (lane >= P.lanes) return;
  const uint pc = state.w[AB_SLOT_PC * P.lanes + lane];
  if (pc >= P.exit_pc) return;
  const uint at = atomicAdd(ctrl.w[AB_CTRL_COUNTS + pc], 1u);
  if (ctrl.w[AB_CTRL_LISTS] != 0u) list.w[ab_list_region(pc) * P.lanes + at] = lane;
}
