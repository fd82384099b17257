//! The entry points of the Registers-residency kernels (codegen/glsl_codegen.h): the local
//! schedule per subgroup and per workgroup and the fused global schedule, each keeping a lane's
//! state in registers for the whole dispatch (ab_load/ab_store). Embedded at build time
//! (codegen/shader_texts.h); the generated code defines run_block, ab_load and ab_store.

#ifdef AB_LOCAL_SUBGROUP
// The local schedule per subgroup: its own min-PC loop, at most P.budget steps per dispatch.
void main() {
  const uint lane = gl_GlobalInvocationID.x;
  if (lane >= P.lanes) return;
  AB_LOOPS_BEGIN
  ab_load(lane);
  uint taken = 0u, ran = 0u;  // the subgroup's steps; those in which this lane ran the block
  for (uint it = 0u; it < P.budget; ++it) {
    // The device's loop limit is near (a uniform test: the row's count).
    if (!AB_LOOP_ROOM_LEFT(it * AB_ITERATION_LOOPS)) break;
    const uint pc = AB_PC(lane);
    const uint b = subgroupMin(AB_IN_PART(pc) ? pc : AB_NO_BLOCK);
    if (b == AB_NO_BLOCK) break;
    if (pc == b) {
      run_block(lane, b);
      ++ran;
    }
    ++taken;
  }
  ab_store(lane);
  const uint busy = subgroupAdd(ran);
  if (subgroupElect()) {
    atomicAdd(ctrl.w[AB_CTRL_GROUP_STEPS], taken);
    atomicAdd(ctrl.w[AB_CTRL_LANE_ITERATIONS], busy);
    atomicAdd(ctrl.w[AB_CTRL_LANE_SLOTS], taken * gl_SubgroupSize);
  }
  if (AB_PC(lane) < P.exit_pc) ctrl.w[AB_CTRL_NOT_FINISHED] = 1u;
}
#endif

#ifdef AB_GLOBAL_FUSED
// The global schedule for a batch that fits one subgroup: P.budget steps of Algorithm 2 in one
// dispatch, the state in registers. The pick (ab_pick's choice: the smallest waiting PC, or the
// block with most lanes, ties to the smallest) comes from subgroup operations over the lanes'
// PCs instead of the per-block counts, so the steps and the trace are the dispatch loop's. At the
// end the counts are rebuilt for the host and for a later dispatch of the other variants.
void main() {
  if (gl_WorkGroupID.x != 0u || gl_SubgroupID != 0u) return;
  if (gl_SubgroupSize < P.lanes) {
    if (subgroupElect()) ctrl.w[AB_CTRL_UNFIT] = 1u;
    return;
  }
  const uint lane = gl_SubgroupInvocationID;
  const bool in_batch = lane < P.lanes;
  AB_LOOPS_BEGIN
  if (in_batch) ab_load(lane);
  // The steps of this submission so far: a split program's parts run one after another, each
  // while the pick stays in its blocks, and share the budget.
  uint s = ctrl.w[AB_CTRL_BUDGET_USED];
  for (uint here = 0u; s < P.budget; ++s, ++here) {
    // The device's loop limit is near: each step counts this loop's iteration and the pick's
    // loop (its iterations and final test).
    if (!AB_LOOP_ROOM_LEFT(here * (AB_ITERATION_LOOPS + gl_SubgroupSize + 1u))) break;
    const uint pc = in_batch ? AB_PC(lane) : P.exit_pc;
    const bool waiting = pc < P.exit_pc;
    const uint live = subgroupAdd(waiting ? 1u : 0u);
    uint best = subgroupMin(waiting ? pc : AB_NO_BLOCK);
    uint best_count = subgroupAdd(pc == best ? 1u : 0u);
    if (P.heuristic == AB_HEURISTIC_MOST_LANES) {  // visit the waiting PCs in increasing order
      for (uint next = best; next != AB_NO_BLOCK;) {
        const uint c = subgroupAdd(pc == next ? 1u : 0u);
        if (c > best_count) {
          best = next;
          best_count = c;
        }
        next = subgroupMin(waiting && pc > next ? pc : AB_NO_BLOCK);
      }
    }
    if (best == AB_NO_BLOCK) {
      if (subgroupElect()) ctrl.w[AB_CTRL_DONE] = 1u;
      break;
    }
    if (!AB_IN_PART(best)) break;  // the kernel of the part holding it takes this step
    if (subgroupElect()) ab_record_step(best, best_count, live);
    if (pc == best) run_block(lane, best);
  }
  if (subgroupElect()) ctrl.w[AB_CTRL_BUDGET_USED] = s;
  if (in_batch) ab_store(lane);
  if (subgroupElect())
    for (uint b = 0u; b < P.exit_pc; ++b) ctrl.w[AB_CTRL_COUNTS + b] = 0u;
  subgroupMemoryBarrierBuffer();
  subgroupBarrier();
  if (in_batch && AB_PC(lane) < P.exit_pc) atomicAdd(ctrl.w[AB_CTRL_COUNTS + AB_PC(lane)], 1u);
}
#endif

#ifdef AB_LOCAL_WORKGROUP
// The local schedule per workgroup: min PC through shared memory, at most P.budget steps.
shared uint s_min;
shared uint s_room;  // 0 once a lane of the workgroup nears the device's loop limit
void main() {
  const uint lane = gl_GlobalInvocationID.x;
  const bool in_batch = lane < P.lanes;
  if (in_batch) ab_load(lane);
  uint taken = 0u, ran = 0u;  // the workgroup's steps; those in which this lane ran the block
  for (uint it = 0u; it < P.budget; ++it) {
    if (gl_LocalInvocationIndex == 0u) {
      s_min = AB_NO_BLOCK;
      s_room = 1u;
    }
    barrier();
    const uint pc = in_batch ? AB_PC(lane) : P.exit_pc;
    if (AB_IN_PART(pc)) atomicMin(s_min, pc);
    if (!AB_LOOP_ROOM_LEFT(it * AB_ITERATION_LOOPS)) s_room = 0u;  // the device's loop limit
    barrier();
    const uint b = s_min;
    const bool room = s_room != 0u;
    barrier();
    if (b == AB_NO_BLOCK || !room) break;
    if (pc == b) {
      run_block(lane, b);
      ++ran;
    }
    ++taken;
  }
  if (in_batch) ab_store(lane);
  if (ran != 0u) atomicAdd(ctrl.w[AB_CTRL_LANE_ITERATIONS], ran);
  if (gl_LocalInvocationIndex == 0u) {
    atomicAdd(ctrl.w[AB_CTRL_GROUP_STEPS], taken);
    atomicAdd(ctrl.w[AB_CTRL_LANE_SLOTS], taken * gl_WorkGroupSize.x);
  }
  if (in_batch && AB_PC(lane) < P.exit_pc) ctrl.w[AB_CTRL_NOT_FINISHED] = 1u;
}
#endif
