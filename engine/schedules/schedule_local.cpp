// LocalSchedule (schedules.h): each group of lanes runs its own PC loop inside one dispatch per
// part, for up to the submission's budget of steps, then stores its state; the control buffer
// only sums counters and says whether any lane is still live. The scope picks the group: a
// subgroup or a workgroup stepping one block at a time for its lanes, or every lane on its own
// (shaders/ab_entry_local_*.glsl, entry()). A lane that reaches a product block leaves its part's
// loop and waits there; after the parts, the product kernel runs every waiting lane's product and
// moves it on, and the next round resumes it (docs/engine.md, "Matrix products"). Also the rounds
// a host records into its own command buffer.
#include <fmt/format.h>

#include <algorithm>

#include "engine/run/run_impl.h"
#include "engine/schedules/entry_texts.h"

namespace ab {

LocalSchedule::LocalSchedule(VulkanRun::Impl& run, LocalScope scope)
    : RunSchedule(run),
      scope_(scope),
      products_apart_(run.prog->products_apart(entry(scope).kernel, run.banks)),
      products_(run, AB_PRODUCT_LANES_ROUND) {}

std::string LocalSchedule::name() const {
  return fmt::format("local/{}", local_scope_name(scope_));
}

KernelEntry LocalSchedule::entry(LocalScope scope) {
  switch (scope) {
    case LocalScope::Subgroup:
      break;
    case LocalScope::Workgroup:
      return {Kernel::LocalWorkgroup, kAbEntryLocalWorkgroupText};
    case LocalScope::Lane:
      return {Kernel::LocalLane, kAbEntryLocalLaneText, true};
  }
  return {Kernel::LocalSubgroup, kAbEntryLocalSubgroupText};
}

uint64_t LocalSchedule::steps_per_submission() const {
  return run_.vulkan.local_steps_per_dispatch;
}

// Bound but unused by the local kernels: the smallest list the layout allows.
uint64_t LocalSchedule::list_words() const {
  return run_.lanes;
}

uint32_t LocalSchedule::group_width() const {
  return scope_ == LocalScope::Workgroup ? AB_GROUP_SIZE
                                         : std::max<uint32_t>(run_.ctx->info.subgroup_size, 1);
}

Status LocalSchedule::prepare(PipelineJobs& jobs) {
  VulkanProgram::Impl* prog = run_.prog;
  const Kernel k = step_kernel();
  const uint32_t depth = run_.private_depth();
  const Banks banks = run_.banks;
  std::lock_guard lock(prog->mutex);
  if (products_apart_) jobs.push_back([prog] { return prog->product_pipeline(); });
  for (size_t part = 0; part < run_.step_parts(); ++part)
    if (!prog->pipelines.count({static_cast<int>(k), part, depth, banks}))
      jobs.push_back(
          [prog, k, part, depth, banks] { return prog->pipeline(k, part, depth, banks); });
  return Ok{};
}

void LocalSchedule::record_resets(VkCommandBuffer cmd) {
  auto& api = run_.ctx->api;
  const VkBuffer ctrl = run_.control.handle();
  api.vkCmdFillBuffer(cmd, ctrl, AB_CTRL_NOT_FINISHED * 4, 4, 0);
  api.vkCmdFillBuffer(cmd, ctrl, AB_CTRL_GROUP_STEPS * 4, 4, 0);
  api.vkCmdFillBuffer(cmd, ctrl, AB_CTRL_LANE_ITERATIONS * 4, 8, 0);  // and AB_CTRL_LANE_SLOTS
}

Status LocalSchedule::load_pipelines() {
  if (!steps_.empty()) return Ok{};
  std::vector<VkPipeline> steps;
  for (size_t part = 0; part < run_.step_parts(); ++part) {
    auto s = run_.prog->pipeline(step_kernel(), part, run_.private_depth(), run_.banks);
    if (!s) return Error{s.error()};
    steps.push_back(*s);
  }
  if (products_apart_) {
    auto p = run_.prog->product_pipeline();
    if (!p) return Error{p.error()};
    product_ = *p;
  }
  steps_ = std::move(steps);
  return Ok{};
}

// Forward through the parts and back (VulkanRun::Impl::part_order), one dispatch of every group
// each (indirect: the arguments local_round.comp wrote), then the products.
void LocalSchedule::record_round(VkCommandBuffer cmd, bool indirect) {
  VulkanRun::Impl& r = run_;
  auto& api = r.ctx->api;
  for (size_t part : r.part_order()) {
    api.vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, steps_[part]);
    if (indirect)
      api.vkCmdDispatchIndirect(cmd, r.control.handle(), AB_CTRL_INDIRECT_X * 4);
    else
      api.vkCmdDispatch(cmd, groups_for(r.lanes), 1, 1);
    compute_barrier(*r.ctx, cmd);
  }
  if (products_apart_)
    products_.record(*r.ctx, cmd, r.prog->pipeline_layout, product_, r.lanes,
                     indirect ? r.control.handle() : VK_NULL_HANDLE);
}

