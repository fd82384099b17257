// The schedules of a VulkanRun (docs/engine.md, "The schedule classes"): how a submission's steps
// are recorded into a command buffer and how its counters are read back, one class per family.
//
// A run (VulkanRun::Impl, run_impl.h) owns the shared state: the buffers, the descriptor set,
// the push constants, the phase and the counters. Its schedule, chosen once at creation, owns
// everything that differs between schedules:
//   prepare   the pipelines a submission dispatches (built ahead by VulkanRun::prepare, or on
//             first use);
//   start     what the control buffer needs before the first step, and again after the host
//             moved lanes (drained streams, a restored checkpoint);
//   record    the counters a submission resets, its budget, and its dispatches;
//   read back the counters, trace and phase after a submission, the utilization, the result's
//             step statistics.
// The shared framing (allocating and caching a command buffer, binding the set, pushing the
// constants, copying the control buffer to the readback) is the run's, in run.cpp.
//
// GlobalSchedule (schedule_global.cpp, its variants in schedule_global.h): one program counter for
// the whole batch, picked on the GPU each step (paper-faithful; its trace equals the VM's).
// LocalSchedule (schedule_local.cpp):
// each lane, subgroup or workgroup runs its own PC loop inside one dispatch; the only schedule a
// host may record into its own command buffer (run_record.cpp).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "autobatch/engine.h"
#include "codegen/glsl_codegen.h"
#include "engine/device/kernels.h"

namespace ab {

// Pipeline builds for build_all() (program_impl.h).
using PipelineJobs = std::vector<std::function<Expected<VkPipeline>()>>;

// The product kernel's dispatches for a run's product blocks (schedule_products.cpp;
// docs/engine.md, "Matrix products"): each product's work in slices a dispatch may take.
class ProductDispatches {
 public:
  ProductDispatches() = default;
  // `lanes`: AB_PRODUCT_LANES_ROUND (the local schedule), _MASKED or _LISTED (the global one's
  // step, as its step kernel finds its lanes).
  ProductDispatches(const VulkanRun::Impl& run, uint32_t lanes);
  // Every slice of every product, each a dispatch over `lanes` lanes (or, given `indirect`, the
  // indirect arguments at byte `args_at(block)` of it, by default the control buffer's
  // AB_CTRL_INDIRECT_X) followed by a barrier, with the run's set and push constants bound; the
  // product words are pushed per slice.
  void record(VulkanContext::Impl& ctx, VkCommandBuffer cmd, VkPipelineLayout layout,
              VkPipeline kernel, uint32_t lanes, VkBuffer indirect = VK_NULL_HANDLE,
              const std::function<VkDeviceSize(uint32_t block)>& args_at = {}) const;
  size_t dispatches() const { return slices_.size(); }

 private:
  std::vector<ProductPush> slices_;
};

class RunSchedule {
 public:
  explicit RunSchedule(VulkanRun::Impl& run) : run_(run) {}
  virtual ~RunSchedule() = default;
  RunSchedule(const RunSchedule&) = delete;
  RunSchedule& operator=(const RunSchedule&) = delete;

  // ---- what the schedule is ----
  // VulkanStats::schedule: "global/compacted", "local/lane", ...
  virtual std::string name() const = 0;
  // The generated kernel each dispatch (or each step) runs, in every part.
  virtual Kernel step_kernel() const = 0;
  // Steps one submission runs at most: global scheduler steps, or local group steps per dispatch.
  virtual uint64_t steps_per_submission() const = 0;
  // Words of the active-lane list buffer (binding 2).
  virtual uint64_t list_words() const = 0;
  // Trace entries the control buffer holds per submission (0: no trace).
  virtual uint32_t trace_cap() const { return 0; }
  // Lanes that re-converge together (VulkanRun::group_width): 0 for the global schedule.
  virtual uint32_t group_width() const = 0;
  // Whether a submission may stop short of its budget, so step(n) counts the steps it took.
  virtual bool stops_short() const { return false; }
  // Why a host cannot record this schedule into its own command buffer, or empty.
  virtual std::string unrecordable() const { return {}; }

  // ---- prepare ----
  // Builds the small hand-written kernels at once and adds the generated ones not yet built to
  // `jobs` (VulkanRun::prepare builds them on host threads).
  virtual Status prepare(PipelineJobs& jobs) = 0;

