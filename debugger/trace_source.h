// Recording traces from a run, and replaying them.
//
// record_trace steps a Timeline over steps [first, last) and writes a trace of each step's block
// and active lanes, with a VM state every `checkpoint_interval` steps (the first at `first`);
// `shard_lanes` names the shards the source steps apart (a sharded trace's, replayed).
//
// TraceSource is an ExecutionSource over a recorded trace: it restores the trace's checkpoints
// into a CPU VM and replays forward, checking each step against the record, so it needs no GPU
// and knows the whole run's utilization up front. It ends at the trace's last recorded step.
#pragma once

#include <memory>
#include <optional>

#include "autobatch/trace.h"
#include "debugger/timeline.h"
#include "debugger/vm_source.h"

namespace ab::debugger {

// Steps [first, last) with a checkpoint every checkpoint_interval (autobatch/trace.h).
using TraceRange = TraceOptions;

// `timeline`'s source must be a VmSource or a TraceSource. The timeline is left at the range's
// end. `batch` and `options` are the run's (stored in the trace). Writes the trace to `path`
// (TraceWriter) only once the whole range was recorded.
Status record_trace(Timeline& timeline, const Batch& batch, const RunOptions& options,
                    const TraceRange& range, const std::string& path);

class TraceSource final : public ExecutionSource {
 public:
  // Checks the trace against the program (block count, lanes, checkpoint shapes); returns the
  // source or a message.
  static Expected<std::unique_ptr<TraceSource>> open(std::shared_ptr<const TraceFile> trace,
                                                     ProgramInfo program);

  const ProgramInfo& program() const override { return vm_->program(); }
  uint32_t lanes() const override { return vm_->lanes(); }
  uint32_t stack_depth() const override { return vm_->stack_depth(); }
  uint64_t steps() const override { return vm_->steps(); }
  bool done() const override;
  int32_t next_block() const override;
  uint64_t step(uint64_t n) override;
  const std::string& error() const override { return error_; }
  const std::vector<int32_t>& lane_pcs() const override { return vm_->lane_pcs(); }
  const std::vector<uint32_t>& lane_depths() const override { return vm_->lane_depths(); }
  const std::vector<uint8_t>& lane_faulted() const override { return vm_->lane_faulted(); }
  const std::vector<uint32_t>& registers() const override { return vm_->registers(); }
  const std::vector<uint32_t>& last_active() const override { return vm_->last_active(); }
  BatchSnapshot snapshot(uint32_t first, uint32_t count) const override {
    return vm_->snapshot(first, count);
  }
  RunResult result() const override { return vm_->result(); }
  std::unique_ptr<SourceCheckpoint> checkpoint() const override { return vm_->checkpoint(); }
  void restore(const SourceCheckpoint& c) override;

  std::string describe() const override { return "trace, replayed on the cpu vm"; }
  bool knows_future() const override { return true; }
  uint64_t total_steps() const override { return trace_->end_step(); }
  uint32_t recorded_active(uint64_t step) const override;
  int32_t recorded_block(uint64_t step) const override;
  const TraceFile& trace() const { return *trace_; }

 private:
  TraceSource(std::shared_ptr<const TraceFile> trace, std::unique_ptr<VmSource> vm)
      : trace_(std::move(trace)), vm_(std::move(vm)) {}

  std::shared_ptr<const TraceFile> trace_;
  std::unique_ptr<VmSource> vm_;
  std::string error_;
};

}  // namespace ab::debugger
