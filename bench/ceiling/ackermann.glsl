// ackermann.ab by hand on an explicit stack. ack(m - 1, 1) and the outer call of
// ack(m - 1, ack(m, n - 1)) are tail calls and reuse their frame (as compiled C++ does); only the
// inner call pushes one. Saved state (STATE_WORDS = 2 + 3 * STACK_DEPTH): depth, the last
// returned value, then the live frames, 3 words each.

layout(set = 0, binding = 2, std430) readonly buffer ArgM { int w[]; } arg_m;
layout(set = 0, binding = 3, std430) readonly buffer ArgN { int w[]; } arg_n;

const uint AT_START = 0u, AFTER_INNER = 1u;

int frame_m[STACK_DEPTH];
int frame_n[STACK_DEPTH];
uint frame_step[STACK_DEPTH];

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
      const uint at = saved_at(lane, 2u + 3u * uint(f));
      frame_m[f] = int(saved.w[at]);
      frame_n[f] = int(saved.w[at + 1u]);
      frame_step[f] = saved.w[at + 2u];
    }
  } else {
    frame_m[0] = arg_m.w[lane];
    frame_n[0] = arg_n.w[lane];
    frame_step[0] = AT_START;
  }
  for (uint iteration = 0u;; ++iteration) {
    CEILING_LOOP_EXIT(depth == 0, iteration, status)
    const int top = depth - 1;
    const int m = frame_m[top];
    const int n = frame_n[top];
    if (frame_step[top] == AFTER_INNER) {  // ack(m - 1, <inner result>)
      frame_m[top] = m - 1;
      frame_n[top] = returned;
      frame_step[top] = AT_START;
    } else if (m == 0) {
      returned = n + 1;
      --depth;
    } else if (n == 0) {  // ack(m - 1, 1)
      frame_m[top] = m - 1;
      frame_n[top] = 1;
    } else {  // the inner ack(m, n - 1)
      if (depth == STACK_DEPTH) {
        status = CEILING_STACK_OVERFLOW;
        break;
      }
      frame_step[top] = AFTER_INNER;
      frame_m[depth] = m;
      frame_n[depth] = n - 1;
      frame_step[depth] = AT_START;
      ++depth;
    }
  }
  if (status == CEILING_SUSPENDED) {
    saved.w[saved_at(lane, 0u)] = uint(depth);
    saved.w[saved_at(lane, 1u)] = uint(returned);
    for (int f = 0; f < depth; ++f) {
      const uint at = saved_at(lane, 2u + 3u * uint(f));
      saved.w[at] = uint(frame_m[f]);
      saved.w[at + 1u] = uint(frame_n[f]);
      saved.w[at + 2u] = frame_step[f];
    }
    ceiling_suspend(lane);
    return;
  }
  results.w[lane] = uint(returned);
  lane_status.w[lane] = status;
}
