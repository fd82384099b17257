// GlobalMaskedSchedule (schedule_global.h): every part's step kernel runs over all lanes each
// step, and each lane tests whether its PC is the chosen block.
#include "engine/run/run_impl.h"
#include "engine/schedules/entry_texts.h"
#include "engine/schedules/schedule_global.h"

namespace ab {

KernelEntry GlobalMaskedSchedule::entry() {
  return {Kernel::GlobalMasked, kAbEntryGlobalMaskedText};
}

// Each step: the pick, then every part's step kernel; only the part holding the chosen block runs
// it (the others return at once).
void GlobalMaskedSchedule::record_steps(VkCommandBuffer cmd, uint64_t n) {
  for (uint64_t s = 0; s < n; ++s) {
    dispatch(cmd, pick_, 1);
    dispatch_products(cmd);
    for (VkPipeline step : steps_)
      dispatch(cmd, step, groups_for(run_.lanes));
  }
}

uint64_t GlobalMaskedSchedule::dispatches(uint64_t n) const {
  return n * (1 + run_.step_parts());
}

}  // namespace ab
