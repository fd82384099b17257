#version 450
// Local schedule, recorded into a host's command buffer (VulkanRun::record): one invocation
// before each round decides on the GPU whether the round runs. It writes the round's indirect
// dispatch arguments: every group while some lane was still live after the last round (or the run
// was just created or restarted), else no group at all, so a finished run costs the host's frames
// only these tiny dispatches and no readback.
#extension GL_GOOGLE_include_directive : require
#include "ab_common.glsl"

void main() {
  if (gl_GlobalInvocationID.x != 0u) return;
  const bool live = ctrl.w[AB_CTRL_NOT_FINISHED] != 0u;
  ctrl.w[AB_CTRL_INDIRECT_X] = live ? (P.lanes + AB_GROUP_SIZE - 1u) / AB_GROUP_SIZE : 0u;
  ctrl.w[AB_CTRL_INDIRECT_Y] = 1u;
  ctrl.w[AB_CTRL_INDIRECT_Z] = 1u;
  ctrl.w[AB_CTRL_NOT_FINISHED] = 0u;  // the round's groups set it again while lanes are live
}
