// The batched CPU VM: Radul et al. Algorithm 2 over the lowered (Figure 4) program. Each step
// picks one block (RunOptions::heuristic), runs it for every lane waiting there, and advances
// their program counters; per-variable stacks and the PC stack are explicit per lane. Its step
// trace is the reference the GPU's global schedule must reproduce exactly.
#pragma once

#include <memory>

#include "ir/run.h"

namespace ab {

// Picks the next block to run from the number of lanes waiting at each block (at least one is
// non-zero). The built-in heuristics are `pick_min_pc` and `pick_most_lanes`, and
// `block_picker(Heuristic)` returns the one a Heuristic names; any function will do.
using BlockPicker = int32_t (*)(const std::vector<uint32_t>& waiting);
int32_t pick_min_pc(const std::vector<uint32_t>& waiting);
int32_t pick_most_lanes(const std::vector<uint32_t>& waiting);
BlockPicker block_picker(Heuristic h);

// A run's complete state between two steps: enough for VmRun::restore to continue exactly as
// the run did. Stacks keep only each lane's live entries (concatenated lane by lane), so a
// checkpoint costs memory in proportion to what the lanes use, not to stack_depth.
struct VmCheckpoint {
  uint64_t step = 0;
  std::vector<int32_t> pc;          // [lane]
  std::vector<uint32_t> pc_depth;   // [lane]
  std::vector<int32_t> pc_stack;    // lane 0's pc_depth[0] entries, then lane 1's, ...
  std::vector<uint32_t> registers;  // [lane][words of every lowered variable]
  struct VarStack {
    std::vector<uint32_t> depth;  // [lane]
    std::vector<uint32_t> words;  // lane 0's depth[0] * words(var) words, then lane 1's, ...
    bool operator==(const VarStack&) const = default;
  };
  std::vector<VarStack> stacks;                    // one per Stacked variable, in variable order
  std::vector<uint64_t> lane_steps, random_draws;  // [lane]
  std::vector<uint8_t> faulted;                    // [lane]
  std::vector<LaneError> errors;                   // in the order they happened
  uint64_t calls = 0;
  std::vector<uint64_t> block_executions;
  uint32_t max_stack_depth = 1;
  double utilization_sum = 0;
  std::vector<uint64_t> shard_steps;  // [shard] steps taken, when the run is sharded
};

// How a VmRun schedules its steps.
enum class VmSchedule : uint8_t {
  // Algorithm 2 exactly: each step runs one block for every lane waiting there. What a recorded
  // trace, the debugger, VmSession and checkpoints see, and what the Vulkan global schedule
  // reproduces.
  OneBlockPerStep,
  // As OneBlockPerStep, except that a block whose terminator can jump back to itself (a rotated
  // loop's body) runs for its waiting lanes a tile at a time (kLoopTileLanes lanes), each tile
  // repeating the block until none of its lanes stays there (or kLoopTileIterations have run),
  // then the next tile: the tile's variables stay in cache across the iterations. Each lane runs
  // the same operations in the same order as under OneBlockPerStep, so outputs, faults, draws,
  // emitted records (each lane's, in order) and lane step counts are equal; only the order in
  // which lanes take their turns differs. One call of such a step counts as many steps as its
  // longest-running lane iterated, and RunStats count each iteration as one step of every lane
  // still in the loop: the figures Algorithm 2 gives when the min-PC rule repeats the loop's
  // block until it empties (its lanes leave to later blocks, as a rotated loop's do).
  LoopTiles,
};
// Lanes per tile and iterations per tile and step under VmSchedule::LoopTiles. A tile's lanes'
// words of a variable fill two cache lines, and the data loop of the 100-d regression keeps
// about 25 KB of a 32-lane tile's state live, within L1. Measured on the NUTS models, no tile size
// (8 to all lanes) ran faster than one block per step, and small ones ran much slower: each
// iteration pays every op's fixed cost per tile (docs/nuts.md, "Loop tiles"). The iteration cap
// bounds the time one step takes (run_vm polls RunOptions::should_stop between steps).
constexpr uint32_t kLoopTileLanes = 32;
constexpr uint32_t kLoopTileIterations = 1024;

// A run that can be advanced step by step (for the debugger) or to the end.
class VmRun {
 public:
  // `program` and `batch` must outlive the run; `batch` must pass check_batch. `shard_lanes`
  // (empty, or lane counts that add up to the batch's: check_shard_lanes) steps the batch as its
  // contiguous shards of those many lanes would run apart, on devices or processes (autobatch/
  // shards.h): each shard's own Algorithm 2 over its own lanes, the shards taking steps in turn
  // (the live shard with the fewest steps so far, the first such). Each lane's results are the
  // same; the step trace is merge_shards' of the shards' traces. Steps are one block each
  // (`schedule` is taken as OneBlockPerStep).
  VmRun(const LoweredProgram& program, const Batch& batch, const RunOptions& options,
        VmSchedule schedule = VmSchedule::OneBlockPerStep,
        const std::vector<uint32_t>& shard_lanes = {});
  ~VmRun();
  VmRun(const VmRun&) = delete;
  VmRun& operator=(const VmRun&) = delete;

  void set_picker(BlockPicker picker);  // overrides options.heuristic
  bool done() const;
  // Runs steps until `n` have run or the run finished; returns the number run (less than n
  // only when the run finished; more under VmSchedule::LoopTiles, whose steps count their
  // iterations).
  uint64_t step(uint64_t n = 1);
  int32_t next_block() const;  // the block the next step will run; -1 when done
  uint64_t steps() const;
  BatchSnapshot snapshot() const;
  // Outputs, errors and statistics so far (outputs of unfinished lanes are zero).
  RunResult result() const;

  // Cheap views of the current state for the debugger; valid until the next step or restore.
  const std::vector<int32_t>& lane_pcs() const;      // [lane]; exit_pc() once finished
  const std::vector<uint32_t>& lane_depths() const;  // [lane] call depth
  const std::vector<uint8_t>& lane_faulted() const;  // [lane]
  const std::vector<uint32_t>& registers() const;    // [lane][words], layout_words order
  const std::vector<uint32_t>& last_active() const;  // lanes that ran the last step (any order)
  // The state of lanes [first, first + count) only (step, stack_depth etc. as snapshot()).
  BatchSnapshot snapshot(uint32_t first, uint32_t count) const;
  // Saves / restores the whole run. `restore` takes a checkpoint of a run of the same program,
  // batch and options; the run then continues exactly as it did after the checkpoint. The
  // step trace (options.record_trace) is cut back to the checkpoint's step.
  VmCheckpoint checkpoint() const;
  void restore(const VmCheckpoint& checkpoint);

 private:
  class State;
  std::unique_ptr<State> state_;
};

// Host memory a VmRun allocates per lane before its first step (registers, PC and variable
// stacks at their first capacity, the scheduler's lists, the result): check_host_memory's input.
uint64_t vm_bytes_per_lane(const LoweredProgram& program, const RunOptions& options);

// Ok when `shard_lanes` is empty or adds up to `lanes`, else says what does not.
Status check_shard_lanes(const std::vector<uint32_t>& shard_lanes, uint32_t lanes);

// Runs to completion (or until options.should_stop), with VmSchedule::LoopTiles where
// options.loop_tiles asks for it and no trace is recorded.
RunResult run_vm(const LoweredProgram& program, const Batch& batch, const RunOptions& options);

}  // namespace ab
