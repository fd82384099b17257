// nuts_tree.ab by hand: NUTS-shaped control flow over a float[4] state, build_tree's recursion
// on an explicit stack. Float operations are written in the .ab source's order and kept
// `precise` (no fused multiply-add, no reassociation), and the random draws come in the same
// program order from the prelude's per-lane Philox stream (draw k of lane L), as in
// bench/native_nuts_tree.cpp, so results equal the engine's generated kernels on the same device.
// A dispatch runs whole transitions: before one that might not fit the lane's remaining
// MAX_ITERATIONS it saves its state (STATE_WORDS = 6: q, the draws so far, the next transition)
// and suspends.

layout(set = 0, binding = 2, std430) readonly buffer ArgQ0 { uint w[]; } arg_q0;  // 4 per lane
layout(set = 0, binding = 3, std430) readonly buffer ArgEps { uint w[]; } arg_eps;
layout(set = 0, binding = 4, std430) readonly buffer ArgIterations { int w[]; } arg_iterations;

const int MAX_DEPTH = 6;  // MAX_DEPTH in nuts_tree.ab
// A transition's build_tree calls (depth 0 .. MAX_DEPTH - 1; depth d visits 2^d leaves once and
// 2^d - 1 inner frames three times, 4 * 2^d - 3 loop iterations) take fewer than this many.
const uint TRANSITION_ITERATIONS = 4u << MAX_DEPTH;

struct State {
  vec4 q;
  vec4 p;
};
struct Tree {
  State minus;
  State plus;
  vec4 proposal;
  int size;
  bool stop;
};

uint lane_id;
uint draws = 0u;  // random draws so far: the next one's index in the lane's stream

float draw_uniform() { return ab_rand_uniform(lane_id, draws++); }
float draw_normal() { return ab_rand_normal(lane_id, draws++); }

// The language's dot: acc = 0, then acc + x[i] * y[i] in index order.
float dot4(vec4 x, vec4 y) {
  precise float acc = 0.0;
  acc = acc + x.x * y.x;
  acc = acc + x.y * y.y;
  acc = acc + x.z * y.z;
  acc = acc + x.w * y.w;
  return acc;
}

State leapfrog(State s, float eps) {
  precise vec4 p_half = s.p - s.q * (eps * 0.5);
  precise vec4 q = s.q + p_half * eps;
  precise vec4 p = p_half - q * (eps * 0.5);
  return State(q, p);
}

float energy(State s) {
  precise float e = 0.5 * (dot4(s.q, s.q) + dot4(s.p, s.p));
  return e;
}

bool u_turn(State minus, State plus) {
  precise vec4 span = plus.q - minus.q;
  precise float towards_minus = dot4(span, minus.p);
  precise float towards_plus = dot4(span, plus.p);
  return towards_minus < 0.0 || towards_plus < 0.0;
}

// build_tree's frames: the state a call starts from, its depth, the step it resumes at and,
// once its first subtree has returned, that subtree.
const uint AT_START = 0u, AFTER_FIRST = 1u, AFTER_SECOND = 2u;
State frame_start[STACK_DEPTH];
int frame_depth[STACK_DEPTH];
uint frame_step[STACK_DEPTH];
Tree frame_first[STACK_DEPTH];

