// Sharding (autobatch/shards.h): a batch cut into contiguous shards, each run on its own thread
// with RunOptions::first_lane, gives every sample's single run bit for bit on the interpreter and
// the VM (random draws included, lane counts that do not divide evenly included); a shard that
// fails has its lanes faulted with the reason while the others come back; emitted records reach
// on_emit with the batch's lane numbers.
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
        const RunResult sharded = run_shards(
            batch, options, shards, output_words,
            [&](uint32_t, const Batch& part, const RunOptions& o) -> Expected<RunResult> {
              return run_whole(program, entry, lowered, part, o, vm);
            });
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
