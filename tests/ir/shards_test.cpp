// Sharding (autobatch/shards.h): a batch cut into contiguous shards, each run on its own thread
// with RunOptions::first_lane, gives every sample's single run bit for bit on the interpreter and
// the VM (random draws included, lane counts that do not divide evenly included); a shard that
// fails has its lanes faulted with the reason while the others come back; emitted records reach
// on_emit with the batch's lane numbers. The VM given the shards' lanes steps as the shards
// do: its step trace is theirs taken in turn (merge_shards), and its checkpoints run on alike.
#include <doctest/doctest.h>

#include <atomic>
#include <set>

#include "autobatch/shards.h"
#include "cpu/interp.h"
#include "cpu/vm.h"
#include "passes/lower.h"
#include "support/result_compare.h"
#include "support/samples.h"

namespace ab::testing {
namespace {

TEST_CASE("shards: cut_lanes gives contiguous blocks in lane order, the first ones longer") {
  for (uint32_t lanes : {0u, 1u, 7u, 256u, 1000u})
    for (uint32_t shards : {1u, 2u, 3u, 8u}) {
      CAPTURE(lanes);
      CAPTURE(shards);
      const std::vector<LaneShard> cut = cut_lanes(lanes, shards);
      REQUIRE(cut.size() == shards);
      uint32_t next = 0;
      for (const LaneShard& s : cut) {
        CHECK(s.first == next);
        CHECK((s.lanes == lanes / shards || s.lanes == lanes / shards + 1));
        CHECK(s.lanes >= cut.back().lanes);
        next += s.lanes;
      }
      CHECK(next == lanes);
    }
}

RunResult run_whole(const Program& program, int entry, const LoweredProgram& lowered,
                    const Batch& batch, const RunOptions& options, bool vm) {
  return vm ? run_vm(lowered, batch, options) : run_interp(program, entry, batch, options);
}

// `batch` cut into `shards` shards, each run on its own thread (run_whole), merged.
RunResult run_cut(const Program& program, int entry, const LoweredProgram& lowered,
                  const Batch& batch, const RunOptions& options, bool vm, uint32_t shards,
                  uint32_t output_words) {
  return run_shards(batch, options, shards, output_words,
                    [&](uint32_t, const Batch& part, const RunOptions& o) -> Expected<RunResult> {
                      return run_whole(program, entry, lowered, part, o, vm);
                    });
}

TEST_CASE("shards: every sample cut into 2 and 3 shards gives the single run bit for bit") {
  for (const SampleCase& sample : all_samples()) {
    CAPTURE(sample.file);
    const Program program = load_sample(sample.file);
    const int entry = program.find_function(sample.entry);
    REQUIRE(entry >= 0);
    const LoweredProgram lowered = lower(program, entry);
    RunOptions options = sample.options;
    options.seed = 7;
    const Batch batch = make_batch(sample, 37);  // 37 = 19 + 18 = 13 + 12 + 12
    for (bool vm : {false, true}) {
      CAPTURE(vm);
      const RunResult whole = run_whole(program, entry, lowered, batch, options, vm);
      const uint32_t output_words =
          batch.lanes ? static_cast<uint32_t>(whole.outputs.size() / batch.lanes) : 0;
      for (uint32_t shards : {2u, 3u}) {
        CAPTURE(shards);
        const RunResult sharded =
            run_cut(program, entry, lowered, batch, options, vm, shards, output_words);
        CHECK(describe_difference(whole, sharded).empty());
        CHECK(sharded.emitted == whole.emitted);
        CHECK(sharded.records_emitted == whole.records_emitted);
        CHECK(sharded.stats.lanes == batch.lanes);
        CHECK(sharded.stats.lane_steps == whole.stats.lane_steps);
        CHECK(sharded.stats.calls == whole.stats.calls);
        CHECK(sharded.stats.max_stack_depth == whole.stats.max_stack_depth);
      }
    }
  }
}

TEST_CASE("shards: a failed shard's lanes fault with its reason and the others come back") {
  const SampleCase& sample = sample_case("random.ab");
  const Program program = load_sample(sample.file);
  const int entry = program.find_function(sample.entry);
  const LoweredProgram lowered = lower(program, entry);
  RunOptions options = sample.options;
  options.seed = 3;
  const Batch batch = make_batch(sample, 10);
  const RunResult whole = run_vm(lowered, batch, options);
  const uint32_t words = static_cast<uint32_t>(whole.outputs.size() / batch.lanes);
  const RunResult sharded =
      run_shards(batch, options, 3, words,
                 [&](uint32_t k, const Batch& part, const RunOptions& o) -> Expected<RunResult> {
                   if (k == 1) return Error{"allocation refused"};
                   return run_vm(lowered, part, o);
                 });
  // Shards: lanes 0-3, 4-6, 7-9.
  REQUIRE(sharded.faulted.size() == 10);
  REQUIRE(sharded.outputs.size() == whole.outputs.size());
  for (uint32_t lane = 0; lane < 10; ++lane) {
    CAPTURE(lane);
    const bool failed = lane >= 4 && lane <= 6;
    CHECK(sharded.faulted[lane] == (failed ? 1 : whole.faulted[lane]));
    for (uint32_t w = 0; w < words; ++w)
      CHECK(sharded.outputs[lane * words + w] == (failed ? 0u : whole.outputs[lane * words + w]));
  }
  REQUIRE(sharded.errors.size() == 3);
  for (uint32_t i = 0; i < 3; ++i) {
    CHECK(sharded.errors[i].lane == 4 + i);
    CHECK(sharded.errors[i].code == Fault::ShardFailed);
    CHECK(fault_text(sharded.errors[i]) == "shard_failed: allocation refused");
  }
}

std::vector<uint32_t> shard_sizes(uint32_t lanes, uint32_t shards) {
  std::vector<uint32_t> sizes;
  for (const LaneShard& s : cut_lanes(lanes, shards))
    sizes.push_back(s.lanes);
  return sizes;
}

void check_same_steps(const RunResult& want, const RunResult& got) {
  REQUIRE(got.trace.size() == want.trace.size());
  for (size_t i = 0; i < want.trace.size(); ++i) {
    CAPTURE(i);
    CHECK(got.trace[i].block == want.trace[i].block);
    CHECK(got.trace[i].active == want.trace[i].active);
  }
  CHECK(got.stats.steps == want.trace.size());
}

TEST_CASE("shards: the VM given shard lanes steps as the shards do, their traces taken in turn") {
  for (const SampleCase& sample : all_samples()) {
    CAPTURE(sample.file);
    const Program program = load_sample(sample.file);
    const int entry = program.find_function(sample.entry);
    const LoweredProgram lowered = lower(program, entry);
    RunOptions options = sample.options;
    options.seed = 7;
    options.record_trace = true;
    for (uint32_t lanes : {37u, 2u}) {  // 2 lanes on 3 shards: one is empty
      const Batch batch = make_batch(sample, lanes);
      const RunResult whole = run_vm(lowered, batch, options);
      const auto words = static_cast<uint32_t>(whole.outputs.size() / lanes);
      for (uint32_t shards : {2u, 3u}) {
        CAPTURE(lanes);
        CAPTURE(shards);
        VmRun run(lowered, batch, options, VmSchedule::OneBlockPerStep, shard_sizes(lanes, shards));
        run.step(UINT64_MAX);
        const RunResult stepped = run.result();
        CHECK(describe_difference(whole, stepped).empty());  // each lane's results unchanged
        CHECK(stepped.stats.lane_steps == whole.stats.lane_steps);
        const RunResult merged =
            run_cut(program, entry, lowered, batch, options, true, shards, words);
        check_same_steps(merged, stepped);
        CHECK(stepped.stats.block_executions == merged.stats.block_executions);
        CHECK(stepped.stats.block_lanes == merged.stats.block_lanes);
        CHECK(stepped.stats.calls == merged.stats.calls);
      }
    }
  }
}

TEST_CASE("shards: a checkpoint of a VM stepping shards runs on as the run it was taken from") {
  const SampleCase& sample = sample_case("fib.ab");
  const Program program = load_sample(sample.file);
  const LoweredProgram lowered = lower(program, program.find_function(sample.entry));
  RunOptions options = sample.options;
  options.record_trace = true;
  const std::vector<uint32_t> shards = shard_sizes(37, 3);
  const Batch batch = make_batch(sample, 37);
  VmRun run(lowered, batch, options, VmSchedule::OneBlockPerStep, shards);
  run.step(25);
  const VmCheckpoint at25 = run.checkpoint();
  CHECK(at25.shard_steps.size() == 3);
  run.step(UINT64_MAX);
  const RunResult end = run.result();
  REQUIRE(end.stats.steps > 40);
  run.restore(at25);  // the trace is cut back to step 25 and grows again
  run.step(UINT64_MAX);
  check_same_steps(end, run.result());
  VmRun fresh(lowered, batch, options, VmSchedule::OneBlockPerStep, shards);  // as a replay
  fresh.restore(at25);
  fresh.step(UINT64_MAX);
  const RunResult from25 = fresh.result();
  CHECK(describe_difference(end, from25).empty());
  REQUIRE(from25.trace.size() == end.trace.size() - 25);
  for (size_t i = 0; i < from25.trace.size(); ++i) {
    CHECK(from25.trace[i].block == end.trace[25 + i].block);
    CHECK(from25.trace[i].active == end.trace[25 + i].active);
  }

  CHECK(check_shard_lanes(shards, 37).ok());
  const Status wrong = check_shard_lanes(shards, 38);
  REQUIRE_FALSE(wrong.ok());
  CHECK(wrong.error() == "the shards' lanes (shard_lanes) add up to 37, but the batch has 38");
}

constexpr const char* kEmitSource = R"(
fn main(n: int) -> int {
    for i in 0..n {
        emit(i * 1000 + n);
    }
    return n;
}
)";

TEST_CASE("shards: records reach on_emit once each, with the batch's lane numbers") {
  const CompiledProgram c = compile_program(kEmitSource, "emit.ab");
  Batch batch;
  batch.lanes = 11;
  for (uint32_t lane = 0; lane < batch.lanes; ++lane)
    batch.inputs.resize(1), batch.inputs[0].push_back(lane);
  std::atomic<int> inside{0};
  bool overlapped = false;
  std::set<std::pair<uint32_t, uint32_t>> seen;
  RunOptions options;
  options.on_emit = [&](uint32_t lane, const uint32_t* record) {
    if (inside.fetch_add(1) != 0) overlapped = true;
    CHECK(seen.insert({lane, record[0]}).second);
    inside.fetch_sub(1);
  };
  const RunResult r =
      run_shards(batch, options, 3, 1,
                 [&](uint32_t, const Batch& part, const RunOptions& o) -> Expected<RunResult> {
                   return run_vm(c.lowered, part, o);
                 });
  CHECK_FALSE(overlapped);
  std::set<std::pair<uint32_t, uint32_t>> want;
  for (uint32_t n = 0; n < batch.lanes; ++n)
    for (uint32_t i = 0; i < n; ++i)
      want.insert({n, i * 1000 + n});
  CHECK(seen == want);
  CHECK(r.records_emitted == want.size());
  for (uint32_t lane = 0; lane < batch.lanes; ++lane)
    CHECK(r.outputs[lane] == lane);
}

}  // namespace
}  // namespace ab::testing
