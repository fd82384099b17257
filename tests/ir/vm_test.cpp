// The VM as a steppable run: stepping in pieces reaches the same states as stepping in one go,
// custom block pickers plug in, and the statistics add up.
#include <doctest/doctest.h>

#include "cpu/interp.h"
#include "cpu/vm.h"
#include "lang/frontend.h"
#include "passes/lower.h"
#include "support/samples.h"

namespace {

struct Fixture {
  ab::Program program;
  ab::LoweredProgram lowered;
  ab::Batch batch;
  Fixture() {
    program = ab::testing::load_sample("fib.ab");
    lowered = ab::lower(program, program.find_function("main"));
    batch.lanes = 16;
    batch.inputs.resize(1);
    for (uint32_t lane = 0; lane < batch.lanes; ++lane)
      batch.inputs[0].push_back((lane * 7) % 12);
  }
};

// Picks the largest PC with lanes waiting: a deliberately odd but valid heuristic.
int32_t pick_max_pc(const std::vector<uint32_t>& waiting) {
  for (size_t b = waiting.size(); b-- > 0;)
    if (waiting[b]) return static_cast<int32_t>(b);
  return -1;
}

}  // namespace

TEST_CASE("stepping in pieces reaches the same state as stepping at once") {
  Fixture f;
  ab::VmRun one_by_one(f.lowered, f.batch, {});
  ab::VmRun at_once(f.lowered, f.batch, {});
  for (int i = 0; i < 37; ++i)
    CHECK(one_by_one.step(1) == 1);
  CHECK(at_once.step(37) == 37);
  CHECK(one_by_one.snapshot() == at_once.snapshot());
  CHECK(one_by_one.snapshot().step == 37);
  // Running on differs from the snapshot taken before.
  const ab::BatchSnapshot before = at_once.snapshot();
  at_once.step(1);
  CHECK_FALSE(at_once.snapshot() == before);
}

TEST_CASE("a finished run stops stepping and reports every lane") {
  Fixture f;
  ab::VmRun run(f.lowered, f.batch, {});
  const uint64_t taken = run.step(UINT64_MAX);
  CHECK(run.done());
  CHECK(run.next_block() == -1);
  CHECK(run.step(5) == 0);
  CHECK(run.steps() == taken);
  const ab::RunResult r = run.result();
  const ab::RunResult expected =
      ab::run_interp(f.program, f.program.find_function("main"), f.batch, {});
  CHECK(r.outputs == expected.outputs);
  for (int32_t pc : run.snapshot().pc)
    CHECK(pc == f.lowered.exit_pc());
}

TEST_CASE("next_block is the block the next step runs") {
  Fixture f;
  ab::RunOptions options;
  options.record_trace = true;
  ab::VmRun run(f.lowered, f.batch, options);
  for (int i = 0; i < 50 && !run.done(); ++i) {
    const int32_t next = run.next_block();
    run.step(1);
    CHECK(run.result().trace.back().block == next);
  }
}

TEST_CASE("any block picker gives the same results; utilization depends on it") {
  Fixture f;
  ab::RunOptions options;
  options.record_trace = true;
  ab::VmRun custom(f.lowered, f.batch, options);
  custom.set_picker(pick_max_pc);
  custom.step(UINT64_MAX);
  const ab::RunResult a = custom.result();
  const ab::RunResult b = ab::run_vm(f.lowered, f.batch, options);
  CHECK(a.outputs == b.outputs);
  CHECK(a.stats.lane_steps == b.stats.lane_steps);
  // The picker really was used: the schedules differ.
  auto blocks = [](const ab::RunResult& r) {
    std::vector<int32_t> out;
    for (const ab::TraceStep& s : r.trace)
      out.push_back(s.block);
    return out;
  };
  CHECK(blocks(a) != blocks(b));
}

TEST_CASE("block executions sum to the steps; utilization is active over live lanes") {
  Fixture f;
  ab::RunOptions options;
  options.record_trace = true;
  const ab::RunResult r = ab::run_vm(f.lowered, f.batch, options);
  uint64_t executions = 0;
  for (uint64_t e : r.stats.block_executions)
    executions += e;
  CHECK(executions == r.stats.steps);
  // With one lane every step runs every live lane.
  ab::Batch single = f.batch;
  single.lanes = 1;
  single.inputs[0].resize(1);
  CHECK(ab::run_vm(f.lowered, single, {}).stats.utilization == doctest::Approx(1.0));
  CHECK(r.stats.utilization < 1.0);
}

TEST_CASE("per-block statistics add up to the trace; a restored run has none") {
  Fixture f;
  ab::RunOptions options;
  options.record_trace = true;
  const ab::RunResult r = ab::run_vm(f.lowered, f.batch, options);
  const size_t blocks = f.lowered.blocks.size();
  REQUIRE(r.stats.block_lanes.size() == blocks);
  REQUIRE(r.stats.block_utilization.size() == blocks);
  // From the trace: lanes per block, and the mean share of live lanes per block.
  std::vector<uint64_t> lanes(blocks, 0);
  for (const ab::TraceStep& s : r.trace)
    lanes[static_cast<size_t>(s.block)] += s.active;
  uint64_t total = 0;
  for (size_t b = 0; b < blocks; ++b) {
    CAPTURE(b);
    CHECK(r.stats.block_lanes[b] == lanes[b]);
    total += lanes[b];
    CHECK(r.stats.block_utilization[b] <= 1.0);
    CHECK((r.stats.block_utilization[b] > 0) == (r.stats.block_executions[b] > 0));
  }
  CHECK(total == r.stats.lane_steps);
  // The first block runs once, for every lane, all live: its share is 1.
  CHECK(r.stats.block_utilization[static_cast<size_t>(f.lowered.entry_block)] ==
        doctest::Approx(1.0));
  // Checkpoints do not hold them: after a restore they are absent, not wrong.
  ab::VmRun run(f.lowered, f.batch, {});
  run.step(10);
  const ab::VmCheckpoint at10 = run.checkpoint();
  run.step(10);
  run.restore(at10);
  run.step(1000000);
  CHECK(run.result().stats.block_lanes.empty());
  CHECK(run.result().stats.block_utilization.empty());
}
