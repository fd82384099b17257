// A Module's batch on the CPU VM (Radul et al. 2020, Algorithm 2) advanced one scheduler step at
// a time, its state readable between steps and saved and restored whole: what a debugger, a
// visualiser or a test that inspects a run step by step needs. Module::run_cpu runs the same VM
// to the end.
//
// Each step runs one block (RunOptions::heuristic picks it among the blocks lanes wait at) for
// every lane waiting there. Block indices are Module::blocks()' (one past the last: the exit PC
// of a finished lane); registers() and BatchSnapshot::registers hold every lane's variables in
// Module::variables()' layout.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "autobatch/batch.h"
#include "autobatch/expected.h"
#include "autobatch/module.h"

namespace ab {

// A session's complete state between two steps (a checkpoint): opaque, immutable, shareable.
// Stacks keep only each lane's live entries, so it costs memory in proportion to what the lanes
// use.
class VmState {
 public:
  struct Impl;
  explicit VmState(std::unique_ptr<Impl> impl);
  ~VmState();
  uint64_t step() const;                       // the steps run when it was taken
  size_t bytes() const;                        // the memory it holds
  const Impl& impl() const { return *impl_; }  // the library's own view

 private:
  std::unique_ptr<Impl> impl_;
};

// The block the VM runs next, given how many lanes wait at each block (at least one non-zero):
// the rule RunOptions::heuristic names. A host that tracks waiting lanes itself (a view of a
// device run) predicts the VM's choice with it.
int32_t pick_next_block(Heuristic heuristic, const std::vector<uint32_t>& waiting);

class VmSession {
 public:
  // Checks the batch (Module::check); the session keeps the module, the batch and the options.
  // `shard_lanes` (empty, or lane counts that add up to the batch's) steps the batch as its
  // contiguous shards of those many lanes run apart on devices or processes (autobatch/shards.h,
  // docs/embedding.md "Sharding"): each shard's scheduler picks from its own lanes, and the
  // shards take steps in turn (the live shard with the fewest steps so far, the first such).
  // Each lane's results are the same; a step is one shard's. A sharded run's trace is stepped so.
  static Expected<std::unique_ptr<VmSession>> create(std::shared_ptr<const Module> module,
                                                     Batch batch, RunOptions options = {},
                                                     std::vector<uint32_t> shard_lanes = {});
  ~VmSession();
  VmSession(const VmSession&) = delete;
  VmSession& operator=(const VmSession&) = delete;

  const Module& module() const;
  const Batch& batch() const;
  const RunOptions& options() const;
  const std::vector<uint32_t>& shard_lanes() const;
  uint32_t lanes() const;

  bool done() const;
  uint64_t steps() const;      // scheduler steps run so far
  int32_t next_block() const;  // the block the next step runs; -1 when done
  // Runs up to `n` steps; returns how many ran (fewer only when the run finished).
  uint64_t step(uint64_t n = 1);

  // Cheap views of the current state, valid until the next step or restore.
  const std::vector<int32_t>& lane_pcs() const;      // [lane]; the exit PC once finished
  const std::vector<uint32_t>& lane_depths() const;  // [lane] call depth
  const std::vector<uint8_t>& lane_faulted() const;  // [lane]
  const std::vector<uint32_t>& registers() const;    // [lane][Module::register_words()]
  const std::vector<uint32_t>& last_active() const;  // lanes that ran the last step, any order

  // Every lane's state, stacks included, or that of lanes [first, first + count).
  BatchSnapshot snapshot() const;
  BatchSnapshot snapshot(uint32_t first, uint32_t count) const;
  // Outputs, errors and statistics so far (the outputs of unfinished lanes are zero).
  RunResult result() const;

  std::shared_ptr<const VmState> checkpoint() const;
  // Whether `state` fits this session (see restore); the error says what does not.
  Status check(const VmState& state) const;
  // Goes back (or forward) to `state`, after which the session runs on exactly as the run it
  // was taken from did. The state is checked first: one that does not fit this module, batch
  // and stack depth (another program's, or a corrupt file's) is refused and nothing changes.
  Status restore(const VmState& state);

 private:
  struct Impl;
  explicit VmSession(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace ab
