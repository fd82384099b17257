// inline_calls (passes/inline_calls.h): a call of a small non-recursive function becomes the
// callee's blocks. The same program compiled with the pass off is the reference: values, draws
// and faults agree bit for bit on interp and vm; an inlined call takes fewer steps; a recursive
// function stays a call; a loop calling a small function is then vectorised.
#include <doctest/doctest.h>

#include "cpu/interp.h"
#include "cpu/vm.h"
#include "ir/verify.h"
#include "lang/frontend.h"
#include "passes/lower.h"
#include "support/program_gen.h"
#include "support/result_compare.h"
#include "support/samples.h"

namespace ab::testing {
namespace {

struct Compiled {
  Program program;
  std::vector<CallVerdict> calls;
  std::vector<LoopVerdict> loops;
};

Compiled compile(const std::string& source, bool inline_on) {
  Diagnostics diags("test.ab", source);
  Compiled c;
  FrontendOptions options;
  options.inline_calls = inline_on;
  options.calls = &c.calls;
  options.loops = &c.loops;
  std::optional<Program> program = compile_source(source, "test.ab", diags, options);
  REQUIRE_MESSAGE(program.has_value(), diags.format());
  REQUIRE(verify(*program).ok());
  c.program = std::move(*program);
  return c;
}

// A fault's step counts the inlined program's steps; its code, function, line and detail and
// every value do not change.
RunResult without_steps(RunResult r) {
  for (LaneError& e : r.errors)
    e.step = 0;
  return r;
}

int inlined_count(const std::vector<CallVerdict>& calls) {
  int n = 0;
  for (const CallVerdict& v : calls)
    n += v.inlined;
  return n;
}

TEST_CASE("inline_calls: random programs give the same bits with the pass and without") {
  int calls = 0, inlined = 0;
  for (uint64_t seed = 1; seed <= 150; ++seed) {
    const std::string source = generate_program(seed);
    const Compiled plain = compile(source, false), inlined_program = compile(source, true);
    calls += static_cast<int>(inlined_program.calls.size());
    inlined += inlined_count(inlined_program.calls);
    const int entry = plain.program.find_function("main");
    Batch batch;
    batch.lanes = 16;
    batch.inputs.resize(2);
    for (uint32_t lane = 0; lane < batch.lanes; ++lane) {
      const uint32_t x = (static_cast<uint32_t>(lane_hash(seed, lane)) & ~3u) | (lane & 3u);
      batch.inputs[0].push_back(x);
      batch.inputs[1].push_back(static_cast<uint32_t>(lane_hash(seed + 1000, lane) % 201) - 100);
    }
    RunOptions options;
    options.seed = seed;
    const RunResult want = without_steps(run_interp(plain.program, entry, batch, options));
    const RunResult got = without_steps(run_interp(inlined_program.program, entry, batch, options));
    const LoweredProgram lowered = lower(inlined_program.program, entry);
    REQUIRE(verify(lowered).ok());
    const RunResult vm = without_steps(run_vm(lowered, batch, options));
    CHECK_MESSAGE(compare_results(lowered, want, got).empty(), "interp, seed ", seed, ": ",
                  compare_results(lowered, want, got), "\n", source);
    CHECK_MESSAGE(compare_results(lowered, want, vm).empty(), "vm, seed ", seed, ": ",
                  compare_results(lowered, want, vm), "\n", source);
  }
  MESSAGE(inlined, " of ", calls, " generated calls inlined");
  CHECK(inlined > 50);
}

const char* kHelper = R"(
fn sq(x: float) -> float { return x * x; }
fn hyp(a: float, b: float) -> float {
  let s = sq(a) + sq(b);
  if s > 100.0 { return sqrt(s); }
  return s;
}
fn main(a: float, b: float) -> float { return hyp(a, b) + hyp(b, a); }
)";

TEST_CASE("inline_calls: an inlined call takes fewer steps and gives the same values") {
  const Compiled plain = compile(kHelper, false), inlined = compile(kHelper, true);
  CHECK(inlined_count(inlined.calls) == 4);
  for (const Function& fn : inlined.program.functions)
    if (fn.name == "main")
      for (const Block& b : fn.blocks)
        for (const Op& op : b.ops)
          CHECK_FALSE(is_call(op));
  const int entry = plain.program.find_function("main");
  Batch batch;
  batch.lanes = 4;
  batch.inputs = {{float_bits(1.5f), float_bits(-20.0f), float_bits(0.0f), float_bits(3e19f)},
                  {float_bits(2.0f), float_bits(7.0f), float_bits(-0.0f), float_bits(1.0f)}};
  const RunResult want = run_interp(plain.program, entry, batch, {});
  const RunResult got = run_interp(inlined.program, entry, batch, {});
  CHECK(got.outputs == want.outputs);
  CHECK(got.stats.calls == 0);
  CHECK(want.stats.calls == 4 * 6);  // per lane: two hyp calls, each two sq calls
  const RunResult vm_plain = run_vm(lower(plain.program, entry), batch, {});
  const RunResult vm_inlined = run_vm(lower(inlined.program, entry), batch, {});
  CHECK(vm_inlined.outputs == want.outputs);
  CHECK(vm_inlined.stats.lane_steps < vm_plain.stats.lane_steps);
  CHECK(vm_inlined.stats.steps < vm_plain.stats.steps);
}

TEST_CASE("inline_calls: a recursive function stays a call, its small leaf is inlined into it") {
  const char* source = R"(
fn half(n: int) -> int { return n / 2; }
fn collatz(n: int) -> int {
  if n <= 1 { return 0; }
  if n % 2 == 0 { return 1 + collatz(half(n)); }
  return 1 + collatz(3 * n + 1);
}
fn main(n: int) -> int { return collatz(n); }
)";
  const Compiled c = compile(source, true);
  int recursive = 0, leaf = 0;
  for (const CallVerdict& v : c.calls) {
    const std::string& callee = c.program.functions[static_cast<size_t>(v.callee)].name;
    if (callee == "collatz") {
      CHECK_FALSE(v.inlined);
      CHECK(v.reason == "recursive");
      ++recursive;
    }
    if (callee == "half") leaf += v.inlined;
  }
  CHECK(recursive == 3);
  CHECK(leaf == 1);
  const Compiled plain = compile(source, false);
  const int entry = c.program.find_function("main");
  Batch batch;
  batch.lanes = 3;
  batch.inputs = {{27u, 6u, 1u}};
  const RunResult want = run_interp(plain.program, entry, batch, {});
  CHECK(run_interp(c.program, entry, batch, {}).outputs == want.outputs);
  CHECK(run_vm(lower(c.program, entry), batch, {}).outputs == want.outputs);
}

