//! The entry point of the local schedule per workgroup (AB_LOCAL_WORKGROUP,
//! codegen/glsl_codegen.h). LocalSchedule supplies it (engine/schedules/schedule_entries.cpp);
//! the generated Registers-residency code defines run_block, ab_load and ab_store before it.

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
