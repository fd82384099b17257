// GlobalSchedule (schedules.h): one program counter for the whole batch. Each scheduler step the
// pick kernel (shaders/global_pick.comp) chooses a block by the heuristic and writes the step
// kernels' indirect arguments; the chosen block then runs for its lanes. The pick, the counts
// and the trace live in the control buffer, so the trace equals the CPU VM's step for step.
// The variants differ only in how a step finds its lanes and how many dispatches it takes.
#include <fmt/format.h>

#include <algorithm>

#include "engine/run/run_impl.h"

namespace ab {

GlobalSchedule::Variant GlobalSchedule::choose(const VulkanRun::Impl& run) {
  const VulkanOptions& vulkan = run.vulkan;
  const DeviceInfo& device = run.ctx->info;
  if (vulkan.fuse_small_batches && device.subgroup_arithmetic && run.lanes <= device.subgroup_size)
    return Variant::Fused;
  if (vulkan.global_mode == GlobalMode::Masked) return Variant::Masked;
  if (run.nblocks > vulkan.global_lane_list_limit) return Variant::Compacted;
  // Lists that would crowd the device out fall back to the compaction pass.
  uint64_t heap = 0;
  for (uint32_t h = 0; h < run.ctx->memory.memoryHeapCount; ++h)
    if (run.ctx->memory.memoryHeaps[h].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT)
      heap = std::max<uint64_t>(heap, run.ctx->memory.memoryHeaps[h].size);
  const uint64_t bytes = (run.nblocks + 1ull) * run.lanes * 4;
  if (bytes > run.ctx->properties.limits.maxStorageBufferRange || (heap != 0 && bytes > heap / 4))
    return Variant::Compacted;
  // The step kernel can pick the next block only when one part holds every block.
  if (run.prog->parts(residency_of(Kernel::GlobalCompacted)) != 1) return Variant::LaneLists;
  return vulkan.global_block_kernels ? Variant::BlockKernels : Variant::PickInStep;
}

std::string GlobalSchedule::name() const {
  if (variant_ == Variant::Fused) return "global/fused";
  return fmt::format("global/{}", global_mode_name(run_.vulkan.global_mode));
}

Kernel GlobalSchedule::step_kernel() const {
  switch (variant_) {
    case Variant::Fused:
      return Kernel::GlobalFused;
    case Variant::Masked:
      return Kernel::GlobalMasked;
    default:
      return Kernel::GlobalCompacted;
  }
}

// Fused: steps in one dispatch, bounded like a local dispatch; otherwise scheduler steps.
uint64_t GlobalSchedule::steps_per_submission() const {
  return variant_ == Variant::Fused ? run_.vulkan.local_steps_per_dispatch
                                    : run_.vulkan.steps_per_submission;
}

// The compaction pass's list, or a region per block and a spare one.
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
  if (variant_ != Variant::Fused)
    if (auto p = run_.prog->pipeline(HandKernel::GlobalPick); !p) return Error{p.error()};
  if (variant_ == Variant::Compacted)
    if (auto p = run_.prog->pipeline(HandKernel::GlobalCompact); !p) return Error{p.error()};
  VulkanProgram::Impl* prog = run_.prog;
  const Kernel k = step_kernel();
  const Banks banks = run_.banks;
  std::lock_guard lock(prog->mutex);
  if (variant_ == Variant::BlockKernels) {
    // The step kernel specialized to each block
    for (uint32_t b = 0; b < run_.nblocks; ++b)
      if (!prog->pipelines.count({200 + static_cast<int>(k), b, 0u, banks}))
        jobs.push_back([prog, k, b, banks] { return prog->block_pipeline(k, b, banks); });
    return Ok{};
  }
  const uint32_t depth = run_.private_depth();
  for (size_t part = 0; part < run_.step_parts(); ++part)
    if (!prog->pipelines.count({static_cast<int>(k), part, depth, banks}))
      jobs.push_back(
          [prog, k, part, depth, banks] { return prog->pipeline(k, part, depth, banks); });
  return Ok{};
}

Status GlobalSchedule::start() {
  if (lane_lists()) {
    const uint32_t on = 1;
    if (auto s = upload(*run_.ctx, run_.ctrl, AB_CTRL_LISTS * 4, &on, 4); !s) return s;
  }
  return recount();
}

// Parked lanes went back to the blocks they wait at: the schedule is not done, and counts (and
// lists) them back in.
Status GlobalSchedule::pcs_changed() {
  const uint32_t not_done = 0;
  if (auto s = upload(*run_.ctx, run_.ctrl, AB_CTRL_DONE * 4, &not_done, 4); !s) return s;
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
    api.vkCmdFillBuffer(cmd, r.ctrl.handle(), AB_CTRL_COUNTS * 4, uint64_t{r.nblocks} * 4, 0);
    compute_barrier(*r.ctx, cmd);
    api.vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, *count);
    api.vkCmdBindDescriptorSets(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, r.prog->pipeline_layout, 0, 1,
                                &r.set, 0, nullptr);
    api.vkCmdPushConstants(cmd, r.prog->pipeline_layout, VK_SHADER_STAGE_COMPUTE_BIT, 0,
                           sizeof(r.push), &r.push);
    api.vkCmdDispatch(cmd, groups_for(r.lanes), 1, 1);
    ++r.stats.dispatches;
  });
}

