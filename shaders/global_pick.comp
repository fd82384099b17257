#version 450
// Global schedule, one invocation per step: Algorithm 2's scheduler. Chooses the next block from
// the per-block counts (smallest PC, or most lanes with ties to the smallest PC), takes its lanes
// out of the counts (they all run it now), and records statistics, the trace entry and the
// indirect-dispatch size for the compacted step. Sets DONE when no lane is live.
#extension GL_GOOGLE_include_directive : require
#include "ab_common.glsl"

void add64(uint lo_word, uint value) {
  uint carry;
  ctrl.w[lo_word] = uaddCarry(ctrl.w[lo_word], value, carry);
  ctrl.w[lo_word + 1u] += carry;
}

void main() {
  if (gl_GlobalInvocationID.x != 0u) return;
  ctrl.w[AB_CTRL_LIST_LEN] = 0u;
  uint best = AB_NO_BLOCK, best_count = 0u, live = 0u;
  if (ctrl.w[AB_CTRL_DONE] == 0u) {
    for (uint b = 0u; b < P.exit_pc; ++b) {
      const uint c = ctrl.w[AB_CTRL_COUNTS + b];
      live += c;
      if (c == 0u) continue;
      if (best == AB_NO_BLOCK || (P.heuristic == 1u && c > best_count)) {
        best = b;
        best_count = c;
      }
    }
  }
  ctrl.w[AB_CTRL_BLOCK] = best;
  ctrl.w[AB_CTRL_ACTIVE] = best_count;
  ctrl.w[AB_CTRL_INDIRECT_X] = (best_count + AB_GROUP_SIZE - 1u) / AB_GROUP_SIZE;
  ctrl.w[AB_CTRL_INDIRECT_Y] = 1u;
  ctrl.w[AB_CTRL_INDIRECT_Z] = 1u;
  if (best == AB_NO_BLOCK) {
    ctrl.w[AB_CTRL_DONE] = 1u;
    return;
  }
  ctrl.w[AB_CTRL_COUNTS + best] = 0u;
  add64(AB_CTRL_STEPS_LO, 1u);
  add64(AB_CTRL_UTIL_LO, uint(float(best_count) / float(live) * 16777216.0));
  ctrl.w[AB_CTRL_COUNTS + P.exit_pc + best] += 1u;
  const uint t = ctrl.w[AB_CTRL_TRACE_LEN];
  if (t < P.trace_cap) {
    const uint at = AB_CTRL_COUNTS + 2u * P.exit_pc + 2u * t;
    ctrl.w[at] = best;
    ctrl.w[at + 1u] = best_count;
    ctrl.w[AB_CTRL_TRACE_LEN] = t + 1u;
  }
}
