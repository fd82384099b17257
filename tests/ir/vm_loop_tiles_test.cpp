// VmSchedule::LoopTiles (cpu/vm.h): a block that loops back to itself runs to its exit a
// tile of lanes at a time. Each lane's operations stay the same, so outputs, faults, emitted
// records, random draws and lane step counts equal the interpreter's and the one-block-per-step
// schedule's, with lanes leaving the loop at different iterations, faulting in it, running out
// of steps in it, and loops longer than a tile's iterations per step; the statistics are those
// of Algorithm 2 running the loop's block back to back; run_vm uses tiles where
// RunOptions::loop_tiles asks and no trace is recorded, and still stops when asked.
#include <doctest/doctest.h>

#include <algorithm>

#include "cpu/interp.h"
#include "cpu/vm.h"
#include "support/result_compare.h"
#include "support/samples.h"

namespace ab::testing {
namespace {

// The inner `while` becomes one block that branches back to itself (rotate_loops, merge_blocks)
// and runs n iterations, a different number per lane (past kLoopTileIterations for some). It
// reads a row of X per iteration (the lanes' rows differ, or coincide), draws a random number,
// emits a record every iteration, and faults for some lanes in the middle: X[r] out of range when
// the lane's rows run past the table, a division by zero at a lane's chosen iteration. The outer
// loop enters the inner one several times.
constexpr const char* kProgram = R"(
uniform X: float[40][4];

fn main(n: int, first: int, bad: int) -> float {
    var acc: float[4];
    var total = 0.0;
    var outer = 0;
    while outer < 3 {
        var i = 0;
        while i < n {
            let row = X[(first + i) % 40 + (i / 3000) * 40];
            acc = acc * 0.5 + row * uniform();
            total += dot(acc, row) + float(100 / (bad - i));
            emit(total);
            i += 1;
        }
        n = n / 2;
        outer += 1;
    }
    return total + sum(acc);
}
)";

// Lane l: n from 0 up to 3100 (past 3000 a lane reads X out of range), its rows from l % 7 (so
// neighbours share some rows), and for every 13th lane a division by zero at iteration l.
Batch make_batch(uint32_t lanes) {
  Batch batch;
  batch.lanes = lanes;
  batch.inputs.resize(3);
  for (uint32_t l = 0; l < lanes; ++l) {
    const uint32_t n = l % 11 == 5 ? 3000 + l % 3 * 50 : (l * 37) % 1500;
    batch.inputs[0].push_back(n);
    batch.inputs[1].push_back(l % 7);
    batch.inputs[2].push_back(l % 13 == 4 ? l : 1000000);
  }
  std::vector<uint32_t> x;
  for (int r = 0; r < 40 * 4; ++r)
    x.push_back(float_bits(static_cast<float>((r * 29) % 17) / 9.0f - 0.8f));
  batch.uniforms = {x};
  return batch;
}

bool has_self_loop(const LoweredProgram& p) {
  for (size_t b = 0; b < p.blocks.size(); ++b)
    if (p.blocks[b].term.kind == Terminator::Kind::Branch &&
        (p.blocks[b].term.target == static_cast<int32_t>(b) ||
         p.blocks[b].term.target_else == static_cast<int32_t>(b)))
      return true;
  return false;
}

void check_same_lanes(const RunResult& expected, const RunResult& actual) {
  const std::string difference = describe_difference(expected, actual);
  CHECK_MESSAGE(difference.empty(), difference);
  CHECK(actual.emitted == expected.emitted);
  CHECK(actual.records_emitted == expected.records_emitted);
  CHECK(actual.stats.lane_steps == expected.stats.lane_steps);
}

TEST_CASE("loop tiles: every lane's results, faults, draws and records are the interpreter's") {
  const CompiledProgram loaded = compile_program(kProgram, "loop_tiles.ab");
  REQUIRE(has_self_loop(loaded.lowered));
  for (uint32_t lanes : {1u, 31u, 100u}) {
    for (uint64_t max_steps : {uint64_t{10'000'000}, uint64_t{2500}}) {
      CAPTURE(lanes);
      CAPTURE(max_steps);
      const Batch batch = make_batch(lanes);
      RunOptions options;
      options.seed = 7;
      options.max_steps = max_steps;
      options.loop_tiles = true;
      const RunResult expected = run_interp(loaded.program, loaded.entry, batch, options);
      bool faults[6] = {};  // each Fault code seen
      for (const LaneError& e : expected.errors)
        faults[static_cast<int>(e.code)] = true;
      if (lanes == 100) {  // the batch reaches every case (the step budget first, if low)
        CHECK(faults[static_cast<int>(Fault::IndexOutOfRange)] == (max_steps > 2500));
        CHECK(faults[static_cast<int>(Fault::DivisionByZero)]);
        CHECK(faults[static_cast<int>(Fault::StepBudget)] == (max_steps == 2500));
      }
      for (uint32_t threads : {1u, 2u}) {
        CAPTURE(threads);
        options.threads = threads;
        RunOptions exact = options;
        exact.loop_tiles = false;
        const RunResult one_block = run_vm(loaded.lowered, batch, exact);
        const RunResult tiled = run_vm(loaded.lowered, batch, options);
        check_same_lanes(expected, one_block);
        check_same_lanes(expected, tiled);
        // The loops leave to later blocks: the statistics are Algorithm 2's.
        CHECK(tiled.stats.steps == one_block.stats.steps);
        CHECK(tiled.stats.block_executions == one_block.stats.block_executions);
        CHECK(tiled.stats.block_lanes == one_block.stats.block_lanes);
        CHECK(tiled.stats.utilization == doctest::Approx(one_block.stats.utilization));
      }
    }
  }
}

TEST_CASE("loop tiles: per-lane state at the end equals one block per step") {
  const CompiledProgram loaded = compile_program(kProgram, "loop_tiles.ab");
  const Batch batch = make_batch(70);
  RunOptions options;
  options.max_steps = 4000;
  VmRun exact(loaded.lowered, batch, options);
  VmRun tiled(loaded.lowered, batch, options, VmSchedule::LoopTiles);
  exact.step(UINT64_MAX);
  // A tiled step counts its iterations: a step(1) runs a whole tiled loop.
  uint64_t steps = 0, longest = 0;
  while (!tiled.done()) {
    const uint64_t taken = tiled.step(1);
    steps += taken;
    longest = std::max(longest, taken);
  }
  CHECK(steps == tiled.steps());
  CHECK(longest == kLoopTileIterations);  // a loop longer than a tile's iterations per step
  const BatchSnapshot a = exact.snapshot(), b = tiled.snapshot();
  CHECK(a.lane_steps == b.lane_steps);
  CHECK(a.pc == b.pc);
  CHECK(a.faulted == b.faulted);
  CHECK(a.step == b.step);
  // Every variable that lives past a block; a Temp's words are scratch (a kernel may write
  // them for lanes outside its set), so they depend on which lanes ran together.
  std::vector<TypeId> types;
  for (const LoweredVar& v : loaded.lowered.vars)
    types.push_back(v.type);
  std::vector<uint32_t> offset;
  const uint32_t words = layout_words(loaded.lowered.types(), types, offset);
  for (uint32_t lane = 0; lane < batch.lanes; ++lane)
    for (size_t v = 0; v < types.size(); ++v)
      if (loaded.lowered.vars[v].storage != Storage::Temp)
        for (uint32_t k = 0; k < loaded.lowered.types().words(types[v]); ++k) {
          const size_t at = size_t{lane} * words + offset[v] + k;
          CHECK_MESSAGE(a.registers[at] == b.registers[at], loaded.lowered.vars[v].name);
        }
}

TEST_CASE("loop tiles: never with a trace; a stop request is honoured") {
  const CompiledProgram loaded = compile_program(kProgram, "loop_tiles.ab");
  const Batch batch = make_batch(40);
  RunOptions options;
  options.record_trace = true;
  options.loop_tiles = true;  // ignored: a trace is Algorithm 2's
  const RunResult traced = run_vm(loaded.lowered, batch, options);
  CHECK(traced.trace.size() == traced.stats.steps);
  // A tiled step counts its iterations, so the stop comes after a tiled step or a few, with
  // lanes still unfinished.
  RunOptions stopping;
  stopping.loop_tiles = true;
  uint32_t polls = 0;
  stopping.should_stop = [&] { return ++polls == 2; };
  const RunResult stopped = run_vm(loaded.lowered, batch, stopping);
  CHECK(stopped.stopped);
  CHECK(polls == 2);
  CHECK(stopped.stats.steps < traced.stats.steps);
}

}  // namespace
}  // namespace ab::testing
