// GlobalPickInStepSchedule (schedule_global.h): lane lists in a program of one part, where the
// step kernel's last subgroup picks the next block itself (ab_entry_global_compacted.glsl), so a
// step is one dispatch after the submission's first pick.
#include "engine/run/run_impl.h"
#include "engine/schedules/schedule_global.h"

namespace ab {

// One pick, then each step kernel runs the chosen block's list and picks the next block.
void GlobalPickInStepSchedule::record_steps(VkCommandBuffer cmd, uint64_t n) {
  dispatch(cmd, pick_, 1);
  for (uint64_t s = 0; s < n; ++s) {
    dispatch_products(cmd);
    dispatch_listed(cmd);
  }
}

uint64_t GlobalPickInStepSchedule::dispatches(uint64_t n) const {
  return 1 + n;
}

}  // namespace ab