void GlobalSchedule::record_resets(VkCommandBuffer cmd) {
  auto& api = run_.ctx->api;
  const VkBuffer ctrl = run_.ctrl.handle();
  api.vkCmdFillBuffer(cmd, ctrl, AB_CTRL_TRACE_LEN * 4, 4, 0);
  if (variant_ == Variant::Fused || picks_in_step())
    api.vkCmdFillBuffer(cmd, ctrl, AB_CTRL_BUDGET_USED * 4, 4, 0);
  if (variant_ == Variant::BlockKernels) api.vkCmdFillBuffer(cmd, ctrl, AB_CTRL_ARGS_SET * 4, 4, 0);
}

// The steps whose pick the step kernel makes (0: a pick dispatch each).
uint32_t GlobalSchedule::budget(uint64_t n) const {
  return variant_ == Variant::Fused || picks_in_step() ? static_cast<uint32_t>(n) : 0;
}

Status GlobalSchedule::load_pipelines() {
  if (!steps_.empty()) return Ok{};
  VulkanProgram::Impl& prog = *run_.prog;
  if (variant_ != Variant::Fused) {
    auto p = prog.pipeline(HandKernel::GlobalPick);
    if (!p) return Error{p.error()};
    pick_ = *p;
  }
  if (variant_ == Variant::Compacted) {
    auto c = prog.pipeline(HandKernel::GlobalCompact);
    if (!c) return Error{c.error()};
    compact_ = *c;
  }
  std::vector<VkPipeline> steps;
  if (variant_ == Variant::BlockKernels) {
    for (uint32_t b = 0; b < run_.nblocks; ++b) {
      auto s = prog.block_pipeline(step_kernel(), b, run_.banks);
      if (!s) return Error{s.error()};
      steps.push_back(*s);
    }
  } else {
    for (size_t part = 0; part < run_.step_parts(); ++part) {
      auto s = prog.pipeline(step_kernel(), part, run_.private_depth(), run_.banks);
      if (!s) return Error{s.error()};
      steps.push_back(*s);
    }
  }
  steps_ = std::move(steps);
  return Ok{};
}

void GlobalSchedule::record_steps(VkCommandBuffer cmd, uint64_t n) {
  VulkanRun::Impl& r = run_;
  auto& api = r.ctx->api;
  auto dispatch = [&](VkPipeline p, uint32_t groups) {
    api.vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, p);
    api.vkCmdDispatch(cmd, groups, 1, 1);
    compute_barrier(*r.ctx, cmd);
  };
  // Every part's kernel over the lanes the pick (or the compaction) listed.
  auto dispatch_listed = [&] {
    for (VkPipeline step : steps_) {
      api.vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, step);
      api.vkCmdDispatchIndirect(cmd, r.ctrl.handle(), AB_CTRL_INDIRECT_X * 4);
      compute_barrier(*r.ctx, cmd);
    }
  };
  switch (variant_) {
    case Variant::Fused:
      for (size_t part : r.part_order())
        dispatch(steps_[part], 1);
      break;
    case Variant::BlockKernels:
      // As PickInStep, each step dispatching every block's kernel: the chosen block's arguments
      // (in the set of this step's parity) are its lanes' workgroups, every other block's are
      // zero. No barrier between them: the one that runs writes only the other set.
      dispatch(pick_, 1);
      for (uint64_t s = 0; s < n; ++s) {
        for (uint32_t b = 0; b < r.nblocks; ++b) {
          api.vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, steps_[b]);
          api.vkCmdDispatchIndirect(cmd, r.ctrl.handle(),
                                    r.block_args_word(static_cast<uint32_t>(s % 2), b) * 4);
        }
        compute_barrier(*r.ctx, cmd);
      }
      break;
    case Variant::PickInStep:
      // One pick, then each step kernel runs the chosen block's list and picks the next block.
      dispatch(pick_, 1);
      for (uint64_t s = 0; s < n; ++s)
        dispatch_listed();
      break;
    case Variant::LaneLists:
      for (uint64_t s = 0; s < n; ++s) {
        dispatch(pick_, 1);
        dispatch_listed();
      }
      break;
    case Variant::Compacted:
      for (uint64_t s = 0; s < n; ++s) {
        dispatch(pick_, 1);
        dispatch(compact_, groups_for(r.lanes));
        dispatch_listed();
      }
      break;
    case Variant::Masked:
      // Each step: the pick, then every part's step kernel; only the part holding the chosen
      // block runs it (the others return at once).
      for (uint64_t s = 0; s < n; ++s) {
        dispatch(pick_, 1);
        for (VkPipeline step : steps_)
          dispatch(step, groups_for(r.lanes));
      }
      break;
  }
}

void GlobalSchedule::read_back(const uint32_t* w, uint64_t n) {
  VulkanRun::Impl& r = run_;
  const uint64_t parts = r.step_parts();
  switch (variant_) {
    case Variant::Fused:
      r.stats.dispatches += r.part_order().size();
      break;
    case Variant::BlockKernels:
      r.stats.dispatches += 1 + n * r.nblocks;  // most of them empty
      break;
    case Variant::PickInStep:
      r.stats.dispatches += 1 + n;
      break;
    case Variant::Compacted:
      r.stats.dispatches += n * (2 + parts);
      break;
    case Variant::Masked:
    case Variant::LaneLists:
      r.stats.dispatches += n * (1 + parts);
      break;
  }
  r.steps = w[AB_CTRL_STEPS_LO] | uint64_t{w[AB_CTRL_STEPS_HI]} << 32;
  const uint32_t len = std::min(w[AB_CTRL_TRACE_LEN], r.trace_cap);
  const uint32_t* t = w + AB_CTRL_COUNTS + 2 * r.nblocks;
  for (uint32_t i = 0; i < len; ++i)
    r.trace.push_back({static_cast<int32_t>(t[2 * i]), t[2 * i + 1]});
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
  result.trace = run_.trace;
}

}  // namespace ab
