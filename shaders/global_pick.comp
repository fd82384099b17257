#version 450
// Global schedule, one invocation per step: Algorithm 2's scheduler (ab_pick in ab_common.glsl).
// Chooses the next block from the per-block counts (smallest PC, or most lanes with ties to the
// smallest PC), takes its lanes out of the counts (they all run it now), and records statistics,
// the trace entry and the indirect-dispatch size for the compacted step. Sets DONE when no lane
// is live.
#extension GL_GOOGLE_include_directive : require
#include "ab_common.glsl"

void main() {
  if (gl_GlobalInvocationID.x != 0u) return;
  ab_pick();
}
