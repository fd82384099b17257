// Lowering invariants (Radul et al. §3.2): which variables get stacks, registers or no storage;
// calls become Push / PushJump / Pop; Pop-then-Push pairs become Update; non-recursive programs
// keep no variable stacks at all.
#include <doctest/doctest.h>

#include <string>

#include "cpu/interp.h"
#include "cpu/vm.h"
#include "lang/frontend.h"
#include "passes/lower.h"
#include "passes/split_at_calls.h"
#include "support/samples.h"

namespace {

ab::Program compile(const std::string& source) {
  ab::Diagnostics diags("test.ab", source);
  // Calls stay calls: these cases are about how a call lowers (inline_calls has its own tests).
  ab::FrontendOptions options;
  options.inline_calls = false;
  auto program = ab::compile_source(source, "test.ab", diags, options);
  INFO(diags.format());
  REQUIRE(program.has_value());
  return std::move(*program);
}

ab::Storage storage_of(const ab::LoweredProgram& lowered, const std::string& name) {
  for (const ab::LoweredVar& v : lowered.vars)
    if (v.name == name) return v.storage;
  FAIL("no lowered variable " << name);
  return ab::Storage::Temp;
}

int count_ops(const ab::LoweredProgram& lowered, ab::OpCode code) {
  int n = 0;
  for (const ab::LoweredBlock& b : lowered.blocks)
    for (const ab::Op& op : b.ops)
      n += op.code == code;
  return n;
}

int count_terms(const ab::LoweredProgram& lowered, ab::Terminator::Kind kind) {
  int n = 0;
  for (const ab::LoweredBlock& b : lowered.blocks)
    n += b.term.kind == kind;
  return n;
}

std::string fib_source() {
  return ab::testing::read_sample("fib.ab");
}

}  // namespace

TEST_CASE("fib: n is stacked, the first call's result is stacked, fib's result is a register") {
  const ab::Program program = compile(fib_source());
  const ab::LoweredProgram lowered = ab::lower(program, program.find_function("main"));
  CHECK(storage_of(lowered, "fib.n") == ab::Storage::Stacked);
  CHECK(storage_of(lowered, "fib.result") == ab::Storage::Register);
  CHECK(storage_of(lowered, "main.n") == ab::Storage::Register);
  // n and fib(n - 1)'s value are the only things live across the recursive calls.
  CHECK(lowered.count(ab::Storage::Stacked) == 2);
  // Three calls in the source: fib's two push; main's `return fib(n)` is a tail call, so main's
  // return statement becomes a TailJump and fib's two stay Returns.
  CHECK(count_terms(lowered, ab::Terminator::Kind::PushJump) == 2);
  CHECK(count_terms(lowered, ab::Terminator::Kind::TailJump) == 1);
  CHECK(count_terms(lowered, ab::Terminator::Kind::Return) == 2);
  // main's call to fib cannot re-enter main: nothing of main's is saved.
  for (const ab::LoweredBlock& b : lowered.blocks)
    for (const ab::Op& op : b.ops)
      if (op.code == ab::OpCode::Push)
        CHECK(lowered.vars[op.args[0]].function != lowered.entry_function);
}

TEST_CASE("a non-recursive program lowers to no variable stacks, only the PC") {
  const ab::Program program = compile(R"(
fn sq(x: int) -> int { return x * x; }
fn twice(x: int) -> int { return sq(x) + sq(x + 1); }
fn main(a: int, b: int) -> int {
    var s = 0;
    for i in 0..a { s += twice(i) + b; }
    return s;
}
)");
  const ab::LoweredProgram lowered = ab::lower(program, program.find_function("main"));
  CHECK(lowered.count(ab::Storage::Stacked) == 0);
  CHECK(count_ops(lowered, ab::OpCode::Push) == 0);
  CHECK(count_ops(lowered, ab::OpCode::Pop) == 0);
  CHECK(count_terms(lowered, ab::Terminator::Kind::PushJump) == 3);
  // s lives across blocks (the loop) and across calls that cannot re-enter main: a register.
  CHECK(storage_of(lowered, "main.s") == ab::Storage::Register);
}

TEST_CASE("temporaries that never cross a block boundary get no storage") {
  const ab::Program program = compile(R"(
fn main(a: int) -> int {
    let x = a * 3 + 1;
    let y = x * x;
    return y - a;
}
)");
  const ab::LoweredProgram lowered = ab::lower(program, program.find_function("main"));
  CHECK(storage_of(lowered, "main.x") == ab::Storage::Temp);
  CHECK(storage_of(lowered, "main.y") == ab::Storage::Temp);
  CHECK(lowered.count(ab::Storage::Register) == 2);  // the input a and the result
}

