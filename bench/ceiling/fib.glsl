// fib.ab by hand: fib(n <= 1) = 1, else fib(n - 1) + fib(n - 2), on an explicit stack. A frame
// is an argument, the step it resumes at and the first call's result. Saved state (STATE_WORDS =
// 2 + 3 * STACK_DEPTH): depth, the last returned value, then the live frames, 3 words each.

layout(set = 0, binding = 2, std430) readonly buffer ArgN { int w[]; } arg_n;

const uint AT_START = 0u, AFTER_FIRST = 1u, AFTER_SECOND = 2u;

int frame_n[STACK_DEPTH];
uint frame_step[STACK_DEPTH];
int frame_first[STACK_DEPTH];

void main() {
  const uint lane = gl_GlobalInvocationID.x;
  if (!ceiling_lane_runs(lane)) return;
  uint status = CEILING_NOT_FINISHED;
  int depth = 1;
  int returned = 0;  // the value of the call that returned last
  if (ceiling_resuming(lane)) {
    depth = int(saved.w[saved_at(lane, 0u)]);
    returned = int(saved.w[saved_at(lane, 1u)]);
    for (int f = 0; f < depth; ++f) {
      const uint at = saved_at(lane, 2u + 3u * uint(f));
      frame_n[f] = int(saved.w[at]);
      frame_step[f] = saved.w[at + 1u];
      frame_first[f] = int(saved.w[at + 2u]);
    }
  } else {
    frame_n[0] = arg_n.w[lane];
    frame_step[0] = AT_START;
  }
  for (uint iteration = 0u;; ++iteration) {
    CEILING_LOOP_EXIT(depth == 0, iteration, status)
    const int top = depth - 1;
    const int n = frame_n[top];
    const uint step = frame_step[top];
    if (step == AT_START && n <= 1) {
      returned = 1;
      --depth;
      continue;
    }
    if (step == AFTER_SECOND) {
      returned = frame_first[top] + returned;  // wraps, as the language's int does
      --depth;
      continue;
    }
    if (depth == STACK_DEPTH) {
      status = CEILING_STACK_OVERFLOW;
      break;
    }
    if (step == AFTER_FIRST) frame_first[top] = returned;
    frame_step[top] = step + 1u;
    frame_n[depth] = step == AT_START ? n - 1 : n - 2;
    frame_step[depth] = AT_START;
    ++depth;
  }
  if (status == CEILING_SUSPENDED) {
    saved.w[saved_at(lane, 0u)] = uint(depth);
    saved.w[saved_at(lane, 1u)] = uint(returned);
    for (int f = 0; f < depth; ++f) {
      const uint at = saved_at(lane, 2u + 3u * uint(f));
      saved.w[at] = uint(frame_n[f]);
      saved.w[at + 1u] = frame_step[f];
      saved.w[at + 2u] = uint(frame_first[f]);
    }
    ceiling_suspend(lane);
    return;
  }
  results.w[lane] = uint(returned);
  lane_status.w[lane] = status;
}
