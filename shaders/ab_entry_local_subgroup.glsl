//! The entry point of the local schedule per subgroup (AB_LOCAL_SUBGROUP,
//! codegen/glsl_codegen.h). LocalSchedule supplies it (engine/schedules/schedule_entries.cpp);
//! the generated Registers-residency code defines run_block, ab_load and ab_store before it.

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
