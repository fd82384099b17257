//! The entry point of the fused global schedule (AB_GLOBAL_FUSED, codegen/glsl_codegen.h):
//! many global steps, pick included, in one dispatch. GlobalFusedSchedule supplies it
//! (engine/schedules/schedule_entries.cpp); the generated Registers-residency code defines
//! run_block, ab_load and ab_store before it.

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