  // ---- start ----
  // Called once the initial state is uploaded.
  virtual Status start() = 0;
  // Called after the host changed lanes' PCs (parked lanes sent back by drain_streams).
  virtual Status pcs_changed() { return Ok{}; }
  // Called after a checkpoint's state and control words were uploaded.
  virtual Status restored() { return Ok{}; }

  // ---- record ----
  // Fills (before the first barrier) the control words a submission of `n` steps starts from.
  virtual void record_resets(VkCommandBuffer cmd) = 0;
  // PushConstants::budget for a submission of `n` steps.
  virtual uint32_t budget(uint64_t n) const = 0;
  // The dispatches of `n` steps, after the set and constants are bound. load_pipelines() ran
  // first, outside the context's submit lock (a first build may dispatch).
  virtual Status load_pipelines() = 0;
  virtual void record_steps(VkCommandBuffer cmd, uint64_t n) = 0;

  // ---- read back ----
  // After a submission of `n` steps: VulkanStats::dispatches, the step counters, the trace and
  // the phase, from the control words `w` the submission copied back.
  virtual void read_back(const uint32_t* w, uint64_t n) = 0;
  // The one definition of the run's utilization for this schedule (VulkanStats and RunStats
  // both report it), from the counters so far and the control header the device last left.
  virtual double utilization(const uint32_t* header) const = 0;
  // RunStats::steps (and the global schedule's block executions and trace) from the control
  // buffer `ctrl` as read by result().
  virtual void result_stats(const std::vector<uint32_t>& ctrl, RunResult& result) const = 0;

  // ---- a host's command buffer (run_record.cpp), for a schedule unrecordable() allows ----
  // `rounds` rounds, each deciding on the GPU whether it runs (shaders/local_round.comp).
  virtual Status record_rounds(VkCommandBuffer, uint32_t) { return Error{unrecordable()}; }
  // The counters so far from the readback after the host's fence: they count since the run was
  // created or restarted (recorded rounds never clear them).
  virtual void read_back_rounds(const uint32_t*) {}

 protected:
  VulkanRun::Impl& run_;
};

// One program counter for the batch: each step the pick kernel chooses a block (the heuristic)
// and that block's step kernel runs its lanes. What the six variants share (the pick, the counts,
// the trace, the checkpoint and drain hooks) is here, in schedule_global.cpp; each variant, one
// class in a file of its own (schedule_global.h), says how a step finds its lanes and how many
// dispatches it takes.
class GlobalSchedule : public RunSchedule {
 public:
  // The variant VulkanOptions and the device allow for this run (needs lanes, nblocks, prog).
  static std::unique_ptr<GlobalSchedule> choose(VulkanRun::Impl& run);
  // The compacted step kernel's entry point (shaders/ab_entry_global_compacted.glsl), the step
  // kernel of every variant but masked and fused.
  static KernelEntry entry();

  std::string name() const override;
  Kernel step_kernel() const override { return entry().kernel; }
  uint64_t steps_per_submission() const override;
  // The compaction pass's list (or none), or with lane lists a region per block and a spare one.
  uint64_t list_words() const override;
  uint32_t trace_cap() const override;
  uint32_t group_width() const override { return 0; }
  std::string unrecordable() const override;
  Status prepare(PipelineJobs& jobs) override;
  Status start() override;
  Status pcs_changed() override;
  Status restored() override;
  void record_resets(VkCommandBuffer cmd) override;
  // The steps whose pick the step kernel makes (0: a pick dispatch each).
  uint32_t budget(uint64_t n) const override { return budgeted() ? static_cast<uint32_t>(n) : 0; }
  Status load_pipelines() override;
  void read_back(const uint32_t* w, uint64_t n) override;
  double utilization(const uint32_t* header) const override;
  void result_stats(const std::vector<uint32_t>& ctrl, RunResult& result) const override;

 protected:
  using RunSchedule::RunSchedule;

