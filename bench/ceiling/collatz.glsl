// collatz.ab by hand: the number of Collatz steps from n down to 1. No calls, so no stack; the
// loop is bounded like every ceiling kernel's. Saved state (STATE_WORDS = 2): x and the steps.

layout(set = 0, binding = 2, std430) readonly buffer ArgN { int w[]; } arg_n;

void main() {
  const uint lane = gl_GlobalInvocationID.x;
  if (!ceiling_lane_runs(lane)) return;
  uint status = CEILING_NOT_FINISHED;
  int x = arg_n.w[lane];
  int steps = 0;
  if (ceiling_resuming(lane)) {
    x = int(saved.w[saved_at(lane, 0u)]);
    steps = int(saved.w[saved_at(lane, 1u)]);
  }
  for (uint iteration = 0u;; ++iteration) {
    CEILING_LOOP_EXIT(x == 1, iteration, status)
    // Truncating division and C's remainder (ab_rem), wrapping 3x + 1: the language's int.
    if (ab_rem(x, 2) == 0)
      x = x / 2;
    else
      x = 3 * x + 1;
    ++steps;
  }
  if (status == CEILING_SUSPENDED) {
    saved.w[saved_at(lane, 0u)] = uint(x);
    saved.w[saved_at(lane, 1u)] = uint(steps);
    ceiling_suspend(lane);
    return;
  }
  results.w[lane] = uint(steps);
  lane_status.w[lane] = status;
}
