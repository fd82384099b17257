//! The entry points of the Memory-residency kernels (codegen/glsl_codegen.h): one step of the
//! global schedule, masked or over the compacted lane list. Embedded at build time
//! (codegen/shader_texts.h); the generated code defines run_block and AB_STEP before it.

#ifdef AB_GLOBAL_MASKED
// One step of the global schedule: the lanes at the chosen block run it, then count themselves
// in at their next block (global_pick.comp reads the counts).
void main() {
  const uint b = ctrl.w[AB_CTRL_BLOCK];
  if (!AB_IN_PART(b)) return;  // a block of another part: that part's kernel runs it
  const uint lane = gl_GlobalInvocationID.x;
  if (lane >= P.lanes) return;
  if (state.w[AB_SLOT_PC * P.lanes + lane] != b) return;
  AB_STEP(lane, b);
  const uint pc = state.w[AB_SLOT_PC * P.lanes + lane];
#ifdef AB_SUBGROUP_BALLOT
  // One atomic per distinct next block in the subgroup, not one per lane: the lanes of a step
  // usually go to one or two blocks, and atomics on the same word serialize.
  for (;;) {
    const uint first = subgroupBroadcastFirst(pc);
    if (pc == first) {
      const uint n = subgroupBallotBitCount(subgroupBallot(true));
      if (subgroupElect() && first < P.exit_pc) atomicAdd(ctrl.w[AB_CTRL_COUNTS + first], n);
      break;
    }
  }
#else
  if (pc < P.exit_pc) atomicAdd(ctrl.w[AB_CTRL_COUNTS + pc], 1u);
#endif
}
#endif

#ifdef AB_GLOBAL_COMPACTED
// One step of the global schedule over the chosen block's lanes: listed by the compaction pass
// (global_compact.comp), or, with per-block lane lists (AB_CTRL_LISTS), its list, which the
// step kernels keep: a lane that ran is appended to the list of the block it goes to next (its
// count is the list's length). With lists and a P.budget, the last subgroup to finish also picks
// the next step's block (ab_pick), so that a step is one dispatch; it picks for the first
// P.budget - 1 steps of the submission only (the host's pick dispatch made the first pick), so a
// submission of n steps picks n times, as with a pick dispatch per step.
layout(constant_id = AB_SPEC_ONLY_BLOCK) const uint AB_ONLY_BLOCK = AB_NO_BLOCK;
void main() {
  // Specialized to one block, the kernel holds only that block's code: llvmpipe runs every
  // branch of a kernel, masked, so a kernel holding every block costs all of them each step.
  const uint b = AB_ONLY_BLOCK != AB_NO_BLOCK ? AB_ONLY_BLOCK : ctrl.w[AB_CTRL_BLOCK];
  if (!AB_IN_PART(b)) return;  // a block of another part: that part's kernel runs it
  const bool lists = ctrl.w[AB_CTRL_LISTS] != 0u;
  const uint i = gl_GlobalInvocationID.x;
  uint lane = AB_NO_BLOCK, pc = P.exit_pc;
  if (lists ? i < ctrl.w[AB_CTRL_ACTIVE] : i < ctrl.w[AB_CTRL_LIST_LEN]) {
    lane = list.w[lists ? ctrl.w[AB_CTRL_LIST_READ] * P.lanes + i : i];
    if (state.w[AB_SLOT_PC * P.lanes + lane] == b) {
      AB_STEP(lane, b);
      pc = state.w[AB_SLOT_PC * P.lanes + lane];
    }
  }
#ifdef AB_SUBGROUP_BALLOT
  // One atomic per distinct next block in the subgroup, not one per lane: the lanes of a step
  // usually go to one or two blocks, and atomics on the same word serialize. Each lane takes the
  // slot after those of the subgroup's lower lanes going to the same block.
  for (;;) {
    const uint first = subgroupBroadcastFirst(pc);
    if (pc == first) {
      const uvec4 same = subgroupBallot(true);
      uint at = 0u;
      if (subgroupElect() && first < P.exit_pc)
        at = atomicAdd(ctrl.w[AB_CTRL_COUNTS + first], subgroupBallotBitCount(same));
      at = subgroupBroadcastFirst(at) + subgroupBallotExclusiveBitCount(same);
      if (lists && first < P.exit_pc) list.w[ab_list_region(first) * P.lanes + at] = lane;
      break;
    }
  }
  if (!lists || P.budget == 0u) return;
  // The last subgroup of the dispatch to get here picks; the others' appends are visible to it.
  memoryBarrierBuffer();
  subgroupBarrier();
  if (!subgroupElect()) return;
  const uint subgroups = gl_NumWorkGroups.x * gl_NumSubgroups;
#else
  if (pc < P.exit_pc) {
    const uint at = atomicAdd(ctrl.w[AB_CTRL_COUNTS + pc], 1u);
    if (lists) list.w[ab_list_region(pc) * P.lanes + at] = lane;
  }
  if (!lists || P.budget == 0u) return;
  memoryBarrierBuffer();
  const uint subgroups = gl_NumWorkGroups.x * gl_WorkGroupSize.x;  // invocations, here
#endif
  if (atomicAdd(ctrl.w[AB_CTRL_STEP_DONE], 1u) != subgroups - 1u) return;
  ctrl.w[AB_CTRL_STEP_DONE] = 0u;
  const uint taken = ctrl.w[AB_CTRL_BUDGET_USED] + 1u;
  ctrl.w[AB_CTRL_BUDGET_USED] = taken;
  if (taken < P.budget) ab_pick();
}
#endif
