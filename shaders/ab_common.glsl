// Declarations every hand-written kernel shares with the generated code: the buffers it binds and
// the push constants (at the offsets of ab_layout.h, which PushConstants in engine/device/kernels.h
// is checked against).
#include "ab_layout.h"

layout(local_size_x = AB_GROUP_SIZE) in;

layout(set = 0, binding = AB_BIND_CTRL, std430) buffer Ctrl { uint w[]; } ctrl;
layout(set = 0, binding = AB_BIND_STATE, std430) buffer State { uint w[]; } state;
layout(set = 0, binding = AB_BIND_LIST, std430) buffer List { uint w[]; } list;

layout(push_constant) uniform Params {
  layout(offset = AB_PUSH_LANES) uint lanes;
  // The number of blocks; a lane whose PC is exit_pc has finished.
  layout(offset = AB_PUSH_EXIT_PC) uint exit_pc;
  layout(offset = AB_PUSH_DEPTH) uint depth;          // stack capacity per lane
  layout(offset = AB_PUSH_MAX_STEPS) uint max_steps;  // per-lane block budget (AB_STEP_ALLOWED)
  layout(offset = AB_PUSH_HEURISTIC) uint heuristic;  // AB_HEURISTIC_*
  // Trace entries the control buffer holds; 0 = no trace.
  layout(offset = AB_PUSH_TRACE_CAP) uint trace_cap;
  layout(offset = AB_PUSH_SEED_LO) uint seed_lo;
  layout(offset = AB_PUSH_SEED_HI) uint seed_hi;
  layout(offset = AB_PUSH_BUDGET) uint budget;  // local schedule: group steps per dispatch
  // Always 0. Generated code XORs float constants with it: a driver that cannot see a constant
  // cannot apply fast-math algebra to it (lavapipe folds x * 0.0 to 0 and -0.0 + 0.0 to -0.0
  // even under SignedZeroInfNanPreserve and NoContraction).
  layout(offset = AB_PUSH_ZERO) uint zero;
  // Records each lane's stream holds between two drains by the host.
  layout(offset = AB_PUSH_STREAM_CAP) uint stream_cap;
  // The batch's first lane in a sharded run (RunOptions::first_lane): keys the random streams.
  layout(offset = AB_PUSH_FIRST_LANE) uint first_lane;
#ifdef AB_PRODUCT_KERNEL
  layout(offset = AB_PUSH_PRODUCT) uint product[AB_PRODUCT_WORDS];  // AB_PRODUCT_*
#endif
} P;

void ab_add64(uint lo_word, uint value) {
  uint carry;
  ctrl.w[lo_word] = uaddCarry(ctrl.w[lo_word], value, carry);
  ctrl.w[lo_word + 1u] += carry;
}

// Records one global step that runs `best` for `ran` of the `live` lanes: the step count, the
// utilization sum, the block's executions and the trace entry.
void ab_record_step(uint best, uint ran, uint live) {
  ab_add64(AB_CTRL_STEPS_LO, 1u);
  ab_add64(AB_CTRL_UTIL_LO, uint(float(ran) / float(live) * 16777216.0));
  ctrl.w[AB_CTRL_COUNTS + P.exit_pc + best] += 1u;
  const uint t = ctrl.w[AB_CTRL_TRACE_LEN];
  if (t < P.trace_cap) {
    const uint at = AB_CTRL_COUNTS + 2u * P.exit_pc + 2u * t;
    ctrl.w[at] = best;
    ctrl.w[at + 1u] = ran;
    ctrl.w[AB_CTRL_TRACE_LEN] = t + 1u;
  }
}

// Per-block lane lists (global/compacted): list region r holds P.lanes words at r * P.lanes; a
// block's lanes sit at the front of its region, as many as its count. There is one region more
// than blocks: the chosen block's lanes are read from its region while the lanes that go back to
// it are appended to the spare one.
uint ab_list_map_word(uint b) { return AB_CTRL_COUNTS + 2u * P.exit_pc + 2u * P.trace_cap + b; }
uint ab_list_region(uint b) { return ctrl.w[ab_list_map_word(b)] ^ b; }
// Where the indirect-dispatch arguments of the kernel specialized to block b are, in set s.
uint ab_block_args_word(uint s, uint b) { return ab_list_map_word(P.exit_pc) + 3u * (s * P.exit_pc + b); }

