// What every backend takes and gives back: a batch of per-lane inputs and uniform data, run
// options, and per-lane outputs, error records, statistics and (optionally) the step trace.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "ir/exec.h"
#include "ir/ir.h"
#include "shaders/ab_layout.h"

namespace ab {

struct Batch {
  uint32_t lanes = 0;
  // One entry per parameter of the entry function: lanes * words(param type) words, lane-major
  // (lane 0's words, then lane 1's, ...).
  std::vector<std::vector<uint32_t>> inputs;
  UniformData uniforms;  // one per declared uniform, words(uniform type) each
};

// The values are the GPU's heuristic ids (AB_HEURISTIC_* of shaders/ab_layout.h, pushed to the
// kernels as P.heuristic).
enum class Heuristic : uint8_t {
  // Run the waiting block with the smallest PC (the paper's choice).
  MinPc = AB_HEURISTIC_MIN_PC,
  // Run the block with the most lanes waiting (ties: smallest PC).
  MostLanes = AB_HEURISTIC_MOST_LANES,
};
const char* heuristic_name(Heuristic h);

// The step budget: whether a lane that has run `steps` blocks may run another (the rule of
// AB_STEP_ALLOWED, which the generated kernels apply too). Checked before every block; a lane
// out of budget faults with Fault::StepBudget at the block it waits at.
inline bool step_allowed(uint64_t steps, uint64_t max_steps) {
  return AB_STEP_ALLOWED(steps, max_steps);
}

struct RunOptions {
  uint64_t seed = 0;
  uint32_t stack_depth = 1024;  // max active call frames per lane, the entry function's included
  uint64_t max_steps = 10'000'000;  // max blocks a lane may run (lane-local steps)
  Heuristic heuristic = Heuristic::MinPc;
  bool record_trace = false;  // VM: keep the per-step trace
  // Receives each record a lane emits (`emit(x)`: words(emit type) words), in the lane's order;
  // records of different lanes interleave in any order. Called on the thread that runs the
  // backend. When empty, records are collected in RunResult::emitted instead.
  std::function<void(uint32_t lane, const uint32_t* record)> on_emit;
};

struct LaneError {
  uint32_t lane = 0;
  Fault code = Fault::None;
  std::string function;
  int line = 0;
  uint64_t step = 0;  // the lane's own step count when it faulted (same on every backend)
};

struct TraceStep {
  int32_t block = 0;
  uint32_t active = 0;  // lanes that ran the block
};

struct RunStats {
  uint32_t lanes = 0;
  uint64_t steps = 0;                      // scheduler steps (VM); for interp, the most lane steps
  uint64_t lane_steps = 0;                 // blocks run, summed over lanes
  uint64_t calls = 0;                      // function calls made, summed over lanes
  double utilization = 0;                  // mean over steps of active / live lanes (VM)
  std::vector<uint64_t> block_executions;  // per lowered block (VM)
  // Per lowered block (VM): the mean over the steps that ran it of active / live lanes, and the
  // lanes that ran it summed over those steps. For NUTS the log density's entry block gives the
  // utilization of the gradient evaluation (Radul et al. 2020, Figure 7). Checkpoints do not hold
  // them, so both are empty after a restore.
  std::vector<double> block_utilization;
  std::vector<uint64_t> block_lanes;
  uint32_t max_stack_depth = 0;  // deepest call depth reached by any lane
  double wall_seconds = 0;
};

struct RunResult {
  // lanes * words(result type), lane-major; a faulted lane's words are zero.
  std::vector<uint32_t> outputs;
  std::vector<uint8_t> faulted;   // per lane
  std::vector<LaneError> errors;  // sorted by lane
  RunStats stats;
  std::vector<TraceStep> trace;  // VM with record_trace
  // Per lane, the words of every record it emitted, in order (without RunOptions::on_emit).
  std::vector<std::vector<uint32_t>> emitted;
  uint64_t records_emitted = 0;  // summed over lanes, with or without on_emit
};

// Hands `words` (whole records of `record_words` words that `lane` emitted) to options.on_emit,
// or appends them to result.emitted[lane]; then clears `words`.
void deliver_emitted(const RunOptions& options, uint32_t record_words, uint32_t lane,
                     std::vector<uint32_t>& words, RunResult& result);

// Every lane's state between two steps, in the lowered program's terms. Variables are packed
// in lowered-var order with layout_words (ir/types.h); stacks are [lane][stack_capacity][words]
// (the capacity grows on demand up to stack_depth, so small recursions use little memory).
struct BatchSnapshot {
  uint64_t step = 0;
  uint32_t lanes = 0, stack_depth = 0, stack_capacity = 0;
  std::vector<int32_t> pc;          // [lane] the block the lane waits at; exit_pc() when finished
  std::vector<uint32_t> pc_depth;   // [lane] PC stack size = call depth
  std::vector<int32_t> pc_stack;    // [lane][stack_capacity] return blocks, valid below pc_depth
  std::vector<uint32_t> registers;  // [lane][words of every lowered variable]
  struct VarStack {
    VarId var = -1;
    std::vector<uint32_t> depth;  // [lane]
    std::vector<uint32_t> words;  // [lane][stack_capacity][words(var)]
    bool operator==(const VarStack&) const = default;
  };
  std::vector<VarStack> stacks;  // one per Stacked variable, in variable order
  std::vector<uint64_t> lane_steps;
  std::vector<uint8_t> faulted;
  bool operator==(const BatchSnapshot&) const = default;
};

// Checks the batch against the entry function's signature and the program's uniforms; returns
// an empty string if it fits, else a message naming the first input or uniform that does not.
std::string check_batch(const Program& program, int entry, const Batch& batch);

}  // namespace ab