// build_tree(start, direction, depth, eps, h0) of nuts_tree.ab into `built`. Returns CEILING_DONE,
// or why it stopped; `iterations` counts the lane's loop iterations across calls.
uint build_tree(State start, float direction, int depth, float eps, float h0,
                inout uint iterations, out Tree built) {
  int frames = 1;
  frame_start[0] = start;
  frame_depth[0] = depth;
  frame_step[0] = AT_START;
  Tree returned;  // the tree of the call that returned last
  for (;;) {
    if (frames == 0) {
      built = returned;
      return CEILING_DONE;
    }
    if (iterations == MAX_ITERATIONS) return CEILING_TOO_MANY_ITERATIONS;
    ++iterations;
    const int top = frames - 1;
    const uint step = frame_step[top];
    if (step == AT_START && frame_depth[top] == 0) {  // a leaf: one leapfrog step
      precise float signed_eps = direction * eps;
      const State next = leapfrog(frame_start[top], signed_eps);
      precise float excess = energy(next) - h0;
      returned = Tree(next, next, next.q, 1, excess > 1000.0);
      --frames;
      continue;
    }
    if (step == AFTER_FIRST && returned.stop) {  // the first subtree stopped: return it
      --frames;
      continue;
    }
    if (step == AFTER_SECOND) {
      const Tree first = frame_first[top];
      Tree tree = first;
      if (direction < 0.0)
        tree.minus = returned.minus;
      else
        tree.plus = returned.plus;
      precise float pick = draw_uniform() * float(first.size + returned.size);
      if (pick < float(returned.size)) tree.proposal = returned.proposal;
      tree.size = first.size + returned.size;
      tree.stop = returned.stop || u_turn(tree.minus, tree.plus);
      returned = tree;
      --frames;
      continue;
    }
    // Call a subtree one level down: from the start (first) or from the first's edge (second).
    if (frames == STACK_DEPTH) return CEILING_STACK_OVERFLOW;
    State child_start = frame_start[top];
    if (step == AFTER_FIRST) {
      frame_first[top] = returned;
      child_start = direction < 0.0 ? returned.minus : returned.plus;
    }
    frame_step[top] = step + 1u;
    frame_start[frames] = child_start;
    frame_depth[frames] = frame_depth[top] - 1;
    frame_step[frames] = AT_START;
    ++frames;
  }
  return CEILING_DONE;  // not reached
}

void main() {
  const uint lane = gl_GlobalInvocationID.x;
  if (!ceiling_lane_runs(lane)) return;
  lane_id = lane;
  vec4 q = uintBitsToFloat(uvec4(arg_q0.w[4u * lane], arg_q0.w[4u * lane + 1u],
                                 arg_q0.w[4u * lane + 2u], arg_q0.w[4u * lane + 3u]));
  const float eps = uintBitsToFloat(arg_eps.w[lane]);
  const int transitions = arg_iterations.w[lane];
  int first = 0;
  if (ceiling_resuming(lane)) {
    q = uintBitsToFloat(uvec4(saved.w[saved_at(lane, 0u)], saved.w[saved_at(lane, 1u)],
                              saved.w[saved_at(lane, 2u)], saved.w[saved_at(lane, 3u)]));
    draws = saved.w[saved_at(lane, 4u)];
    first = int(saved.w[saved_at(lane, 5u)]);
  }
  uint status = CEILING_DONE;
  uint iterations = 0u;
  int i = first;
  for (; i < transitions && status == CEILING_DONE; ++i) {
    if (iterations > 0u && iterations + TRANSITION_ITERATIONS > MAX_ITERATIONS) {
      status = CEILING_SUSPENDED;
      break;
    }
    State start;
    start.q = q;
    start.p.x = draw_normal();  // four draws, in index order
    start.p.y = draw_normal();
    start.p.z = draw_normal();
    start.p.w = draw_normal();
    const float h0 = energy(start);
    Tree tree = Tree(start, start, q, 1, false);
    for (int depth = 0; depth < MAX_DEPTH; ++depth) {
      float direction = 1.0;
      if (draw_uniform() < 0.5) direction = -1.0;
      const State edge = direction < 0.0 ? tree.minus : tree.plus;
      Tree sub;
      status = build_tree(edge, direction, depth, eps, h0, iterations, sub);
      if (status != CEILING_DONE || sub.stop) break;
      precise float pick = draw_uniform() * float(tree.size);
      if (pick < float(sub.size)) tree.proposal = sub.proposal;
      if (direction < 0.0)
        tree.minus = sub.minus;
      else
        tree.plus = sub.plus;
      tree.size += sub.size;
      if (u_turn(tree.minus, tree.plus)) break;
    }
    q = tree.proposal;
  }
  if (status == CEILING_SUSPENDED) {
    const uvec4 bits = floatBitsToUint(q);
    saved.w[saved_at(lane, 0u)] = bits.x;
    saved.w[saved_at(lane, 1u)] = bits.y;
    saved.w[saved_at(lane, 2u)] = bits.z;
    saved.w[saved_at(lane, 3u)] = bits.w;
    saved.w[saved_at(lane, 4u)] = draws;
    saved.w[saved_at(lane, 5u)] = uint(i);
    ceiling_suspend(lane);
    return;
  }
  results.w[4u * lane] = floatBitsToUint(q.x);
  results.w[4u * lane + 1u] = floatBitsToUint(q.y);
  results.w[4u * lane + 2u] = floatBitsToUint(q.z);
  results.w[4u * lane + 3u] = floatBitsToUint(q.w);
  lane_status.w[lane] = status;
}
