// GlobalLaneListsSchedule (schedule_global.h): the step kernels keep a lane list per block (a lane
// that ran is appended to the list of the block it goes to next), so a step is the pick and the
// chosen block's list, with no compaction pass.
#include "engine/run/run_impl.h"
#include "engine/schedules/schedule_global.h"

namespace ab {

void GlobalLaneListsSchedule::record_steps(VkCommandBuffer cmd, uint64_t n) {
  for (uint64_t s = 0; s < n; ++s) {
    dispatch(cmd, pick_, 1);
    dispatch_products(cmd);
    dispatch_listed(cmd);
  }
}

uint64_t GlobalLaneListsSchedule::dispatches(uint64_t n) const {
  return n * (1 + run_.step_parts());
}

}  // namespace ab
