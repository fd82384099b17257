// ackermann.ab by hand on an explicit stack. ack(m - 1, 1) and the outer call of
// ack(m - 1, ack(m, n - 1)) are tail calls and reuse their frame (as compiled C++ does); only the
// inner call pushes one.

layout(set = 0, binding = 2, std430) readonly buffer ArgM { int w[]; } arg_m;
layout(set = 0, binding = 3, std430) readonly buffer ArgN { int w[]; } arg_n;

const uint AT_START = 0u, AFTER_INNER = 1u;

int frame_m[STACK_DEPTH];
int frame_n[STACK_DEPTH];
uint frame_step[STACK_DEPTH];

void main() {
  const uint lane = gl_GlobalInvocationID.x;
  if (lane >= P.lanes) return;
  uint status = CEILING_NOT_FINISHED;
  int depth = 1;
  frame_m[0] = arg_m.w[lane];
  frame_n[0] = arg_n.w[lane];
  frame_step[0] = AT_START;
  int returned = 0;
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
  results.w[lane] = uint(returned);
  lane_status.w[lane] = status;
}
