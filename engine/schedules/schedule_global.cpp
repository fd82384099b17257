// GlobalSchedule (schedules.h): one program counter for the whole batch. Each scheduler step the
// pick kernel (shaders/global_pick.comp) chooses a block by the heuristic and writes the step
// kernels' indirect arguments; the chosen block then runs for its lanes. The pick, the counts
// and the trace live in the control buffer, so the trace equals the CPU VM's step for step.
// The variants (schedule_global.h, a file each) differ only in how a step finds its lanes and
// how many dispatches it takes; what they share is here.
#include <fmt/format.h>

#include <algorithm>

#include "engine/run/run_impl.h"
#include "engine/schedules/entry_texts.h"
#include "engine/schedules/schedule_global.h"

namespace ab {

KernelEntry GlobalSchedule::entry() {
  return {Kernel::GlobalCompacted, kAbEntryGlobalCompactedText};
}

std::unique_ptr<GlobalSchedule> GlobalSchedule::choose(VulkanRun::Impl& run) {
  const VulkanOptions& vulkan = run.vulkan;
  const DeviceInfo& device = run.ctx->info;
  // The fused kernel keeps the products inline: not where they cannot be.
  const bool fusable = run.prog->products_apart(Kernel::GlobalFused, run.banks) ||
                       run.prog->unfit_inline_products.empty();
  if (vulkan.fuse_small_batches && device.subgroup_arithmetic &&
      run.lanes <= device.subgroup_size && fusable)
    return std::make_unique<GlobalFusedSchedule>(run);
  if (vulkan.global_mode == GlobalMode::Masked) return std::make_unique<GlobalMaskedSchedule>(run);
  if (run.nblocks > vulkan.global_lane_list_limit)
    return std::make_unique<GlobalCompactedSchedule>(run);
  // Lists that would crowd the device out fall back to the compaction pass.
  uint64_t heap = 0;
  for (uint32_t h = 0; h < run.ctx->memory.memoryHeapCount; ++h)
    if (run.ctx->memory.memoryHeaps[h].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT)
      heap = std::max<uint64_t>(heap, run.ctx->memory.memoryHeaps[h].size);
  const uint64_t bytes = (run.nblocks + 1ull) * run.lanes * 4;
  if (bytes > run.ctx->properties.limits.maxStorageBufferRange || (heap != 0 && bytes > heap / 4))
    return std::make_unique<GlobalCompactedSchedule>(run);
  // The step kernel can pick the next block only when one part holds every block.
  if (run.prog->parts(residency_of(Kernel::GlobalCompacted)) != 1)
    return std::make_unique<GlobalLaneListsSchedule>(run);
  if (vulkan.global_block_kernels) return std::make_unique<GlobalBlockKernelsSchedule>(run);
  return std::make_unique<GlobalPickInStepSchedule>(run);
}

std::string GlobalSchedule::name() const {
  return fmt::format("global/{}", global_mode_name(run_.vulkan.global_mode));
}

uint64_t GlobalSchedule::steps_per_submission() const {
  return run_.vulkan.steps_per_submission;
}

uint64_t GlobalSchedule::list_words() const {
  return lane_lists() ? (run_.nblocks + 1ull) * run_.lanes : run_.lanes;
}

uint32_t GlobalSchedule::trace_cap() const {
  return run_.options.record_trace ? static_cast<uint32_t>(steps_per_submission()) : 0;
}

std::string GlobalSchedule::unrecordable() const {
  return "only the local schedule can be recorded into a host's command buffer (the global "
         "schedule's trace and counts are read back between steps)";
}

Status GlobalSchedule::prepare(PipelineJobs& jobs) {
  // The hand-written kernels are small; the pick and compaction come first, uncounted.
  if (picks())
    if (auto p = run_.prog->pipeline(HandKernel::GlobalPick); !p) return Error{p.error()};
  if (compacts())
    if (auto p = run_.prog->pipeline(HandKernel::GlobalCompact); !p) return Error{p.error()};
  add_step_jobs(jobs);
  if (products_apart()) {
    VulkanProgram::Impl* prog = run_.prog;
    jobs.push_back([prog] { return prog->product_pipeline(); });
  }
  return Ok{};
}

bool GlobalSchedule::products_apart() const {
  return run_.prog->products_apart(step_kernel(), run_.banks);
}

void GlobalSchedule::add_step_jobs(PipelineJobs& jobs) {
  VulkanProgram::Impl* prog = run_.prog;
  const Kernel k = step_kernel();
  const Banks banks = run_.banks;
  const uint32_t depth = run_.private_depth();
  std::lock_guard lock(prog->mutex);
  for (size_t part = 0; part < run_.step_parts(); ++part)
    if (!prog->pipelines.count({static_cast<int>(k), part, depth, banks}))
      jobs.push_back(
          [prog, k, part, depth, banks] { return prog->pipeline(k, part, depth, banks); });
}

Status GlobalSchedule::start() {
  if (lane_lists()) {
    const uint32_t on = 1;
    if (auto s = upload(*run_.ctx, run_.control.buffer, AB_CTRL_LISTS * 4, &on, 4); !s) return s;
  }
  return recount();
}

// Parked lanes went back to the blocks they wait at: the schedule is not done, and counts (and
// lists) them back in.
Status GlobalSchedule::pcs_changed() {
  const uint32_t not_done = 0;
  if (auto s = upload(*run_.ctx, run_.control.buffer, AB_CTRL_DONE * 4, &not_done, 4); !s) return s;
  return recount();
}

// The lane lists are not saved in a checkpoint: they follow from the PCs, in an order that
// changes no result. The counts are in the restored control words.
Status GlobalSchedule::restored() {
  return lane_lists() ? recount() : Status{Ok{}};
}

Status GlobalSchedule::recount() {
  auto count = run_.prog->pipeline(HandKernel::GlobalCount);
  if (!count) return Error{count.error()};
  VulkanRun::Impl& r = run_;
  return submit_and_wait(*r.ctx, [&](VkCommandBuffer cmd) {
    auto& api = r.ctx->api;
    api.vkCmdFillBuffer(cmd, r.control.handle(), AB_CTRL_COUNTS * 4, uint64_t{r.nblocks} * 4, 0);
    compute_barrier(*r.ctx, cmd);
    api.vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, *count);
    r.device.bind_set(cmd, r.prog->pipeline_layout, r.push);
    api.vkCmdDispatch(cmd, groups_for(r.lanes), 1, 1);
    ++r.stats.dispatches;
  });
}

