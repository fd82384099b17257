// tak.ab by hand on an explicit stack: tak(tak(x-1, y, z), tak(y-1, z, x), tak(z-1, x, y)) when
// y < x, else z. The three argument calls push frames; the outer call is a tail call that reuses
// the frame with their results. Saved state (STATE_WORDS = 2 + 6 * STACK_DEPTH): depth, the
// last returned value, then the live frames, 6 words each (x, y, z, step, two results).

layout(set = 0, binding = 2, std430) readonly buffer ArgX { int w[]; } arg_x;
layout(set = 0, binding = 3, std430) readonly buffer ArgY { int w[]; } arg_y;
layout(set = 0, binding = 4, std430) readonly buffer ArgZ { int w[]; } arg_z;

const uint AT_START = 0u, AFTER_FIRST = 1u, AFTER_SECOND = 2u, AFTER_THIRD = 3u;

ivec3 frame_xyz[STACK_DEPTH];
uint frame_step[STACK_DEPTH];
ivec2 frame_results[STACK_DEPTH];  // the first two argument calls' results

void main() {
  const uint lane = gl_GlobalInvocationID.x;
  if (!ceiling_lane_runs(lane)) return;
  uint status = CEILING_NOT_FINISHED;
  int depth = 1;
  int returned = 0;
  if (ceiling_resuming(lane)) {
    depth = int(saved.w[saved_at(lane, 0u)]);
    returned = int(saved.w[saved_at(lane, 1u)]);
    for (int f = 0; f < depth; ++f) {
      const uint at = saved_at(lane, 2u + 6u * uint(f));
      frame_xyz[f] = ivec3(saved.w[at], saved.w[at + 1u], saved.w[at + 2u]);
      frame_step[f] = saved.w[at + 3u];
      frame_results[f] = ivec2(saved.w[at + 4u], saved.w[at + 5u]);
    }
  } else {
    frame_xyz[0] = ivec3(arg_x.w[lane], arg_y.w[lane], arg_z.w[lane]);
    frame_step[0] = AT_START;
  }
  for (uint iteration = 0u;; ++iteration) {
    CEILING_LOOP_EXIT(depth == 0, iteration, status)
    const int top = depth - 1;
    const ivec3 a = frame_xyz[top];  // (x, y, z)
    const uint step = frame_step[top];
    if (step == AT_START && !(a.y < a.x)) {
      returned = a.z;
      --depth;
      continue;
    }
    if (step == AFTER_THIRD) {  // the tail call tak(first, second, third)
      frame_xyz[top] = ivec3(frame_results[top], returned);
      frame_step[top] = AT_START;
      continue;
    }
    if (depth == STACK_DEPTH) {
      status = CEILING_STACK_OVERFLOW;
      break;
    }
    if (step == AFTER_FIRST) frame_results[top].x = returned;
    if (step == AFTER_SECOND) frame_results[top].y = returned;
    ivec3 call = ivec3(a.x - 1, a.y, a.z);
    if (step == AFTER_FIRST) call = ivec3(a.y - 1, a.z, a.x);
    if (step == AFTER_SECOND) call = ivec3(a.z - 1, a.x, a.y);
    frame_step[top] = step + 1u;
    frame_xyz[depth] = call;
    frame_step[depth] = AT_START;
    ++depth;
  }
  if (status == CEILING_SUSPENDED) {
    saved.w[saved_at(lane, 0u)] = uint(depth);
    saved.w[saved_at(lane, 1u)] = uint(returned);
    for (int f = 0; f < depth; ++f) {
      const uint at = saved_at(lane, 2u + 6u * uint(f));
      saved.w[at] = uint(frame_xyz[f].x);
      saved.w[at + 1u] = uint(frame_xyz[f].y);
      saved.w[at + 2u] = uint(frame_xyz[f].z);
      saved.w[at + 3u] = frame_step[f];
      saved.w[at + 4u] = uint(frame_results[f].x);
      saved.w[at + 5u] = uint(frame_results[f].y);
    }
    ceiling_suspend(lane);
    return;
  }
  results.w[lane] = uint(returned);
  lane_status.w[lane] = status;
}