// One pick of the global schedule (one invocation runs it): the block the heuristic chooses among
// the blocks with waiting lanes (their counts), recorded in the control words with the step's
// statistics and trace entry; AB_NO_BLOCK, and AB_CTRL_DONE set, once no lane waits anywhere.
// The counts are read with atomics: a step kernel's last subgroup picks right after the other
// subgroups' atomic additions.
uint ab_pick() {
  ctrl.w[AB_CTRL_LIST_LEN] = 0u;
  const bool lists = ctrl.w[AB_CTRL_LISTS] != 0u;
  if (lists) {  // the previous block's arguments go (its dispatches have read them)
    const uint previous = ctrl.w[AB_CTRL_BLOCK];
    if (previous < P.exit_pc) {
      ctrl.w[ab_block_args_word(0u, previous)] = 0u;
      ctrl.w[ab_block_args_word(1u, previous)] = 0u;
    }
  }
  uint best = AB_NO_BLOCK, best_count = 0u, live = 0u;
  if (ctrl.w[AB_CTRL_DONE] == 0u) {
    for (uint b = 0u; b < P.exit_pc; ++b) {
      const uint c = atomicOr(ctrl.w[AB_CTRL_COUNTS + b], 0u);
      live += c;
      if (c == 0u) continue;
      if (best == AB_NO_BLOCK || (P.heuristic == AB_HEURISTIC_MOST_LANES && c > best_count)) {
        best = b;
        best_count = c;
      }
    }
  }
  ctrl.w[AB_CTRL_BLOCK] = best;
  ctrl.w[AB_CTRL_ACTIVE] = best_count;
  ctrl.w[AB_CTRL_INDIRECT_X] = (best_count + AB_GROUP_SIZE - 1u) / AB_GROUP_SIZE;
  ctrl.w[AB_CTRL_INDIRECT_Y] = 1u;
  ctrl.w[AB_CTRL_INDIRECT_Z] = 1u;
  if (best == AB_NO_BLOCK) {
    ctrl.w[AB_CTRL_DONE] = 1u;
    return best;
  }
  ctrl.w[AB_CTRL_COUNTS + best] = 0u;
  if (lists) {  // the step reads best's list; its new lanes go elsewhere
    // The step's dispatches read one set of arguments while its last subgroup writes the other.
    const uint set = ctrl.w[AB_CTRL_ARGS_SET];
    ctrl.w[AB_CTRL_ARGS_SET] = set ^ 1u;
    const uint args = ab_block_args_word(set, best);
    ctrl.w[args] = ctrl.w[AB_CTRL_INDIRECT_X];
    ctrl.w[args + 1u] = 1u;
    ctrl.w[args + 2u] = 1u;
    const uint read = ab_list_region(best);
    const uint spare = ctrl.w[AB_CTRL_LIST_SPARE] ^ P.exit_pc;
    ctrl.w[ab_list_map_word(best)] = spare ^ best;
    ctrl.w[AB_CTRL_LIST_SPARE] = read ^ P.exit_pc;
    ctrl.w[AB_CTRL_LIST_READ] = read;
  }
  ab_record_step(best, best_count, live);
  return best;
}

// Loop counting for a device that silently ends every loop of a shader invocation after a fixed
// number of iterations, counted once per SIMD row and shared by all its loops (lavapipe; the
// generator defines AB_LOOP_LIMITED for it, and before the entry points the numbers
// AB_ITERATION_LOOPS, AB_LOOP_ROOM_ROW and AB_LOOP_ROOM_LANE: glsl_codegen.cpp
// loop_count_defines). Each block adds its loops' bound on entry (AB_COUNT_LOOPS), each iteration
// of a dispatch loop what it passes over with no lane active (AB_ITERATION_LOOPS; the lane sweep
// counts per pass, below), and the dispatch ends once AB_LOOP_ROOM_LEFT fails, so no
// loop is cut short. The subgroup and fused kernels count per row (a subgroup here), once
// per row through an elected lane, in shared memory all the row's lanes read; the workgroup
// kernel, without subgroup operations, counts per lane and allows a lane a row's share.
// The lane sweep counts without subgroup operations per pass: its component loops keep every
// lane of the row in the loop until none is left in it (AB_LOOP_CONTINUE), so each lane still in
// the dispatch loop has passed every pass its row made, and counts them in a private variable
// (AB_COUNT_PASS: the pass's static bound, its blocks' loops included; AB_COUNT_LOOPS is empty).
#if defined(AB_LOOP_LIMITED) && defined(AB_LOCAL_LANE)
uint ab_row_loops = 0u;
#define AB_LOOPS_BEGIN
#define AB_COUNT_LOOPS(n)
#define AB_COUNT_PASS(n) ab_row_loops += (n);
#define AB_LOOP_ROOM_LEFT(n) ((n) + ab_row_loops < AB_LOOP_ROOM_ROW)
#define AB_LOOP_CONTINUE(go) subgroupAny(go)
#elif defined(AB_LOOP_LIMITED) && \
    (defined(AB_LOCAL_SUBGROUP) || defined(AB_GLOBAL_FUSED))
shared uint ab_row_loops[AB_GROUP_SIZE];
#define AB_LOOPS_BEGIN if (subgroupElect()) ab_row_loops[gl_SubgroupID] = 0u;
#define AB_COUNT_LOOPS(n) if (subgroupElect()) ab_row_loops[gl_SubgroupID] += (n);
#define AB_LOOP_ROOM_LEFT(n) ((n) + ab_row_loops[gl_SubgroupID] < AB_LOOP_ROOM_ROW)
#elif defined(AB_LOOP_LIMITED) && defined(AB_LOCAL_WORKGROUP)
uint ab_loops = 0u;
#define AB_LOOPS_BEGIN
#define AB_COUNT_LOOPS(n) ab_loops += (n);
#define AB_LOOP_ROOM_LEFT(n) ((n) + ab_loops < AB_LOOP_ROOM_LANE)
#else
#define AB_LOOPS_BEGIN
#define AB_COUNT_LOOPS(n)
#define AB_LOOP_ROOM_LEFT(n) true
#endif
#if !defined(AB_LOOP_LIMITED) || !defined(AB_LOCAL_LANE)
#define AB_COUNT_PASS(n)
#define AB_LOOP_CONTINUE(go) (go)
#endif
#ifndef AB_LOOP_LIMITED
#define AB_ITERATION_LOOPS 0u
#endif
