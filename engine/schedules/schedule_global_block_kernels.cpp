// GlobalBlockKernelsSchedule (schedule_global.h): pick in step, with the step kernel specialized
// to each block (AB_ONLY_BLOCK, ab_entry_global_compacted.glsl), so a dispatch holds only its
// block's code: llvmpipe runs every branch of a kernel, masked.
#include "engine/run/run_impl.h"
#include "engine/schedules/schedule_global.h"

namespace ab {

void GlobalBlockKernelsSchedule::record_resets(VkCommandBuffer cmd) {
  GlobalSchedule::record_resets(cmd);
  run_.ctx->api.vkCmdFillBuffer(cmd, run_.control.handle(), AB_CTRL_ARGS_SET * 4, 4, 0);
}

// As pick in step, each step dispatching every block's kernel: the chosen block's arguments (in
// the set of this step's parity) are its lanes' workgroups, every other block's are zero. No
// barrier between them: the one that runs writes only the other set.
void GlobalBlockKernelsSchedule::record_steps(VkCommandBuffer cmd, uint64_t n) {
  VulkanRun::Impl& r = run_;
  auto& api = r.ctx->api;
  dispatch(cmd, pick_, 1);
  for (uint64_t s = 0; s < n; ++s) {
    // A product block's arguments are zero unless the step chose it.
    dispatch_products(cmd, [&](uint32_t block) {
      return VkDeviceSize{r.control.block_args_word(static_cast<uint32_t>(s % 2), block)} * 4;
    });
    for (uint32_t b = 0; b < r.nblocks; ++b) {
      api.vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, steps_[b]);
      api.vkCmdDispatchIndirect(cmd, r.control.handle(),
                                r.control.block_args_word(static_cast<uint32_t>(s % 2), b) * 4);
    }
    compute_barrier(*r.ctx, cmd);
  }
}

uint64_t GlobalBlockKernelsSchedule::dispatches(uint64_t n) const {
  return 1 + n * run_.nblocks;  // most of them empty
}

void GlobalBlockKernelsSchedule::add_step_jobs(PipelineJobs& jobs) {
  VulkanProgram::Impl* prog = run_.prog;
  const Kernel k = step_kernel();
  const Banks banks = run_.banks;
  std::lock_guard lock(prog->mutex);
  for (uint32_t b = 0; b < run_.nblocks; ++b)
    if (!prog->pipelines.count({200 + static_cast<int>(k), b, 0u, banks}))
      jobs.push_back([prog, k, b, banks] { return prog->block_pipeline(k, b, banks); });
}

Expected<std::vector<VkPipeline>> GlobalBlockKernelsSchedule::load_steps() {
  std::vector<VkPipeline> steps;
  for (uint32_t b = 0; b < run_.nblocks; ++b) {
    auto s = run_.prog->block_pipeline(step_kernel(), b, run_.banks);
    if (!s) return Error{s.error()};
    steps.push_back(*s);
  }
  return steps;
}

}  // namespace ab