TEST_CASE("inline_calls: a fault inside an inlined function keeps its line and detail") {
  const char* source = R"(
fn pick(a: float[3], i: int) -> float {
  return a[i];
}
fn main(i: int) -> float { return pick([1.0, 2.0, 3.0], i) + 1.0; }
)";
  const Compiled plain = compile(source, false), inlined = compile(source, true);
  CHECK(inlined_count(inlined.calls) == 1);
  const int entry = plain.program.find_function("main");
  Batch batch;
  batch.lanes = 2;
  batch.inputs = {{1u, 5u}};
  const RunResult want = run_interp(plain.program, entry, batch, {});
  const RunResult got = run_interp(inlined.program, entry, batch, {});
  REQUIRE(want.errors.size() == 1);
  REQUIRE(got.errors.size() == 1);
  CHECK(got.errors[0].line == 3);
  CHECK(got.errors[0].line == want.errors[0].line);
  CHECK(got.errors[0].code == want.errors[0].code);
  CHECK(got.errors[0].function == "pick");
  CHECK(run_vm(lower(inlined.program, entry), batch, {}).errors[0].function == "pick");
  CHECK(fault_text(got.errors[0]) == fault_text(want.errors[0]));
  CHECK(got.outputs == want.outputs);
}

TEST_CASE("inline_calls: a loop calling a small function is vectorised once the call is inlined") {
  const char* source = R"(
uniform y: float[40];
fn sq_err(a: float, b: float) -> float { let d = a - b; return d * d; }
fn main(m: float) -> float {
  var acc = 0.0;
  for i in 0..40 { acc += sq_err(y[i], m); }
  return acc;
}
)";
  const Compiled plain = compile(source, false), inlined = compile(source, true);
  REQUIRE(plain.loops.size() == 1);
  CHECK_FALSE(plain.loops[0].vectorised);
  REQUIRE(inlined.loops.size() == 1);
  CHECK(inlined.loops[0].vectorised);
  const int entry = plain.program.find_function("main");
  Batch batch;
  batch.lanes = 3;
  batch.inputs = {{float_bits(0.5f), float_bits(-2.0f), float_bits(1e10f)}};
  std::vector<uint32_t> y;
  for (int i = 0; i < 40; ++i)
    y.push_back(float_bits(0.37f * static_cast<float>(i) - 4.1f));
  batch.uniforms = {y};
  const RunResult want = run_interp(plain.program, entry, batch, {});
  CHECK(run_interp(inlined.program, entry, batch, {}).outputs == want.outputs);
  CHECK(run_vm(lower(inlined.program, entry), batch, {}).outputs == want.outputs);
}

}  // namespace
}  // namespace ab::testing