  // ---- what the variants differ in ----
  // The step kernels keep per-block lane lists (AB_CTRL_LISTS), so no compaction pass.
  virtual bool lane_lists() const { return false; }
  // A submission runs within the push constant's budget (the step kernel picks the next block,
  // or the fused kernel steps): budget(n) is n and the count of steps taken is reset.
  virtual bool budgeted() const { return false; }
  // The hand-written kernels dispatched besides the step kernels: the pick (all but fused), the
  // compaction pass (compacted).
  virtual bool picks() const { return true; }
  virtual bool compacts() const { return false; }
  // VulkanStats::dispatches of a submission of `n` steps.
  virtual uint64_t dispatches(uint64_t n) const = 0;
  // The step kernels to build (prepare) and load: one per part, or (block kernels) one per block.
  virtual void add_step_jobs(PipelineJobs& jobs);
  virtual Expected<std::vector<VkPipeline>> load_steps();

  // ---- recording helpers ----
  // `p` over `groups` workgroups, then a barrier.
  void dispatch(VkCommandBuffer cmd, VkPipeline p, uint32_t groups);
  // With the product blocks apart (VulkanProgram::Impl::products_apart), before a step's step
  // kernels: the product kernel for the chosen block's lanes if it is a product block (masked:
  // over every lane; else over the step's list, indirectly from `args_at(block)` or the chosen
  // block's arguments), whose step kernel code is then the block's jump alone.
  void dispatch_products(VkCommandBuffer cmd,
                         const std::function<VkDeviceSize(uint32_t block)>& args_at = {});
  // Every part's kernel over the lanes the pick (or the compaction) listed.
  void dispatch_listed(VkCommandBuffer cmd);

  VkPipeline pick_ = VK_NULL_HANDLE, compact_ = VK_NULL_HANDLE;
  std::vector<VkPipeline> steps_;  // each part's step kernel, or each block's (block kernels)
  bool products_apart() const;
  ProductDispatches products_;  // set by load_pipelines, with the products apart
  VkPipeline product_ = VK_NULL_HANDLE;

 private:
  // Counts the live lanes per block again from their PCs (and lists them, with lane lists).
  Status recount();
};

// Each group (a lane, a subgroup or a workgroup: VulkanOptions::local_scope) runs its own PC
// loop for up to `n` steps in one dispatch per part, with the lanes' state in registers.
class LocalSchedule final : public RunSchedule {
 public:
  LocalSchedule(VulkanRun::Impl& run, LocalScope scope);
  // The step kernel's entry point for `scope` (shaders/ab_entry_local_<scope>.glsl; the lane's is
  // the code generator's lane sweep template).
  static KernelEntry entry(LocalScope scope);

  std::string name() const override;
  Kernel step_kernel() const override { return entry(scope_).kernel; }
  uint64_t steps_per_submission() const override;
  uint64_t list_words() const override;
  uint32_t group_width() const override;
  Status prepare(PipelineJobs& jobs) override;
  Status start() override { return Ok{}; }
  void record_resets(VkCommandBuffer cmd) override;
  uint32_t budget(uint64_t n) const override { return static_cast<uint32_t>(n); }
  Status load_pipelines() override;
  void record_steps(VkCommandBuffer cmd, uint64_t n) override;
  void read_back(const uint32_t* w, uint64_t n) override;
  double utilization(const uint32_t* header) const override;
  void result_stats(const std::vector<uint32_t>& ctrl, RunResult& result) const override;

  Status record_rounds(VkCommandBuffer cmd, uint32_t rounds) override;
  void read_back_rounds(const uint32_t* w) override;

 private:
  // The parts' dispatches, then (with products apart) the product kernel's.
  void record_round(VkCommandBuffer cmd, bool indirect);
  // Dispatches a round takes.
  uint64_t round_dispatches() const;

  LocalScope scope_;
  std::vector<VkPipeline> steps_;  // each part's step kernel
  // With the product blocks left out of the step kernels (VulkanProgram::Impl::products_apart),
  // the product kernel and its dispatches, after the parts' in every round: a lane that reached
  // a product waits there (out of its part) until the round's product dispatch moves it on.
  bool products_apart_ = false;
  ProductDispatches products_;
  VkPipeline product_ = VK_NULL_HANDLE;
};

// The schedule VulkanOptions asks for, for a run whose lanes, blocks and program are set.
std::unique_ptr<RunSchedule> make_schedule(VulkanRun::Impl& run);

}  // namespace ab
