// tak.ab by hand on an explicit stack: tak(tak(x-1, y, z), tak(y-1, z, x), tak(z-1, x, y)) when
// y < x, else z. The three argument calls push frames; the outer call is a tail call that reuses
// the frame with their results.

layout(set = 0, binding = 2, std430) readonly buffer ArgX { int w[]; } arg_x;
layout(set = 0, binding = 3, std430) readonly buffer ArgY { int w[]; } arg_y;
layout(set = 0, binding = 4, std430) readonly buffer ArgZ { int w[]; } arg_z;

const uint AT_START = 0u, AFTER_FIRST = 1u, AFTER_SECOND = 2u, AFTER_THIRD = 3u;

ivec3 frame_xyz[STACK_DEPTH];
uint frame_step[STACK_DEPTH];
ivec2 frame_results[STACK_DEPTH];  // the first two argument calls' results

void main() {
  const uint lane = gl_GlobalInvocationID.x;
  if (lane >= P.lanes) return;
  uint status = CEILING_NOT_FINISHED;
  int depth = 1;
  frame_xyz[0] = ivec3(arg_x.w[lane], arg_y.w[lane], arg_z.w[lane]);
  frame_step[0] = AT_START;
  int returned = 0;
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
  results.w[lane] = uint(returned);
  lane_status.w[lane] = status;
}
