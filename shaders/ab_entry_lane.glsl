//! The entry point of the local schedule per lane (codegen/glsl_codegen.h: AB_LOCAL_LANE): each
//! lane runs its own PC loop, visiting the blocks in sweep order (passes/analysis/sweep_order.h).
//! glsl_codegen.cpp fills in the line `//@members` (the component membership table and
//! ab_inside), the line `//@blocks` (the sweep: the blocks and the loops of components) and the
//! name of the register holding the lane's steps (AB_RS_STEPS). Embedded at build time
//! (codegen/shader_texts.h).
#ifdef AB_LOCAL_LANE
//@members
// Counts a loop iteration of the lane (taken, which the budget bounds) and, for a device's loop
// limit, the loops it passes over. The subgroup's steps are its busiest lane's iterations, taken
// once at the end: counting them in every iteration (an elected lane's increment) costs a loop
// over the SIMD lanes on lavapipe, ~9% of fib's time.
#define AB_ITERATION ++taken;
// The lane may run another block (the VM's step budget). A lane out of budget leaves the loops
// of components and faults at the top of the outer loop, at the block it waits at.
#define AB_BUDGET_LEFT AB_STEP_ALLOWED(AB_RS_STEPS, P.max_steps)
// The dispatch may take another iteration: its budget, and the device's loop limit
// (AB_LOOP_ROOM_LEFT, ab_common.glsl: the row's passes, counted by every lane in it).
#define AB_ROOM_LEFT (taken < P.budget && AB_LOOP_ROOM_LEFT(0u))
void main() {
  const uint lane = gl_GlobalInvocationID.x;
  if (lane >= P.lanes) return;
  // A lane waiting at a block of another part has nothing to do in this kernel.
  uint pc = state.w[AB_SLOT_PC * P.lanes + lane];
  if (pc >= P.exit_pc || AB_IN_PART(pc)) {
  AB_LOOPS_BEGIN
  ab_load(lane);
  uint taken = 0u;
  while (AB_IN_PART(AB_PC(lane)) && AB_ROOM_LEFT) {
    AB_COUNT_PASS(AB_OUTER_PASS_LOOPS)
    AB_ITERATION
    if (!AB_BUDGET_LEFT)
      ab_raise(lane, AB_FAULT_STEP_BUDGET, AB_PC(lane), AB_NO_BLOCK, AB_RS_STEPS);
    //@blocks
  }
  ab_store(lane);
  const uint steps = subgroupMax(taken), busy = subgroupAdd(taken);
  const uint width = subgroupAdd(1u);
  if (subgroupElect()) {
    atomicAdd(ctrl.w[AB_CTRL_GROUP_STEPS], steps);
    atomicAdd(ctrl.w[AB_CTRL_LANE_ITERATIONS], busy);
    atomicAdd(ctrl.w[AB_CTRL_LANE_SLOTS], steps * width);
  }
  pc = AB_PC(lane);
  }
  if (pc < P.exit_pc) ctrl.w[AB_CTRL_NOT_FINISHED] = 1u;
}
#endif
