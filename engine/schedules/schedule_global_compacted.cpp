// GlobalCompactedSchedule (schedule_global.h): each step a compaction pass
// (shaders/global_compact.comp) lists the chosen block's lanes, and the step kernels run over the
// list, dispatched indirectly.
#include "engine/run/run_impl.h"
#include "engine/schedules/schedule_global.h"

namespace ab {

void GlobalCompactedSchedule::record_steps(VkCommandBuffer cmd, uint64_t n) {
  for (uint64_t s = 0; s < n; ++s) {
    dispatch(cmd, pick_, 1);
    dispatch(cmd, compact_, groups_for(run_.lanes));
    dispatch_products(cmd);
    dispatch_listed(cmd);
  }
}

uint64_t GlobalCompactedSchedule::dispatches(uint64_t n) const {
  return n * (2 + run_.step_parts());
}

}  // namespace ab
