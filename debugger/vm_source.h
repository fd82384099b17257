// ExecutionSource over the CPU VM (autobatch/vm.h): a live VmSession, checkpointed with its
// VmStates.
#pragma once

#include <memory>

#include "autobatch/vm.h"
#include "debugger/execution_source.h"

namespace ab::debugger {

struct VmSourceCheckpoint final : SourceCheckpoint {
  std::shared_ptr<const VmState> state;
  size_t bytes() const override { return state->bytes(); }
};

class VmSource final : public ExecutionSource {
 public:
  // A source over a new VmSession, or why it cannot be made (VmSession::create: a batch that
  // does not fit the module or the host's memory, a stack depth of 0, shards that do not add up
  // to the batch). `shard_lanes`: a sharded run's shards, stepped apart (a trace's).
  static Expected<std::unique_ptr<VmSource>> create(ProgramInfo program, const Batch& batch,
                                                    const RunOptions& options,
                                                    std::vector<uint32_t> shard_lanes = {});
  const std::vector<uint32_t>& shard_lanes() const { return run_->shard_lanes(); }

  const ProgramInfo& program() const override { return program_; }
  uint32_t lanes() const override { return run_->lanes(); }
  uint32_t stack_depth() const override { return run_->options().stack_depth; }
  uint64_t steps() const override { return run_->steps(); }
  bool done() const override { return run_->done(); }
  int32_t next_block() const override { return run_->next_block(); }
  uint64_t step(uint64_t n) override { return run_->step(n); }
  const std::string& error() const override { return error_; }
  const std::vector<int32_t>& lane_pcs() const override { return run_->lane_pcs(); }
  const std::vector<uint32_t>& lane_depths() const override { return run_->lane_depths(); }
  const std::vector<uint8_t>& lane_faulted() const override { return run_->lane_faulted(); }
  const std::vector<uint32_t>& registers() const override { return run_->registers(); }
  const std::vector<uint32_t>& last_active() const override { return run_->last_active(); }
  BatchSnapshot snapshot(uint32_t first, uint32_t count) const override {
    return run_->snapshot(first, count);
  }
  RunResult result() const override { return run_->result(); }
  std::unique_ptr<SourceCheckpoint> checkpoint() const override;
  // Takes a VmSourceCheckpoint. One that does not fit the session (never one this source made)
  // changes nothing and leaves the reason in error().
  void restore(const SourceCheckpoint& checkpoint) override;

  VmSession& vm() { return *run_; }

 private:
  VmSource(ProgramInfo program, std::unique_ptr<VmSession> run)
      : program_(std::move(program)), run_(std::move(run)) {}

  ProgramInfo program_;
  std::unique_ptr<VmSession> run_;
  std::string error_;
};

}  // namespace ab::debugger