void GlobalSchedule::record_resets(VkCommandBuffer cmd) {
  auto& api = run_.ctx->api;
  const VkBuffer ctrl = run_.control.handle();
  api.vkCmdFillBuffer(cmd, ctrl, AB_CTRL_TRACE_LEN * 4, 4, 0);
  if (budgeted()) api.vkCmdFillBuffer(cmd, ctrl, AB_CTRL_BUDGET_USED * 4, 4, 0);
}

Status GlobalSchedule::load_pipelines() {
  if (!steps_.empty()) return Ok{};
  VulkanProgram::Impl& prog = *run_.prog;
  if (picks()) {
    auto p = prog.pipeline(HandKernel::GlobalPick);
    if (!p) return Error{p.error()};
    pick_ = *p;
  }
  if (compacts()) {
    auto c = prog.pipeline(HandKernel::GlobalCompact);
    if (!c) return Error{c.error()};
    compact_ = *c;
  }
  if (products_apart()) {
    auto p = prog.product_pipeline();
    if (!p) return Error{p.error()};
    product_ = *p;
    const bool masked = step_kernel() == Kernel::GlobalMasked;
    products_ = ProductDispatches(run_, masked ? AB_PRODUCT_LANES_MASKED : AB_PRODUCT_LANES_LISTED);
  }
  auto steps = load_steps();
  if (!steps) return Error{steps.error()};
  steps_ = std::move(*steps);
  return Ok{};
}

