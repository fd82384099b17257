// Tests of rotate_loops and merge_blocks (passes/): on a program as the front end built it
// before they ran (its IR text, below), they keep every lane's outputs and faults, leave a
// program that verifies, and cut the blocks a lane runs: a loop iteration is one block.
#include <doctest/doctest.h>

#include <algorithm>

#include "cpu/interp.h"
#include "cpu/vm.h"
#include "ir/text.h"
#include "ir/verify.h"
#include "passes/lower.h"
#include "passes/merge_blocks.h"
#include "passes/rotate_loops.h"

namespace ab {
namespace {

// fn sq(x: int) -> int { return x * x; }
// fn main(n: int) -> int {
//   var s = 0;
//   for i in 0..n { if i == 2 { continue; } s += sq(i); }
//   while true { if s > 100 { break; } s = s * 2 + 1; }
//   return s;
// }
const char* kUnjoined = R"(program "/tmp/b31c/t2.ab"

fn sq(x: int) -> result: int  @1:1
  var x: int
  var result: int
  b0:  @1:1
    result = mul x, x  @1:33
    return  @1:24

fn main(n: int) -> result: int  @2:1
  var n: int
  var result: int
  var s: int
  var t0: int
  var t1: int
  var i: int
  var t2: bool
  var t3: int
  var t4: bool
  var t5: int
  var t6: int
  var t7: int
  var t8: bool
  var t9: int
  var t10: int
  var t11: int
  b0:  @2:1
    s = const 0  @3:11
    t0 = const 0  @4:12
    t1 = copy n  @4:3
    i = copy t0  @4:3
    jump b1  @4:3
  b1:  @4:3
    t2 = lt i, t1  @4:3
    branch t2, b2, b4  @4:3
  b2:  @4:19
    t3 = const 2  @4:27
    t4 = eq i, t3  @4:24
    branch t4, b5, b6  @4:22
  b3:  @4:3
    t6 = const 1  @4:3
    i = add i, t6  @4:3
    jump b1  @4:3
  b4:  @5:3
    jump b7  @5:3
  b5:  @4:31
    jump b3  @4:31
  b6:  @4:43
    t5 = call sq(i)  @4:48
    s = add s, t5  @4:45
    jump b3  @4:55
  b7:  @5:9
    jump b8  @5:9
  b8:  @5:16
    t7 = const 100  @5:23
    t8 = gt s, t7  @5:21
    branch t8, b10, b11  @5:19
  b9:  @6:3
    result = copy s  @6:3
    return  @6:3
  b10:  @5:29
    jump b9  @5:29
  b11:  @5:38
    t9 = const 2  @5:46
    t10 = mul s, t9  @5:44
    t11 = const 1  @5:50
    s = add t10, t11  @5:48
    jump b7  @5:53
)";

Program parse(const char* text) {
  Diagnostics diags("joined.ir", text);
  std::optional<Program> p = parse_ir(text, "joined.ab", diags);
  REQUIRE(p);
  REQUIRE(verify(*p).ok());
  return *p;
}

Batch inputs(std::vector<int32_t> n) {
  Batch batch;
  batch.lanes = static_cast<uint32_t>(n.size());
  batch.inputs.resize(1);
  for (int32_t v : n)
    batch.inputs[0].push_back(static_cast<uint32_t>(v));
  return batch;
}

TEST_CASE("join blocks: a loop iteration is one block; outputs, faults and calls unchanged") {
  const Program before = parse(kUnjoined);
  Program after = before;
  CHECK(rotate_loops(after) == 6);  // the for test x3, the while's `if` x2, the empty b4 -> b7
  CHECK(merge_blocks(after) > 0);
  REQUIRE(verify(after).ok());
  const Function& main_fn = after.functions[1];
  CHECK(main_fn.blocks.size() < before.functions[1].blocks.size());
  // Every block of main ends in a Branch or a Return now: nothing jumps.
  for (const Block& b : main_fn.blocks)
    CHECK(b.term.kind != Terminator::Kind::Jump);

  const Batch batch = inputs({0, 1, 2, 3, 7, 20, -4});
  const RunResult want = run_interp(before, 1, batch, {});
  const RunResult got = run_interp(after, 1, batch, {});
  CHECK(got.outputs == want.outputs);
  CHECK(got.stats.calls == want.stats.calls);
  CHECK(got.stats.lane_steps < want.stats.lane_steps);
  // The lowered form runs the joined program as the interpreter does, also where the step
  // budget (which counts blocks, so a lane now gets further on it) stops some lanes.
  const LoweredProgram lowered = lower(after, 1);
  REQUIRE(verify(lowered).ok());
  for (uint64_t max_steps : {uint64_t{1000}, uint64_t{14}}) {
    CAPTURE(max_steps);
    RunOptions options;
    options.max_steps = max_steps;
    const RunResult interp = run_interp(after, 1, batch, options);
    const RunResult vm = run_vm(lowered, batch, options);
    CHECK(vm.outputs == interp.outputs);
    CHECK(vm.stats.lane_steps == interp.stats.lane_steps);
    CHECK(vm.faulted == interp.faulted);
    CHECK(std::count(vm.faulted.begin(), vm.faulted.end(), 1) == (max_steps == 14 ? 4 : 0));
  }
}

TEST_CASE("join blocks: a counted loop runs its entry, one block per iteration and its exit") {
  // fn main(n: int) -> int { var i = 0; while i < n { i += 1; } return i; }
  Program p = parse(R"(program "count.ab"
fn main(n: int) -> result: int
  var n: int
  var result: int
  var i: int
  var t0: bool
  var t1: int
  b0:
    i = const 0
    jump b1
  b1:
    t0 = lt i, n
    branch t0, b2, b3
  b2:
    t1 = const 1
    i = add i, t1
    jump b1
  b3:
    result = copy i
    return
)");
  const Batch batch = inputs({0, 1, 5, 12});
  const RunResult want = run_interp(p, 0, batch, {});
  CHECK(want.stats.lane_steps == (1 + 2) + (3 + 2) + (11 + 2) + (25 + 2));  // 2n + 3 before
  rotate_loops(p);
  merge_blocks(p);
  REQUIRE(verify(p).ok());
  CHECK(p.functions[0].blocks.size() == 3);  // entry + test, body + test, exit
  const RunResult got = run_interp(p, 0, batch, {});
  CHECK(got.outputs == want.outputs);
  CHECK(got.stats.lane_steps == 2 + 3 + 7 + 14);  // n + 2
}

TEST_CASE("join blocks: merge_blocks joins a chain, never the entry or a block with two ways in") {
  Program p = parse(R"(program "chain.ab"
fn main(n: int) -> result: int
  var n: int
  var result: int
  var c: bool
  b0:
    c = lt n, n
    branch c, b1, b2
  b1:
    jump b3
  b2:
    jump b3
  b3:
    result = copy n
    jump b4
  b4:
    return
)");
  CHECK(merge_blocks(p) == 1);  // b4 into b3; b3 has two predecessors
  REQUIRE(verify(p).ok());
  const Function& fn = p.functions[0];
  REQUIRE(fn.blocks.size() == 4);
  CHECK(fn.blocks[3].ops.size() == 1);
  CHECK(fn.blocks[3].term.kind == Terminator::Kind::Return);
  CHECK(fn.blocks[1].term.target == 3);
}

}  // namespace
}  // namespace ab