uint64_t LocalSchedule::round_dispatches() const {
  return run_.part_order().size() + (products_apart_ ? products_.dispatches() : 0);
}

void LocalSchedule::record_steps(VkCommandBuffer cmd, uint64_t) {
  record_round(cmd, false);
}

// A submission's counters start from zero (record_resets): add them up.
void LocalSchedule::read_back(const uint32_t* w, uint64_t) {
  VulkanRun::Impl& r = run_;
  r.stats.dispatches += round_dispatches();
  r.stats.group_steps += w[AB_CTRL_GROUP_STEPS];
  r.counters.lane_iterations += w[AB_CTRL_LANE_ITERATIONS];
  r.counters.lane_slots += w[AB_CTRL_LANE_SLOTS];
  r.counters.steps = r.stats.group_steps;
  r.phase = w[AB_CTRL_NOT_FINISHED] == 0 ? RunPhase::Finished : RunPhase::Running;
}

// Lanes busy in a group's step over the group's lanes, summed over every group step of the run
// (the subgroup and workgroup scopes count a lane busy when it ran the step's block, the lane
// scope when it was inside the subgroup's loop iteration).
double LocalSchedule::utilization(const uint32_t*) const {
  return run_.counters.lane_slots ? static_cast<double>(run_.counters.lane_iterations) /
                                        static_cast<double>(run_.counters.lane_slots)
                                  : 0;
}

void LocalSchedule::result_stats(const std::vector<uint32_t>&, RunResult& result) const {
  result.stats.steps = run_.stats.group_steps;
}

Status LocalSchedule::record_rounds(VkCommandBuffer cmd, uint32_t rounds) {
  VulkanRun::Impl& r = run_;
  auto round = r.prog->pipeline(HandKernel::LocalRound);
  if (!round) return Error{round.error()};
  if (auto s = load_pipelines(); !s) return s;
  auto& api = r.ctx->api;
  compute_barrier(*r.ctx, cmd);  // the host's (and earlier rounds') writes to our buffers
  r.device.bind_set(cmd, r.prog->pipeline_layout, r.push);
  for (uint32_t i = 0; i < rounds; ++i) {
    api.vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, *round);
    api.vkCmdDispatch(cmd, 1, 1, 1);
    compute_barrier(*r.ctx, cmd);
    record_round(cmd, true);
  }
  VkBufferCopy region{0, 0, r.control.words() * 4};
  api.vkCmdCopyBuffer(cmd, r.control.handle(), r.control.readback.handle(), 1, &region);
  VkMemoryBarrier to_host{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
  to_host.srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT;
  to_host.dstAccessMask = VK_ACCESS_HOST_READ_BIT;
  api.vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_HOST_BIT, 0, 1,
                           &to_host, 0, nullptr, 0, nullptr);
  r.stats.dispatches += uint64_t{rounds} * (1 + round_dispatches());
  return Ok{};
}

void LocalSchedule::read_back_rounds(const uint32_t* w) {
  VulkanRun::Impl& r = run_;
  r.stats.group_steps = w[AB_CTRL_GROUP_STEPS];
  r.counters.lane_iterations = w[AB_CTRL_LANE_ITERATIONS];
  r.counters.lane_slots = w[AB_CTRL_LANE_SLOTS];
  r.counters.steps = r.stats.group_steps;
  r.phase = w[AB_CTRL_NOT_FINISHED] == 0 ? RunPhase::Finished : RunPhase::Running;
}

}  // namespace ab