Expected<std::vector<VkPipeline>> GlobalSchedule::load_steps() {
  std::vector<VkPipeline> steps;
  for (size_t part = 0; part < run_.step_parts(); ++part) {
    auto s = run_.prog->pipeline(step_kernel(), part, run_.private_depth(), run_.banks);
    if (!s) return Error{s.error()};
    steps.push_back(*s);
  }
  return steps;
}

void GlobalSchedule::dispatch(VkCommandBuffer cmd, VkPipeline p, uint32_t groups) {
  auto& api = run_.ctx->api;
  api.vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, p);
  api.vkCmdDispatch(cmd, groups, 1, 1);
  compute_barrier(*run_.ctx, cmd);
}

void GlobalSchedule::dispatch_products(VkCommandBuffer cmd,
                                       const std::function<VkDeviceSize(uint32_t block)>& args_at) {
  if (!product_) return;
  const bool masked = step_kernel() == Kernel::GlobalMasked;
  products_.record(*run_.ctx, cmd, run_.prog->pipeline_layout, product_, run_.lanes,
                   masked ? VK_NULL_HANDLE : run_.control.handle(), args_at);
}

void GlobalSchedule::dispatch_listed(VkCommandBuffer cmd) {
  auto& api = run_.ctx->api;
  for (VkPipeline step : steps_) {
    api.vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, step);
    api.vkCmdDispatchIndirect(cmd, run_.control.handle(), AB_CTRL_INDIRECT_X * 4);
    compute_barrier(*run_.ctx, cmd);
  }
}

void GlobalSchedule::read_back(const uint32_t* w, uint64_t n) {
  VulkanRun::Impl& r = run_;
  r.stats.dispatches += dispatches(n) + (product_ ? n * products_.dispatches() : 0);
  r.counters.steps = w[AB_CTRL_STEPS_LO] | uint64_t{w[AB_CTRL_STEPS_HI]} << 32;
  const uint32_t len = std::min(w[AB_CTRL_TRACE_LEN], r.control.trace_cap);
  const uint32_t* t = w + AB_CTRL_COUNTS + 2 * r.nblocks;
  for (uint32_t i = 0; i < len; ++i)
    r.counters.trace.push_back({static_cast<int32_t>(t[2 * i]), t[2 * i + 1]});
  uint64_t live = 0;
  for (uint32_t b = 0; b < r.nblocks; ++b)
    live += w[AB_CTRL_COUNTS + b];
  r.phase = w[AB_CTRL_DONE] != 0 || live == 0 ? RunPhase::Finished : RunPhase::Running;
}

// The VM's utilization: the mean over scheduler steps of active / live lanes (the kernels add
// each step's ratio in 2^-24 units).
double GlobalSchedule::utilization(const uint32_t* header) const {
  const uint64_t n = header[AB_CTRL_STEPS_LO] | uint64_t{header[AB_CTRL_STEPS_HI]} << 32;
  const uint64_t sum = header[AB_CTRL_UTIL_LO] | uint64_t{header[AB_CTRL_UTIL_HI]} << 32;
  return n ? static_cast<double>(sum) / 16777216.0 / static_cast<double>(n) : 0;
}

void GlobalSchedule::result_stats(const std::vector<uint32_t>& ctrl, RunResult& result) const {
  const uint32_t nblocks = run_.nblocks;
  result.stats.steps = ctrl[AB_CTRL_STEPS_LO] | uint64_t{ctrl[AB_CTRL_STEPS_HI]} << 32;
  result.stats.block_executions.assign(ctrl.begin() + AB_CTRL_COUNTS + nblocks,
                                       ctrl.begin() + AB_CTRL_COUNTS + 2 * nblocks);
  result.trace = run_.counters.trace;
}

}  // namespace ab
