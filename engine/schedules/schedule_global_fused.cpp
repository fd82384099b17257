// GlobalFusedSchedule (schedule_global.h): a batch that fits one subgroup runs the whole loop,
// the pick included, in one dispatch per part (AB_GLOBAL_FUSED, ab_entry_registers.glsl), its
// state in registers; it may stop short of its budget near the device's loop limit.
#include "engine/run/run_impl.h"
#include "engine/schedules/schedule_global.h"

namespace ab {

uint64_t GlobalFusedSchedule::steps_per_submission() const {
  return run_.vulkan.local_steps_per_dispatch;
}

void GlobalFusedSchedule::record_steps(VkCommandBuffer cmd, uint64_t) {
  for (size_t part : run_.part_order())
    dispatch(cmd, steps_[part], 1);
}

uint64_t GlobalFusedSchedule::dispatches(uint64_t) const {
  return run_.part_order().size();
}

}  // namespace ab
