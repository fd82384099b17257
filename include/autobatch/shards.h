// One batch cut into shards of contiguous lanes, each run on its own device, thread or process,
// and the shards' results put back together as one run's (docs/embedding.md, "Sharding"). Lanes
// are independent and a shard runs with RunOptions::first_lane set to its first lane, so every
// lane's outputs, faults, random draws and emitted records are the same whatever the split: bit
// for bit those of one run of the whole batch. What a split changes is only what belongs to a
// scheduler: the step trace (each shard's steps, taken in turn: the VM's under
// TraceOptions::shard_lanes) and the per-step statistics (summed, below).
#pragma once

#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "autobatch/batch.h"
#include "autobatch/expected.h"

namespace ab {

struct LaneShard {
  uint32_t first = 0;  // the batch's index of the shard's lane 0
  uint32_t lanes = 0;
};

// `lanes` cut into `shards` contiguous blocks in lane order, as even as can be: the first
// lanes % shards blocks have one lane more. With more shards than lanes some are empty.
std::vector<LaneShard> cut_lanes(uint32_t lanes, uint32_t shards);

// The shard's lanes of `batch` (inputs sliced, uniforms copied).
Batch shard_batch(const Batch& batch, LaneShard shard);

// `options` for a shard run on its own thread: first_lane moved by the shard's first lane, and
// on_emit and should_stop (when given) called under `callbacks` (one mutex for all the shards,
// so the caller's callbacks never run twice at once) with on_emit's lane made the batch's.
RunOptions shard_options(const RunOptions& options, LaneShard shard, std::mutex* callbacks);

// What a shard that could not run (its device lost, an allocation refused, its process gone)
// gives back: every lane faulted with Fault::ShardFailed and `reason` as the detail, zero
// outputs (`output_words` per lane).
RunResult failed_shard(LaneShard shard, uint32_t output_words, const std::string& reason);

// The shards' results (results[k] for shards[k], in lane order) as one run's: outputs, faulted
// flags and emitted records in lane order, errors with the batch's lane numbers, `stopped` if
// any shard stopped. Statistics: lanes, steps, lane steps, calls, block executions, block lanes,
// threads summed; utilizations weighted by the steps that make them; the deepest stack and the
// longest wall time. The step trace: the shards' steps in turn (shard 0's first step, shard 1's
// first, ..., then their second steps; a shard that has ended is skipped), as the VM steps
// given the shards' lanes (TraceOptions::shard_lanes, VmSession::create).
RunResult merge_shards(const std::vector<LaneShard>& shards, std::vector<RunResult> results);

// Runs `batch` cut into `shards` shards, each by run_shard(k, its batch, its options) on a
// thread of its own (shard 0 on the caller's), and merges the results. A shard whose run
// returns an Error has its lanes faulted with that message (failed_shard); the others come back.
// `output_words`: the entry function's result words (Module::output().words).
using ShardRunner =
    std::function<Expected<RunResult>(uint32_t shard, const Batch& batch, const RunOptions&)>;
RunResult run_shards(const Batch& batch, const RunOptions& options, uint32_t shards,
                     uint32_t output_words, const ShardRunner& run_shard);

}  // namespace ab
