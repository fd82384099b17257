// What every backend takes and gives back, as plain values: a batch of per-lane inputs and
// uniform data, run options, and per-lane outputs, error records, statistics and (optionally) the
// step trace. Shared by the CPU backends (ir/), the Vulkan engine and host applications; needs no
// header outside include/autobatch/.
//
// Every value is a flat run of 32-bit words: bool, int, uint and float take one word (floats
// bit-cast, bools 0 or 1), an array T[N] N * words(T), a struct the sum of its fields in
// declaration order (Module::inputs() gives each value's word count).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace ab {

// One entry per declared uniform, in declaration order: the uniform's words.
using UniformData = std::vector<std::vector<uint32_t>>;

struct Batch {
  uint32_t lanes = 0;
  // One entry per parameter of the entry function: lanes * words(param type) words, lane-major
  // (lane 0's words, then lane 1's, ...).
  std::vector<std::vector<uint32_t>> inputs;
  UniformData uniforms;  // one per declared uniform, words(uniform type) each
};

enum class Heuristic : uint8_t {
  MinPc,      // run the waiting block with the smallest PC (the paper's choice)
  MostLanes,  // run the block with the most lanes waiting (ties: smallest PC)
};
const char* heuristic_name(Heuristic h);  // "min-pc", "most-lanes"

struct RunOptions {
  uint64_t seed = 0;
  // The global index of this batch's lane 0 when the batch is one shard of a larger one (lanes
  // cut over devices or processes, docs/embedding.md "Sharding"): lane L draws the random stream
  // of lane first_lane + L, so a lane's draws do not depend on the split. first_lane + lanes
  // must fit in 32 bits. Outputs, faults and emitted records still count lanes from 0.
  uint32_t first_lane = 0;
  uint32_t stack_depth = 1024;  // max active call frames per lane, the entry function's included
  uint64_t max_steps = 10'000'000;  // max blocks a lane may run (lane-local steps)
  Heuristic heuristic = Heuristic::MinPc;
  bool record_trace = false;  // VM: keep the per-step trace
  // VM: threads that run a big step's lanes side by side (0: one per core). Results do not
  // depend on it: lanes are independent within a step. More than the cores this process may
  // use (usable_cores()) runs as that many: more would only wait for each other. When the system
  // refuses to start some (a thread limit, the address space), the run goes on with those that
  // started (RunStats::threads says how many ran).
  uint32_t threads = 0;
  // VM, in a run to the end (run_cpu): a block that loops back to itself (a rotated `for` loop's
  // body) runs to its exit for a tile of 32 lanes at a time, so that the tile's variables stay
  // in cache across the iterations. Each lane's operations, outputs, faults, draws and step
  // counts are the same either way; the scheduler's steps are not Algorithm 2's (cpu/
  // vm.h, VmSchedule::LoopTiles). A recorded trace (record_trace) and the step-by-step runs
  // (VmSession, the debugger) always take Algorithm 2's steps, one block per step. Off by
  // default: on the NUTS models it measured no faster than one block per step, and up to 20%
  // slower (docs/nuts.md, "Loop tiles").
  bool loop_tiles = false;
  // Receives each record a lane emits (`emit(x)`: words(emit type) words), in the lane's order;
  // records of different lanes interleave in any order. Called on the thread that runs the
  // backend. When empty, records are collected in RunResult::emitted instead.
  std::function<void(uint32_t lane, const uint32_t* record)> on_emit;
  // Polled while the run goes on, on the thread that runs it: the VM every 64 steps, the
  // interpreter every 65,536 blocks of a lane and between lanes, VulkanRun::run between rounds.
  // Returning true stops the run at that step boundary (RunResult::stopped); a cancel button,
  // a Ctrl-C or a failed write of streamed records. Also a place for a progress line.
  std::function<bool()> should_stop;
};

// Per-lane faults (the same on every backend). A faulted lane stops; the others go on.
enum class Fault : uint8_t {
  None,
  StackOverflow,   // more active calls than RunOptions::stack_depth
  DivisionByZero,  // integer division or remainder by zero
  IndexOutOfRange,
  AssertFailed,
  StepBudget,  // more blocks run than RunOptions::max_steps
  // The device or process that ran the lane's shard failed (a lost device, a refused
  // allocation): LaneError::detail says why. Only a sharded run gives it (run_shards).
  ShardFailed
};
const char* fault_name(Fault f);  // "stack_overflow", ...

struct LaneError {
  uint32_t lane = 0;
  Fault code = Fault::None;
  std::string function;
  int line = 0;
  uint64_t step = 0;  // the lane's own step count when it faulted (same on every backend)
  // What went wrong, in the source's words, where the code alone does not say: for
  // index_out_of_range, "index 25 out of range for q: float[25]". Empty otherwise.
  std::string detail;
};
// fault_name(e.code), then ": " and e.detail when there is one.
std::string fault_text(const LaneError& e);

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
  // VM: the threads its big steps ran on, the caller's included (1 when no step was big enough
  // to share), and how many more RunOptions::threads (clamped to the cores) asked for but the
  // system refused to start.
  uint32_t threads = 1, threads_refused = 0;
};

// The cores this process may run on (its CPU affinity): RunOptions::threads' upper bound.
unsigned usable_cores();

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
  // RunOptions::should_stop ended the run early: lanes that had not finished have zero outputs
  // and are not counted as faulted; the records they emitted were delivered.
  bool stopped = false;
};

// Every lane's state between two steps, in the lowered program's terms. Variables are packed
// in lowered-var order (each variable's words in turn); stacks are [lane][stack_capacity][words]
// (the capacity grows on demand up to stack_depth, so small recursions use little memory).
struct BatchSnapshot {
  uint64_t step = 0;
  uint32_t lanes = 0, stack_depth = 0, stack_capacity = 0;
  std::vector<int32_t> pc;          // [lane] the block the lane waits at; the exit PC when finished
  std::vector<uint32_t> pc_depth;   // [lane] PC stack size = call depth
  std::vector<int32_t> pc_stack;    // [lane][stack_capacity] return blocks, valid below pc_depth
  std::vector<uint32_t> registers;  // [lane][words of every lowered variable]
  struct VarStack {
    int32_t var = -1;             // the lowered variable
    std::vector<uint32_t> depth;  // [lane]
    std::vector<uint32_t> words;  // [lane][stack_capacity][words(var)]
    bool operator==(const VarStack&) const = default;
  };
  std::vector<VarStack> stacks;  // one per Stacked variable, in variable order
  std::vector<uint64_t> lane_steps;
  std::vector<uint8_t> faulted;
  bool operator==(const BatchSnapshot&) const = default;
};

}  // namespace ab
