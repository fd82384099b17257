// Declarations every hand-written kernel shares with the generated code: the buffers it binds and
// the push constants (mirrored by PushConstants in engine/src/kernels.h).
#include "ab_layout.h"

layout(local_size_x = AB_GROUP_SIZE) in;

layout(set = 0, binding = AB_BIND_CTRL, std430) buffer Ctrl { uint w[]; } ctrl;
layout(set = 0, binding = AB_BIND_STATE, std430) buffer State { uint w[]; } state;
layout(set = 0, binding = AB_BIND_LIST, std430) buffer List { uint w[]; } list;

layout(push_constant) uniform Params {
  uint lanes;
  uint exit_pc;     // number of blocks; a lane whose PC is exit_pc has finished
  uint depth;       // stack capacity per lane
  uint max_steps;   // per-lane block budget
  uint heuristic;   // 0 = min PC, 1 = most lanes
  uint trace_cap;   // trace entries the control buffer holds; 0 = no trace
  uint seed_lo;
  uint seed_hi;
  uint budget;      // local schedule: group steps per dispatch
} P;
