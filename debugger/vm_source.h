// ExecutionSource over the CPU VM (ir/backends/vm.h): a live run, checkpointed with
// VmRun::checkpoint / restore.
#pragma once

#include "debugger/execution_source.h"
#include "ir/backends/vm.h"

namespace ab::debugger {

struct VmSourceCheckpoint final : SourceCheckpoint {
  VmCheckpoint state;
  size_t bytes() const override;
};

class VmSource final : public ExecutionSource {
 public:
  // `program.lowered` and `batch` must outlive the source.
  VmSource(ProgramInfo program, const Batch& batch, const RunOptions& options);

  const ProgramInfo& program() const override { return program_; }
  uint32_t lanes() const override { return lanes_; }
  uint32_t stack_depth() const override { return options_.stack_depth; }
  uint64_t steps() const override { return run_.steps(); }
  bool done() const override { return run_.done(); }
  int32_t next_block() const override { return run_.next_block(); }
  uint64_t step(uint64_t n) override { return run_.step(n); }
  const std::string& error() const override { return no_error_; }
  const std::vector<int32_t>& lane_pcs() const override { return run_.lane_pcs(); }
  const std::vector<uint32_t>& lane_depths() const override { return run_.lane_depths(); }
  const std::vector<uint8_t>& lane_faulted() const override { return run_.lane_faulted(); }
  const std::vector<uint32_t>& registers() const override { return run_.registers(); }
  const std::vector<uint32_t>& last_active() const override { return run_.last_active(); }
  BatchSnapshot snapshot(uint32_t first, uint32_t count) const override {
    return run_.snapshot(first, count);
  }
  RunResult result() const override { return run_.result(); }
  std::unique_ptr<SourceCheckpoint> checkpoint() const override;
  void restore(const SourceCheckpoint& checkpoint) override;

  VmRun& vm() { return run_; }

 private:
  ProgramInfo program_;
  RunOptions options_;
  uint32_t lanes_;
  VmRun run_;
  std::string no_error_;
};

}  // namespace ab::debugger
