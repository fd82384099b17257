// The debugger's plain model: the utilization history's aggregates, VM checkpoints, the
// timeline's reverse step, breakpoints, selection and colouring, with no window.
#include <doctest/doctest.h>

#include <bit>
#include <nlohmann/json.hpp>
#include <numeric>
#include <random>

#include "cpu/vm.h"
#include "debugger/utilization_history.h"
#include "support/debugger_test_support.h"

using namespace ab;
using namespace ab::debugger;
using ab::debugger::testing::fib_batch;
using ab::debugger::testing::Loaded;

namespace {

std::string vm_state_after(const Loaded& f, uint64_t steps) {
  VmRun run(f.lowered, f.batch, f.options);
  run.step(steps);
  return state_json(*f.module, run.snapshot());
}

std::string model_state(const DebuggerModel& m) {
  return nlohmann::json::parse(m.dump_json())["state"].dump();
}

}  // namespace

TEST_CASE("utilization history aggregates match a brute-force scan") {
  UtilizationHistory h(100'000);
  std::vector<uint32_t> raw;
  std::mt19937 rng(3);
  for (int i = 0; i < 70'000; ++i) {
    raw.push_back(rng() % 100'001);
    h.push(raw.back());
  }
  CHECK(h.size() == raw.size());
  CHECK(h.at(12345) == raw[12345]);
  // 4 bytes per step for > 65535 lanes, plus a pyramid of 1/16 + 1/256 + ... entries.
  CHECK(h.bytes() < raw.size() * 4 + raw.size() * 16 / 15 + 64);
  for (auto [a, b] : std::vector<std::pair<uint64_t, uint64_t>>{
           {0, 70'000}, {5, 6}, {17, 4099}, {4096, 8192}, {65'535, 70'000}, {123, 60'001}}) {
    uint32_t lo = UINT32_MAX, hi = 0;
    uint64_t sum = 0;
    for (uint64_t i = a; i < b; ++i) {
      lo = std::min(lo, raw[i]);
      hi = std::max(hi, raw[i]);
      sum += raw[i];
    }
    const StepAggregate got = h.range(a, b);
    CHECK(got.min == lo);
    CHECK(got.max == hi);
    CHECK(got.sum == sum);
    CHECK(got.count == b - a);
  }
  const auto cols = h.columns(0, 70'000, 700);
  REQUIRE(cols.size() == 700);
  uint64_t total = 0;
  for (const auto& c : cols)
    total += c.count;
  CHECK(total == 70'000);
  CHECK(cols[3].count == 100);
  CHECK(cols[3].max == *std::max_element(raw.begin() + 300, raw.begin() + 400));
}

TEST_CASE("utilization history uses one byte per step for small batches") {
  UtilizationHistory h(10);
  for (int i = 0; i < 1000; ++i)
    h.push(i % 11);
  CHECK(h.at(999) == 999 % 11);
  CHECK(h.bytes() < 1000 + 1000 * 16 / 15 + 64);
}

TEST_CASE("a VM restored from a checkpoint continues exactly as the original") {
  // random.ab's lanes draw random numbers: the checkpoint must carry each lane's stream position.
  const char* source = R"(fn main(limit: int) -> float {
    var acc = 0.0; var i = 0;
    while i < limit { acc += uniform(); i += 1; }
    return acc;
}
)";
  std::vector<uint32_t> limits;
  for (uint32_t lane = 0; lane < 12; ++lane)
    limits.push_back(lane * 3);
  Loaded f(source, {limits}, 12, "walk.ab");
  f.options.seed = 99;
  VmRun original(f.lowered, f.batch, f.options);
  original.step(20);
  const VmCheckpoint saved = original.checkpoint();
  original.step(UINT64_MAX);
  const std::string end_state = state_json(*f.module, original.snapshot());
  const RunResult end_result = original.result();

  VmRun other(f.lowered, f.batch, f.options);
  other.step(3);  // somewhere else entirely
  other.restore(saved);
  CHECK(other.steps() == 20);
  other.step(UINT64_MAX);
  CHECK(state_json(*f.module, other.snapshot()) == end_state);
  CHECK(other.result().outputs == end_result.outputs);
  CHECK(other.result().stats.steps == end_result.stats.steps);
  CHECK(other.result().stats.utilization == end_result.stats.utilization);
  CHECK(other.result().stats.block_executions == end_result.stats.block_executions);
}

TEST_CASE("a checkpoint stores only live stack entries") {
  Loaded f = fib_batch(64);
  f.options.stack_depth = 1024;
  VmRun run(f.lowered, f.batch, f.options);
  run.step(40);
  const VmCheckpoint c = run.checkpoint();
  size_t live = 0;
  for (uint32_t d : c.pc_depth)
    live += d;
  CHECK(c.pc_stack.size() == live);
  CHECK(c.pc_stack.size() < 64 * 16);
}

TEST_CASE("stepping N in the debugger ends in the state the VM reaches after N steps") {
  const Loaded f = fib_batch(50);
  DebuggerModel m(f.source(), {.interval = 16});
  for (uint64_t n : {1, 7, 100}) {
    m.step(n == 1 ? 1 : n - m.position());
    CHECK(m.position() == n);
    CHECK(model_state(m) == vm_state_after(f, n));
  }
}

TEST_CASE("back then forward returns to the same state, replaying at most one interval") {
  const Loaded f = fib_batch(40);
  DebuggerModel m(f.source(), {.interval = 32});
  m.step(150);
  const std::string at_150 = model_state(m);
  const uint64_t replayed = m.timeline().replayed_steps();
  m.back(3);
  CHECK(m.position() == 147);
  CHECK(model_state(m) == vm_state_after(f, 147));
  // 147 is restored from the checkpoint at 128: 19 steps replayed, not 147.
  CHECK(m.timeline().replayed_steps() - replayed == 147 - 128);
  m.step(3);
  CHECK(model_state(m) == at_150);
  m.seek(5);
  CHECK(model_state(m) == vm_state_after(f, 5));
  m.seek(150);
  CHECK(model_state(m) == at_150);
  // History is recorded once, not again while replaying.
  CHECK(m.timeline().history().size() == 150);
}

TEST_CASE("checkpoints thin out under their memory budget") {
  const Loaded f = fib_batch(30);
  DebuggerModel m(f.source(), {.interval = 1, .checkpoint_budget = 20'000});
  m.step(400);
  CHECK(m.timeline().checkpoint_bytes() <= 20'000);
  CHECK(m.timeline().interval() > 1);
  m.seek(77);
  CHECK(model_state(m) == vm_state_after(f, 77));
}

TEST_CASE("utilization history records the active lanes of every step") {
  Loaded f = fib_batch(20);
  f.options.record_trace = true;
  DebuggerModel m(f.source(), {});
  m.step(UINT64_MAX);
  const RunResult reference = run_vm(f.lowered, f.batch, f.options);
  REQUIRE(m.timeline().history().size() == reference.trace.size());
  for (size_t s = 0; s < reference.trace.size(); ++s)
    CHECK(m.timeline().history().at(s) == reference.trace[s].active);
}

TEST_CASE("breakpoints: block, line, lane returns, depth, fault, utilization") {
  const Loaded f = fib_batch(10);  // n = 0..9
  SUBCASE("line") {
    DebuggerModel m(f.source());
    const int line = ab::debugger::testing::fib_call_line(f);
    CHECK(m.add_breakpoint("line " + std::to_string(line)).ok());
    const StopReason r = m.continue_run();
    CHECK(r.kind == StopReason::Kind::Breakpoint);
    const auto& lines = m.blocks().lines(m.source().next_block());
    CHECK(std::find(lines.begin(), lines.end(), line) != lines.end());
  }
  SUBCASE("block") {
    DebuggerModel m(f.source());
    std::string name;  // the last call continuation, reached once calls return
    for (const LoweredBlock& b : f.lowered.blocks)
      if (b.name.find(".ret") != std::string::npos) name = b.name;
    REQUIRE(!name.empty());
    CHECK(m.add_breakpoint("block " + name).ok());
    CHECK(m.continue_run().kind == StopReason::Kind::Breakpoint);
    CHECK(m.blocks().name(m.source().next_block()) == name);
    CHECK(m.add_breakpoint("block nosuch").error().find("no block named 'nosuch'") !=
          std::string::npos);
  }
  SUBCASE("lane returns") {
    DebuggerModel m(f.source());
    CHECK(m.add_breakpoint("lane 7 returns").ok());
    CHECK(m.continue_run().kind == StopReason::Kind::Breakpoint);
    CHECK(m.source().lane_pcs()[7] == f.lowered.exit_pc());
    // One step earlier, lane 7 was still running.
    const uint64_t at = m.position();
    m.back(1);
    CHECK(m.source().lane_pcs()[7] != f.lowered.exit_pc());
    m.seek(at);
    CHECK(m.add_breakpoint("lane 10 returns").error().find("out of range") != std::string::npos);
  }
  SUBCASE("depth") {
    DebuggerModel m(f.source());
    CHECK(m.add_breakpoint("depth > 4").ok());
    CHECK(m.continue_run().kind == StopReason::Kind::Breakpoint);
    uint32_t deepest = 0;
    for (uint32_t d : m.source().lane_depths())
      deepest = std::max(deepest, d);
    CHECK(deepest == 5);  // the first step that goes deeper than 4 reaches exactly 5
  }
  SUBCASE("utilization") {
    DebuggerModel m(f.source());
    CHECK(m.add_breakpoint("utilization < 0.2").ok());
    CHECK(m.continue_run().kind == StopReason::Kind::Breakpoint);
    const uint64_t s = m.position() - 1;
    CHECK(m.timeline().history().at(s) < 10);
    CHECK(m.add_breakpoint("utilization < x").error().find("bad utilization") != std::string::npos);
  }
  SUBCASE("run to the end when nothing hits") {
    DebuggerModel m(f.source());
    CHECK(m.add_breakpoint("depth > 50").ok());
    CHECK(m.continue_run().kind == StopReason::Kind::Finished);
    CHECK(m.source().done());
    CHECK(m.add_breakpoint("sideways").error().find("unknown breakpoint") != std::string::npos);
  }
}

TEST_CASE("fault breakpoint stops at the step a lane faults") {
  const char* source = R"(fn divide(x: int, d: int) -> int {
    return x / d;
}
fn main(d: int) -> int {
    var k = 0;
    while k < d { k += 1; }
    return divide(10, d - 3);
}
)";
  Loaded f(source, {{5, 4, 3, 6}}, 4, "div.ab");
  DebuggerModel m(f.source());
  CHECK(m.add_breakpoint("fault").ok());
  CHECK(m.continue_run().kind == StopReason::Kind::Breakpoint);
  CHECK(m.faulted_lanes() == 1);
  CHECK(m.source().lane_faulted()[2] == 1);
  const LaneDetails d = lane_details(m.source(), 2);
  CHECK(d.status == "faulted");
  CHECK(d.error.find("line 2") != std::string::npos);
  std::vector<uint32_t> colors;
  m.coloring().set(ColorMode::Error);
  m.coloring().colors(lane_state(m.source()), colors);
  CHECK(colors[2] != colors[0]);
  CHECK(m.legend().back().label == "faulted (1)");
}

TEST_CASE("selection, colouring and the lane inspector") {
  const Loaded f = fib_batch(10);
  DebuggerModel m(f.source());
  CHECK(m.select_lane(12).error().find("out of range") != std::string::npos);
  CHECK(m.select_lane(6).ok());
  CHECK(m.selected_lane() == 6u);
  m.step(12);
  const LaneDetails d = lane_details(m.source(), 6);
  // Lane 6 computes fib(6): after 12 steps it is inside recursive calls; its frames run from
  // the innermost fib call out to fib(6), one per PC stack entry. main's `return fib(n)` is a
  // tail call: fib(6) replaced main's frame, and the inspector says so.
  REQUIRE(d.frames.size() >= 2);
  CHECK(d.frames.back().function == "fib");
  CHECK(d.frames.back().after_tail_calls);
  CHECK(d.frames.front().function == "fib");
  CHECK(!d.frames.front().after_tail_calls);
  CHECK(d.frames.size() == m.source().lane_depths()[6]);
  bool has_n = false;
  for (const VariableView& v : d.variables)
    has_n |= v.name == "fib.n";
  CHECK(has_n);

  CHECK(m.coloring().set(ColorMode::Variable, "nosuch").error().find("no variable 'nosuch'") !=
        std::string::npos);
  CHECK(m.coloring().set(ColorMode::Variable, "n").ok());
  std::vector<uint32_t> colors;
  m.coloring().colors(lane_state(m.source()), colors);
  REQUIRE(colors.size() == 10);
  CHECK(m.lane_summary(6).find(m.coloring().watched_name() + " = ") != std::string::npos);

  m.coloring().set(ColorMode::Depth);
  m.coloring().colors(lane_state(m.source()), colors);
  const auto& depth = m.source().lane_depths();
  for (uint32_t a = 0; a < 10; ++a)
    for (uint32_t b = 0; b < 10; ++b)
      if (depth[a] == depth[b] && m.source().lane_pcs()[a] != f.lowered.exit_pc() &&
          m.source().lane_pcs()[b] != f.lowered.exit_pc())
        CHECK(colors[a] == colors[b]);

  m.coloring().set(ColorMode::Block);
  m.coloring().colors(lane_state(m.source()), colors);
  uint32_t legend_total = 0;
  for (const LegendEntry& e : m.legend()) {
    const auto open = e.label.rfind('(');
    legend_total += std::stoul(e.label.substr(open + 1));
  }
  CHECK(legend_total == 10);
  m.step(UINT64_MAX);
  const LaneDetails done = lane_details(m.source(), 6);
  CHECK(done.status == "finished");
  CHECK(done.output == "13");  // fib(6) with fib(0) = fib(1) = 1
}

TEST_CASE("per-line lane counts add up to the live lanes") {
  const Loaded f = fib_batch(25);
  DebuggerModel m(f.source());
  m.step(9);
  uint32_t total = 0;
  for (uint32_t c : m.blocks().per_line(m.activity().waiting()))
    total += c;
  CHECK(total == m.live_lanes());
  const auto per_block = m.activity().waiting();
  CHECK(std::accumulate(per_block.begin(), per_block.end(), 0u) == m.live_lanes());
}

TEST_CASE("run modes: Run goes to the end, Run to breakpoint stops at a hit, Paused stays") {
  const Loaded f = fib_batch(10);
  auto run_until_stopped = [](DebuggerModel& m, uint64_t slice) {
    std::optional<std::string> stopped;
    for (int i = 0; i < 100'000 && !stopped; ++i)
      stopped = m.run_slice(slice);
    return stopped;
  };
  DebuggerModel m(f.source());
  CHECK(!m.running());
  CHECK(!m.run_slice(64));
  CHECK(m.position() == 0);
  m.set_run_mode(RunMode::Run);
  REQUIRE(m.add_breakpoint("lane 7 returns").ok());  // Run ignores breakpoints
  const std::optional<std::string> finished = run_until_stopped(m, 64);
  REQUIRE(finished);
  CHECK(*finished == "run finished at step " + std::to_string(m.position()));
  CHECK(m.source().done());
  CHECK(!m.running());

  DebuggerModel b(f.source());
  REQUIRE(b.add_breakpoint("lane 7 returns").ok());
  b.set_run_mode(RunMode::ToBreakpoint);
  const std::optional<std::string> hit = run_until_stopped(b, 4);
  REQUIRE(hit);
  CHECK(hit->starts_with("breakpoint 1 (lane 7 returns) at step "));
  CHECK(b.breakpoints().hits(b.source()) == std::vector<int>{0});
  CHECK(!b.running());
  CHECK(!b.source().done());
}

TEST_CASE("breakpoints are toggled by line and removed by index") {
  const Loaded f = fib_batch(4);
  DebuggerModel m(f.source());
  const int line = ab::debugger::testing::fib_call_line(f);
  m.breakpoints().toggle_line(line);
  REQUIRE(m.breakpoints().size() == 1);
  CHECK(m.breakpoints()[0].kind == Breakpoint::Kind::Line);
  CHECK(m.breakpoints()[0].line == line);
  REQUIRE(m.add_breakpoint("fault").ok());
  m.breakpoints().toggle_line(line);
  REQUIRE(m.breakpoints().size() == 1);
  CHECK(m.breakpoints()[0].kind == Breakpoint::Kind::Fault);
  m.breakpoints().remove(5);  // out of range: nothing happens
  CHECK(m.breakpoints().size() == 1);
  m.breakpoints().remove(0);
  CHECK(m.breakpoints().empty());
}

TEST_CASE("vm source: a session that cannot be made, or a state that does not fit, is an Error") {
  const Loaded f = fib_batch(4);
  RunOptions zero_depth = f.options;
  zero_depth.stack_depth = 0;
  auto refused = VmSource::create(f.info(), f.batch, zero_depth);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error() ==
        "the stack depth must be at least 1 (it counts the entry function's frame)");
  Batch short_batch = f.batch;
  short_batch.lanes += 1;  // the inputs are one lane short
  CHECK_FALSE(VmSource::create(f.info(), short_batch, f.options).ok());

  // Another batch's state: restore changes nothing and says why.
  const Loaded other = fib_batch(6);
  auto foreign = other.source();
  foreign->step(3);
  const auto state = foreign->checkpoint();
  auto source = f.source();
  source->step(2);
  source->restore(*state);
  CHECK_FALSE(source->error().empty());
  CHECK(source->steps() == 2);
  source->restore(*source->checkpoint());
  CHECK(source->error().empty());
}
