// Cutting a batch into shards of lanes and putting their results back together
// (include/autobatch/shards.h).
#include "autobatch/shards.h"

#include <algorithm>
#include <thread>

namespace ab {

std::vector<LaneShard> cut_lanes(uint32_t lanes, uint32_t shards) {
  std::vector<LaneShard> out;
  if (shards == 0) return out;
  const uint32_t base = lanes / shards, longer = lanes % shards;
  uint32_t first = 0;
  for (uint32_t k = 0; k < shards; ++k) {
    const uint32_t n = base + (k < longer ? 1 : 0);
    out.push_back({first, n});
    first += n;
  }
  return out;
}

Batch shard_batch(const Batch& batch, LaneShard shard) {
  Batch out;
  out.lanes = shard.lanes;
  out.uniforms = batch.uniforms;
  for (const std::vector<uint32_t>& input : batch.inputs) {
    const size_t words = batch.lanes ? input.size() / batch.lanes : 0;
    const auto from = input.begin() + static_cast<ptrdiff_t>(words * shard.first);
    out.inputs.emplace_back(from, from + static_cast<ptrdiff_t>(words * shard.lanes));
  }
  return out;
}

RunOptions shard_options(const RunOptions& options, LaneShard shard, std::mutex* callbacks) {
  RunOptions out = options;
  out.first_lane = options.first_lane + shard.first;
  if (options.on_emit)
    out.on_emit = [callbacks, on_emit = options.on_emit, first = shard.first](
                      uint32_t lane, const uint32_t* record) {
      std::lock_guard lock(*callbacks);
      on_emit(first + lane, record);
    };
  if (options.should_stop)
    out.should_stop = [callbacks, should_stop = options.should_stop] {
      std::lock_guard lock(*callbacks);
      return should_stop();
    };
  return out;
}

RunResult failed_shard(LaneShard shard, uint32_t output_words, const std::string& reason) {
  RunResult r;
  r.outputs.assign(size_t{shard.lanes} * output_words, 0);
  r.faulted.assign(shard.lanes, 1);
  for (uint32_t lane = 0; lane < shard.lanes; ++lane) {
    LaneError e;
    e.lane = lane;
    e.code = Fault::ShardFailed;
    e.detail = reason;
    r.errors.push_back(std::move(e));
  }
  r.stats.lanes = shard.lanes;
  return r;
}

namespace {

// Per-block statistics summed, their utilizations weighted by the executions behind them.
void merge_blocks(const RunStats& part, RunStats& into, std::vector<double>& weighted) {
  const size_t blocks = part.block_executions.size();
  if (into.block_executions.size() < blocks) {
    into.block_executions.resize(blocks, 0);
    into.block_lanes.resize(blocks, 0);
    weighted.resize(blocks, 0.0);
  }
  for (size_t b = 0; b < blocks; ++b) {
    into.block_executions[b] += part.block_executions[b];
    if (b < part.block_lanes.size()) into.block_lanes[b] += part.block_lanes[b];
    if (b < part.block_utilization.size())
      weighted[b] += part.block_utilization[b] * static_cast<double>(part.block_executions[b]);
  }
}

void merge_stats(const std::vector<RunResult>& results, RunStats& into) {
  std::vector<double> weighted;
  double utilization = 0;
  bool has_block_utilization = false;
  into.threads = 0;
  for (const RunResult& r : results) {
    const RunStats& s = r.stats;
    into.lanes += s.lanes;
    into.steps += s.steps;
    into.lane_steps += s.lane_steps;
    into.calls += s.calls;
    utilization += s.utilization * static_cast<double>(s.steps);
    merge_blocks(s, into, weighted);
    has_block_utilization = has_block_utilization || !s.block_utilization.empty();
    into.max_stack_depth = std::max(into.max_stack_depth, s.max_stack_depth);
    into.wall_seconds = std::max(into.wall_seconds, s.wall_seconds);
    into.threads += s.threads;
    into.threads_refused += s.threads_refused;
  }
  into.threads = std::max(into.threads, 1u);
  if (into.steps) into.utilization = utilization / static_cast<double>(into.steps);
  if (!has_block_utilization) return;
  into.block_utilization.assign(into.block_executions.size(), 0.0);
  for (size_t b = 0; b < weighted.size(); ++b)
    if (into.block_executions[b])
      into.block_utilization[b] = weighted[b] / static_cast<double>(into.block_executions[b]);
}

// The shards' step traces as one: their steps taken in turn (shard 0's first, shard 1's first,
// ..., then every shard's second), a shard that has ended skipped, which is how the VM steps
// given the shards' lanes (VmRun, VmSession::create).
std::vector<TraceStep> interleave_traces(const std::vector<RunResult>& results) {
  std::vector<TraceStep> merged;
  size_t longest = 0;
  for (const RunResult& r : results) {
    longest = std::max(longest, r.trace.size());
    merged.reserve(merged.size() + r.trace.size());
  }
  for (size_t step = 0; step < longest; ++step)
    for (const RunResult& r : results)
      if (step < r.trace.size()) merged.push_back(r.trace[step]);
  return merged;
}

}  // namespace

RunResult merge_shards(const std::vector<LaneShard>& shards, std::vector<RunResult> results) {
  RunResult merged;
  const bool emitted = std::any_of(results.begin(), results.end(),
                                   [](const RunResult& r) { return !r.emitted.empty(); });
  for (size_t k = 0; k < shards.size() && k < results.size(); ++k) {
    RunResult& r = results[k];
    merged.outputs.insert(merged.outputs.end(), r.outputs.begin(), r.outputs.end());
    r.faulted.resize(shards[k].lanes, 0);  // a stopped run may leave them short
    merged.faulted.insert(merged.faulted.end(), r.faulted.begin(), r.faulted.end());
    for (LaneError& e : r.errors) {
      e.lane += shards[k].first;
      merged.errors.push_back(std::move(e));
    }
    if (emitted) {
      r.emitted.resize(shards[k].lanes);
      for (std::vector<uint32_t>& lane : r.emitted)
        merged.emitted.push_back(std::move(lane));
    }
    merged.records_emitted += r.records_emitted;
    merged.stopped = merged.stopped || r.stopped;
  }
  merge_stats(results, merged.stats);
  merged.trace = interleave_traces(results);
  return merged;
}

RunResult run_shards(const Batch& batch, const RunOptions& options, uint32_t shards,
                     uint32_t output_words, const ShardRunner& run_shard) {
  const std::vector<LaneShard> cut = cut_lanes(batch.lanes, shards);
  std::vector<RunResult> results(cut.size());
  std::mutex callbacks;
  auto run_one = [&](uint32_t k) {
    if (cut[k].lanes == 0) return;  // more shards than lanes: nothing to run
    Expected<RunResult> ran = [&]() -> Expected<RunResult> {
      try {
        return run_shard(k, shard_batch(batch, cut[k]), shard_options(options, cut[k], &callbacks));
      } catch (const std::exception& e) {  // a thread must not end the process
        return Error{e.what()};
      }
    }();
    results[k] = ran ? std::move(*ran) : failed_shard(cut[k], output_words, ran.error());
  };
  std::vector<std::thread> threads;
  for (uint32_t k = 1; k < cut.size(); ++k)
    threads.emplace_back(run_one, k);
  if (!cut.empty()) run_one(0);
  for (std::thread& t : threads)
    t.join();
  return merge_shards(cut, std::move(results));
}

}  // namespace ab
