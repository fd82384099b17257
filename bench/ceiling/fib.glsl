// fib.ab by hand: fib(n <= 1) = 1, else fib(n - 1) + fib(n - 2), on an explicit stack. A frame
// is an argument, the step it resumes at and the first call's result.

layout(set = 0, binding = 2, std430) readonly buffer ArgN { int w[]; } arg_n;

const uint AT_START = 0u, AFTER_FIRST = 1u, AFTER_SECOND = 2u;

int frame_n[STACK_DEPTH];
uint frame_step[STACK_DEPTH];
int frame_first[STACK_DEPTH];

void main() {
  const uint lane = gl_GlobalInvocationID.x;
  if (lane >= P.lanes) return;
  uint status = CEILING_NOT_FINISHED;
  int depth = 1;
  frame_n[0] = arg_n.w[lane];
  frame_step[0] = AT_START;
  int returned = 0;  // the value of the call that returned last
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
  results.w[lane] = uint(returned);
  lane_status.w[lane] = status;
}
