// The six variants of the global schedule (schedules.h, GlobalSchedule), one class each in a file
// of its own: they differ only in how a step finds the chosen block's lanes and how many
// dispatches it takes. GlobalSchedule::choose (schedule_global.cpp) picks one from VulkanOptions,
// the batch and the device (docs/engine.md, "The global schedule's variants").
#pragma once

#include "engine/schedules/schedules.h"

namespace ab {

// Each step: the pick, then every part's kernel over all lanes, masked
// (schedule_global_masked.cpp).
class GlobalMaskedSchedule final : public GlobalSchedule {
 public:
  using GlobalSchedule::GlobalSchedule;
  Kernel step_kernel() const override { return Kernel::GlobalMasked; }
  void record_steps(VkCommandBuffer cmd, uint64_t n) override;

 protected:
  uint64_t dispatches(uint64_t n) const override;
};

// Each step: the pick, a compaction pass listing the block's lanes, then every part's kernel over
// that list, dispatched indirectly (schedule_global_compacted.cpp).
class GlobalCompactedSchedule final : public GlobalSchedule {
 public:
  using GlobalSchedule::GlobalSchedule;
  void record_steps(VkCommandBuffer cmd, uint64_t n) override;

 protected:
  bool compacts() const override { return true; }
  uint64_t dispatches(uint64_t n) const override;
};

// Compacted with per-block lane lists the step kernels keep: no compaction pass
// (schedule_global_lane_lists.cpp).
class GlobalLaneListsSchedule final : public GlobalSchedule {
 public:
  using GlobalSchedule::GlobalSchedule;
  void record_steps(VkCommandBuffer cmd, uint64_t n) override;

 protected:
  bool lane_lists() const override { return true; }
  uint64_t dispatches(uint64_t n) const override;
};

// Lane lists in a program of one part: one pick per submission, then each step kernel picks the
// next block (schedule_global_pick_in_step.cpp).
class GlobalPickInStepSchedule final : public GlobalSchedule {
 public:
  using GlobalSchedule::GlobalSchedule;
  void record_steps(VkCommandBuffer cmd, uint64_t n) override;

 protected:
  bool lane_lists() const override { return true; }
  bool budgeted() const override { return true; }
  uint64_t dispatches(uint64_t n) const override;
};

// Pick in step, with one step kernel specialized to each block
// (schedule_global_block_kernels.cpp).
class GlobalBlockKernelsSchedule final : public GlobalSchedule {
 public:
  using GlobalSchedule::GlobalSchedule;
  void record_resets(VkCommandBuffer cmd) override;
  void record_steps(VkCommandBuffer cmd, uint64_t n) override;

 protected:
  bool lane_lists() const override { return true; }
  bool budgeted() const override { return true; }
  uint64_t dispatches(uint64_t n) const override;
  void add_step_jobs(PipelineJobs& jobs) override;
  Expected<std::vector<VkPipeline>> load_steps() override;
};

// A batch within one subgroup: the whole loop, pick included, in one dispatch per part
// (schedule_global_fused.cpp).
class GlobalFusedSchedule final : public GlobalSchedule {
 public:
  using GlobalSchedule::GlobalSchedule;
  std::string name() const override { return "global/fused"; }
  Kernel step_kernel() const override { return Kernel::GlobalFused; }
  // Steps in one dispatch, bounded like a local dispatch.
  uint64_t steps_per_submission() const override;
  bool stops_short() const override { return true; }
  void record_steps(VkCommandBuffer cmd, uint64_t n) override;

 protected:
  bool budgeted() const override { return true; }
  bool picks() const override { return false; }
  uint64_t dispatches(uint64_t n) const override;
};

}  // namespace ab
