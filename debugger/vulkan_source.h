// ExecutionSource over a live run of the Vulkan engine (autobatch/engine.h, public API only).
//
// Global schedule: one debugger step is one scheduler step (VulkanRun::step(1)), so after N steps
// the state equals the CPU VM's after N steps. Local schedule: one debugger step is one
// VulkanRun::step(1), in which every group (subgroup or workgroup) runs one step of its own
// min-PC loop; the per-group view (group_width) shows each group's lanes between dispatches. With
// the lane scope one step is one iteration of every lane's own loop, and there is no group view.
//
// After every step the per-lane state is read back once (VulkanRun::lane_state); the stacks are
// read only when a snapshot asks for them. The lanes that ran a step are those whose own step
// counter moved, so last_active() needs no knowledge of the schedule. Checkpoints are
// VulkanRun::checkpoint copies of the device state.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "autobatch/engine.h"
#include "autobatch/module.h"
#include "debugger/execution_source.h"

namespace ab::debugger {

struct VulkanSourceCheckpoint final : SourceCheckpoint {
  std::shared_ptr<const RunCheckpoint> run;  // null when saving failed
  std::string failure;
  size_t bytes() const override { return run ? run->bytes() : 0; }
};

class VulkanSource final : public ExecutionSource {
 public:
  // Compiles the module (VulkanProgram::compile, which keeps it alive) for `vulkan.context`'s
  // device (or `context` when given: the window's device, VulkanContext::create_external) and
  // uploads the batch; returns the source or a message. The views read the module's lowered
  // program.
  static Expected<std::unique_ptr<VulkanSource>> open(
      std::shared_ptr<const Module> module, const Batch& batch, const RunOptions& options,
      const VulkanOptions& vulkan, std::shared_ptr<VulkanContext> context = nullptr);

  const ProgramInfo& program() const override { return program_; }
  uint32_t lanes() const override { return lanes_; }
  uint32_t stack_depth() const override { return options_.stack_depth; }
  uint64_t steps() const override { return steps_; }
  bool done() const override { return live_ == 0 || !error_.empty(); }
  int32_t next_block() const override { return next_block_; }
  uint64_t step(uint64_t n) override;
  const std::string& error() const override { return error_; }
  const std::vector<int32_t>& lane_pcs() const override { return view_.pc; }
  const std::vector<uint32_t>& lane_depths() const override { return view_.pc_depth; }
  const std::vector<uint8_t>& lane_faulted() const override { return view_.faulted; }
  const std::vector<uint32_t>& registers() const override { return view_.registers; }
  const std::vector<uint32_t>& last_active() const override { return last_active_; }
  BatchSnapshot snapshot(uint32_t first, uint32_t count) const override;
  RunResult result() const override;
  std::unique_ptr<SourceCheckpoint> checkpoint() const override;
  void restore(const SourceCheckpoint& checkpoint) override;
  uint32_t group_width() const override { return group_width_; }
  std::string describe() const override;

 private:
  VulkanSource(ProgramInfo program, const RunOptions& options, const VulkanOptions& vulkan,
               uint32_t lanes);
  // Reads the per-lane state back and derives the views; false (and error_ set) on failure.
  bool refresh();

  ProgramInfo program_;
  RunOptions options_;
  VulkanOptions vulkan_;
  uint32_t lanes_ = 0;
  uint32_t group_width_ = 0;  // lanes per group (local schedule); 0 for the global schedule
  std::string device_;
  bool external_ = false;  // the context runs on a host's device (the debugger window's)
  std::unique_ptr<VulkanRun> run_;
  uint64_t steps_ = 0;  // debugger steps: scheduler steps (global) or dispatches (local)
  BatchSnapshot view_;  // lane_state() of the current state
  uint32_t live_ = 0;
  int32_t next_block_ = -1;
  std::vector<uint32_t> last_active_;
  mutable std::string error_;  // also set by a failed readback in snapshot()
  // Read on demand and kept until the state changes.
  mutable std::optional<BatchSnapshot> full_;
  mutable std::optional<RunResult> result_;
};

}  // namespace ab::debugger
