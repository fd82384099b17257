//! The entry point of the global schedule's masked step kernel (AB_GLOBAL_MASKED,
//! codegen/glsl_codegen.h): one step, every lane testing whether its PC is the chosen block.
//! GlobalMaskedSchedule supplies it (engine/schedules/schedule_entries.cpp); the generated
//! Memory-residency code defines run_block and AB_STEP before it.

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
