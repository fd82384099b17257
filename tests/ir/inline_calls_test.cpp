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

// Runs `source` compiled without the pass (the reference) and with it, on interp and vm: every
// value and fault (but its step) agrees bit for bit. Returns the reference's and the inlined
// program's vm runs, for their step counts.
std::pair<RunResult, RunResult> check_same_bits(const Compiled& plain, const Compiled& inlined,
                                                const Batch& batch) {
  const int entry = plain.program.find_function("main");
  const RunResult want = without_steps(run_interp(plain.program, entry, batch, {}));
  const LoweredProgram lowered = lower(inlined.program, entry);
  REQUIRE(verify(lowered).ok());
  const RunResult got = without_steps(run_interp(inlined.program, entry, batch, {}));
  const RunResult vm = run_vm(lowered, batch, {});
  CHECK(compare_results(lowered, want, got).empty());
  CHECK(compare_results(lowered, want, without_steps(vm)).empty());
  return {run_vm(lower(plain.program, entry), batch, {}), vm};
}

// The verdict on each call of `callee`, in source order.
std::vector<CallVerdict> calls_of(const Compiled& c, const std::string& callee) {
  std::vector<CallVerdict> out;
  for (const CallVerdict& v : c.calls)
    if (c.program.functions[static_cast<size_t>(v.callee)].name == callee) out.push_back(v);
  return out;
}

const char* kHelper = R"(
fn sq(x: float) -> float { return x * x; }
fn hyp(a: float, b: float) -> float {
  let s = sq(a) + sq(b);
  if s > 100.0 { return sqrt(s); }
  return s;
}
fn main(a: float, b: float) -> float { return hyp(a, b) * 2.0; }
)";

TEST_CASE("inline_calls: an inlined call takes fewer steps and gives the same values") {
  const Compiled plain = compile(kHelper, false), inlined = compile(kHelper, true);
  CHECK(inlined_count(inlined.calls) == 3);
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
  CHECK(want.stats.calls == 4 * 3);  // per lane: one hyp call, two sq calls
  const auto [vm_plain, vm_inlined] = check_same_bits(plain, inlined, batch);
  CHECK(vm_inlined.stats.lane_steps < vm_plain.stats.lane_steps);
  CHECK(vm_inlined.stats.steps < vm_plain.stats.steps);
}

TEST_CASE(
    "inline_calls: only where it pays: one call site, a tiny callee; not a big one called "
    "from many places, nor a recursive one") {
  const char* source = R"(
fn tiny(x: float) -> float { return x * x + 1.0; }
fn once(x: float) -> float {
  var v = abs(x);
  while v > 1.0 { v = v * 0.5; }
  return v;
}
fn big(x: float) -> float {
  let a = x * 0.25 + 1.5;
  let b = a * a - x;
  let c = exp(-abs(b)) + log(1.0 + a * a);
  return a * b - c / (1.0 + b * b);
}
fn fact(n: int) -> int {
  if n <= 1 { return 1; }
  return n * fact(n - 1);
}
fn main(a: float, n: int) -> float {
  let t = tiny(a) + tiny(a + 1.0) + tiny(a * 2.0);
  return t + once(a) + big(a) + big(t) + float(fact(n));
}
)";
  const Compiled plain = compile(source, false), inlined = compile(source, true);
  const auto tiny = calls_of(inlined, "tiny"), once = calls_of(inlined, "once"),
             big = calls_of(inlined, "big"), fact = calls_of(inlined, "fact");
  REQUIRE(tiny.size() == 3);
  REQUIRE(once.size() == 1);
  REQUIRE(big.size() == 2);
  REQUIRE(fact.size() == 2);
  for (const CallVerdict& v : tiny)
    CHECK(v.inlined);
  CHECK(once[0].inlined);  // its loop is no reason to keep a call made once
  for (const CallVerdict& v : big) {
    CHECK_FALSE(v.inlined);
    CHECK(v.reason == "called from 2 places and not tiny (over 8 ops or a loop), in no loop");
  }
  for (const CallVerdict& v : fact) {
    CHECK_FALSE(v.inlined);
    CHECK(v.reason == "recursive");
  }
  Batch batch;
  batch.lanes = 4;
  batch.inputs = {{float_bits(1.5f), float_bits(-20.0f), float_bits(-0.0f), float_bits(3e19f)},
                  {5u, 1u, 0u, 12u}};
  const auto [vm_plain, vm_inlined] = check_same_bits(plain, inlined, batch);
  CHECK(vm_inlined.stats.calls < vm_plain.stats.calls);
  CHECK(vm_inlined.stats.calls > 0);  // big's and fact's remain
}

TEST_CASE(
    "inline_calls: a big function called from many places is inlined in the loops it lets "
    "run as array code, and nowhere else") {
  const char* source = R"(
uniform y: float[32];
fn loglik(v: float, mu: float, s: float) -> float {
  let z = (v - mu) / s;
  return -0.5 * z * z - log(s) - 0.9189385332046727;
}
fn main(mu: float) -> float {
  var lp = 0.0;
  for i in 0..32 { lp += loglik(y[i], mu, 1.5); }
  var z = 0.0;
  for i in 0..32 { z = z * 0.5 + loglik(y[i], mu, 2.0); }
  return lp + z + loglik(mu, 0.0, 3.0);
}
)";
  const Compiled plain = compile(source, false), inlined = compile(source, true);
  const auto calls = calls_of(inlined, "loglik");
  REQUIRE(calls.size() == 3);
  CHECK(calls[0].inlined);
  CHECK_FALSE(calls[1].inlined);
  CHECK(calls[1].reason ==
        "called from 3 places and not tiny (over 8 ops or a loop), and its loop at 11:3 would "
        "not run as array code with it inlined");
  CHECK_FALSE(calls[2].inlined);
  CHECK(calls[2].reason == "called from 3 places and not tiny (over 8 ops or a loop), in no loop");
  REQUIRE(inlined.loops.size() == 2);
  CHECK(inlined.loops[0].vectorised);
  CHECK_FALSE(inlined.loops[1].vectorised);
  Batch batch;
  batch.lanes = 3;
  batch.inputs = {{float_bits(0.5f), float_bits(-2.0f), float_bits(1e10f)}};
  std::vector<uint32_t> y;
  for (int i = 0; i < 32; ++i)
    y.push_back(float_bits(0.37f * static_cast<float>(i) - 4.1f));
  batch.uniforms = {y};
  const auto [vm_plain, vm_inlined] = check_same_bits(plain, inlined, batch);
  // The first loop's 32 iterations (a call and a return each) became one step.
  CHECK(vm_inlined.stats.lane_steps < vm_plain.stats.lane_steps);
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
  // pick is tiny, so both its calls are inlined; the second faults on lane 1.
  const char* source = R"(
fn pick(a: float[3], i: int) -> float {
  return a[i];
}
fn main(i: int) -> float { return pick([1.0, 2.0, 3.0], 0) + pick([1.0, 2.0, 3.0], i); }
)";
  const Compiled plain = compile(source, false), inlined = compile(source, true);
  CHECK(inlined_count(inlined.calls) == 2);
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
