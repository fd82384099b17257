// The batched CPU VM: Radul et al. Algorithm 2 over the lowered (Figure 4) program. Each step
// picks one block (RunOptions::heuristic), runs it for every lane waiting there, and advances
// their program counters; per-variable stacks and the PC stack are explicit per lane. Its step
// trace is the reference the GPU's global schedule must reproduce exactly.
#pragma once

#include <memory>

#include "ir/run.h"

namespace ab {

// Picks the next block to run from the number of lanes waiting at each block (at least one is
// non-zero). The built-in heuristics are `pick_block(Heuristic, …)`; any function will do.
using BlockPicker = int32_t (*)(const std::vector<uint32_t>& waiting);
int32_t pick_min_pc(const std::vector<uint32_t>& waiting);
int32_t pick_most_lanes(const std::vector<uint32_t>& waiting);
BlockPicker block_picker(Heuristic h);

// A run that can be advanced step by step (for the debugger) or to the end.
class VmRun {
 public:
  // `program` and `batch` must outlive the run; `batch` must pass check_batch.
  VmRun(const LoweredProgram& program, const Batch& batch, const RunOptions& options);
  ~VmRun();
  VmRun(const VmRun&) = delete;
  VmRun& operator=(const VmRun&) = delete;

  void set_picker(BlockPicker picker);  // overrides options.heuristic
  bool done() const;
  // Runs up to `n` steps; returns the number run (less than n only when the run finished).
  uint64_t step(uint64_t n = 1);
  int32_t next_block() const;  // the block the next step will run; -1 when done
  uint64_t steps() const;
  BatchSnapshot snapshot() const;
  // Outputs, errors and statistics so far (outputs of unfinished lanes are zero).
  RunResult result() const;

 private:
  class State;
  std::unique_ptr<State> state_;
};

// Runs to completion.
RunResult run_vm(const LoweredProgram& program, const Batch& batch, const RunOptions& options);

}  // namespace ab