TEST_CASE("tail-recursive mutual recursion needs no variable stacks") {
  const ab::Program program = compile(R"(
fn is_even(n: int) -> bool { if n == 0 { return true; } return is_odd(n - 1); }
fn is_odd(n: int) -> bool { if n == 0 { return false; } return is_even(n - 1); }
fn main(n: int) -> bool { return is_even(n); }
)");
  const ab::LoweredProgram lowered = ab::lower(program, program.find_function("main"));
  CHECK(lowered.count(ab::Storage::Stacked) == 0);
}

TEST_CASE("a Pop followed by a Push of the same variable becomes one Update") {
  const char* source = R"(
fn f(n: int) -> int {
    if n <= 0 { return 0; }
    return f(n - 1) + f(n - 2) + n;
}
fn main(n: int) -> int { return f(n); }
)";
  const ab::Program program = compile(source);
  const int main_fn = program.find_function("main");
  const ab::LoweredProgram plain = ab::lower(program, main_fn, {.pop_push_to_update = false});
  const ab::LoweredProgram optimized = ab::lower(program, main_fn);
  CHECK(count_ops(plain, ab::OpCode::Update) == 0);
  // n is saved around both recursive calls: restored then saved again between them.
  CHECK(count_ops(optimized, ab::OpCode::Update) == 1);
  CHECK(count_ops(optimized, ab::OpCode::Pop) == count_ops(plain, ab::OpCode::Pop) - 1);
  CHECK(count_ops(optimized, ab::OpCode::Push) == count_ops(plain, ab::OpCode::Push) - 1);

  // Both lowerings compute the same thing as the interpreter.
  ab::Batch batch;
  batch.lanes = 12;
  batch.inputs.resize(1);
  for (uint32_t lane = 0; lane < batch.lanes; ++lane)
    batch.inputs[0].push_back(lane);
  const ab::RunResult expected = ab::run_interp(program, main_fn, batch, {});
  CHECK(ab::run_vm(plain, batch, {}).outputs == expected.outputs);
  CHECK(ab::run_vm(optimized, batch, {}).outputs == expected.outputs);
  // f(n) = f(n-1) + f(n-2) + n with f(<=0) = 0: 0 1 3 7 14 26 46 ...
  CHECK(expected.outputs[1] == 1);
  CHECK(expected.outputs[2] == 3);
  CHECK(expected.outputs[6] == 46);
}

TEST_CASE("lowered blocks are the split program's blocks, so lane steps agree with interp") {
  const ab::Program program = compile(fib_source());
  const int main_fn = program.find_function("main");
  const ab::Program split = ab::split_at_calls(program);
  const ab::LoweredProgram lowered = ab::lower(program, main_fn);
  size_t split_blocks = 0;
  for (const auto& fn : split.functions)
    split_blocks += fn.blocks.size();
  CHECK(lowered.blocks.size() == split_blocks);
  for (size_t b = 0; b < split.functions.size(); ++b)
    for (size_t k = 0; k < split.functions[b].blocks.size(); ++k)
      if (ab::ends_in_call(split.functions[b], static_cast<int>(k)))
        CHECK(split.functions[b].blocks[k].ops.back().code == ab::OpCode::Call);

  ab::Batch batch;
  batch.lanes = 10;
  batch.inputs.resize(1);
  for (uint32_t lane = 0; lane < batch.lanes; ++lane)
    batch.inputs[0].push_back(lane);
  const ab::RunResult interp = ab::run_interp(program, main_fn, batch, {});
  const ab::RunResult vm = ab::run_vm(lowered, batch, {});
  CHECK(interp.outputs == vm.outputs);
  CHECK(interp.stats.lane_steps == vm.stats.lane_steps);
  CHECK(interp.stats.calls == vm.stats.calls);
  CHECK(interp.stats.max_stack_depth == vm.stats.max_stack_depth);
  // fib(9) = 55 with fib(0) = fib(1) = 1, and fib(9) makes 2 * 55 - 1 = 109 fib calls (+1 from
  // main).
  CHECK(vm.outputs[9] == 55);
}

TEST_CASE("the VM trace accounts for every lane step; one block per step") {
  const ab::Program program = compile(fib_source());
  const ab::LoweredProgram lowered = ab::lower(program, program.find_function("main"));
  ab::Batch batch;
  batch.lanes = 33;
  batch.inputs.resize(1);
  for (uint32_t lane = 0; lane < batch.lanes; ++lane)
    batch.inputs[0].push_back(lane % 11);
  for (ab::Heuristic h : {ab::Heuristic::MinPc, ab::Heuristic::MostLanes}) {
    ab::RunOptions options;
    options.heuristic = h;
    options.record_trace = true;
    const ab::RunResult r = ab::run_vm(lowered, batch, options);
    REQUIRE(r.trace.size() == r.stats.steps);
    uint64_t active = 0;
    for (const ab::TraceStep& s : r.trace) {
      CHECK(s.active > 0);
      active += s.active;
    }
    CHECK(active == r.stats.lane_steps);
    CHECK(r.stats.utilization > 0.0);
    CHECK(r.stats.utilization <= 1.0);
  }
}
