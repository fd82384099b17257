// Tests of the IR verifier: a valid Figure 2 program and a valid Figure 4 program pass, and for
// each rule a program broken in just that way is rejected with the expected message. Most
// programs are written in the IR text form (the parser accepts ill-typed IR); index errors the
// parser refuses are made by editing a parsed program.
#include <doctest/doctest.h>

#include <algorithm>
#include <sstream>
#include <string>
#include <vector>

#include "ir/text.h"
#include "ir/verify.h"

namespace ab {
namespace {

// A valid program that touches every op class. Tests replace one line of it.
const std::string kValid = R"(program "v.ab"
type float[3]
struct Pair { a: int, b: float[3] }
type int[4]
type bool[4]
type int[3]
type float[10]
type Pair[2]
uniform table: float[10]
uniform pairs: Pair[2]

fn main(x: int, y: float) -> result: int  @1:1
  var x: int
  var y: float
  var result: int
  var c: bool
  var arr: int[4]
  var barr: bool[4]
  var fa: float[3]
  var p: Pair
  var i: int
  var u: uint
  var f: float
  var a3: int[3]
  var ps: Pair[2]
  b0:
    c = lt x, x
    arr = const [1, 2, 3, 4]
    arr = add arr, x
    arr = add x, arr
    barr = lt arr, arr
    fa = const [1.0, 2.0, 3.0]
    i = const 0
    p = make x, fa
    f = get p [1, i*1<3]
    x = get p [0]
    p = set p [1, i*1<3] = y
    f = uniform_get table [i*1<10]
    f = uniform_get pairs [i*4<2, 1, u*1<3]
    p = uniform_get pairs [4]
    result = call fib(x)
    call noop()
    f = rand_uniform
    f = rand_normal
    f = dot fa, fa
    result = sum arr
    assert c
    x = select c, x, x
    u = to_uint x
    u = shl u, x
    x = shr x, u
    f = sqrt y
    f = clamp y, y, y
    c = not c
    y = to_float c
    a3 = const [0, 0, 0]
    branch c, b1, b2
  b1:
    jump b2
  b2:
    return

fn fib(n: int) -> result: int
  var n: int
  var result: int
  b0:
    result = copy n
    return

fn noop()
  b0:
    return
)";

// kValid with the first line equal to `from` (after trimming) replaced by `to`.
std::string with_line(const std::string& from, const std::string& to) {
  std::string text = kValid;
  const size_t at = text.find("    " + from + "\n");
  REQUIRE_MESSAGE(at != std::string::npos, "no line " << from);
  text.replace(at + 4, from.size(), to);
  return text;
}

Program parse_or_fail(const std::string& text) {
  Diagnostics diags("v.ir", text);
  auto p = parse_ir(text, "v.ir", diags);
  INFO(diags.format());
  REQUIRE(p.has_value());
  return std::move(*p);
}

// verify()'s problems, one per line of its Error; none when it is Ok.
std::vector<std::string> problems_of(const Status& verified) {
  std::vector<std::string> problems;
  if (verified.ok()) return problems;
  std::istringstream lines(verified.error());
  for (std::string line; std::getline(lines, line);)
    problems.push_back(line);
  return problems;
}

std::string joined(const std::vector<std::string>& problems) {
  std::string out;
  for (const std::string& p : problems)
    out += p + "\n";
  return out;
}

// Verifies `program`, expecting exactly the one problem `expected`.
void expect_one(const Program& program, const std::string& expected) {
  const std::vector<std::string> problems = problems_of(verify(program));
  INFO(joined(problems));
  REQUIRE(problems.size() == 1);
  CHECK(problems[0] == expected);
}

// Verifies `program`, expecting `expected` among its problems (for breaks that cascade).
void expect_among(const Program& program, const std::string& expected) {
  const std::vector<std::string> problems = problems_of(verify(program));
  INFO(joined(problems));
  CHECK(std::find(problems.begin(), problems.end(), expected) != problems.end());
}

void expect_text(const std::string& from, const std::string& to, const std::string& expected) {
  INFO(to);
  expect_one(parse_or_fail(with_line(from, to)), expected);
}

Op& op_at(Program& p, int fn, int block, int op) {
  return p.functions[fn].blocks[block].ops[op];
}

}  // namespace

TEST_CASE("verify: the valid program passes") {
  const Program p = parse_or_fail(kValid);
  const auto problems = problems_of(verify(p));
  INFO(joined(problems));
  CHECK(problems.empty());
}

TEST_CASE("verify: indices out of range") {
  Program p = parse_or_fail(kValid);
  op_at(p, 0, 0, 0).args[1] = 99;
  expect_one(p,
             "function 'main' block 0 op 0: lt: operand 1 refers to variable 99, out of range "
             "(13 variables)");

  p = parse_or_fail(kValid);
  op_at(p, 0, 0, 0).dst = 13;
  expect_one(p,
             "function 'main' block 0 op 0: lt: destination refers to variable 13, out of "
             "range (13 variables)");

  p = parse_or_fail(kValid);
  p.functions[0].blocks[1].term.target = 3;
  expect_one(p,
             "function 'main' block 1 terminator: jump target block 3 is out of range (3 "
             "blocks)");

  p = parse_or_fail(kValid);
  p.functions[0].blocks[0].term.target_else = -1;
  expect_one(p,
             "function 'main' block 0 terminator: branch false block -1 is out of range (3 "
             "blocks)");

  p = parse_or_fail(kValid);
  p.functions[0].blocks[0].term.cond = 40;
  expect_one(p, "function 'main' block 0 terminator: branch condition variable 40 is out of range");

  p = parse_or_fail(kValid);
  op_at(p, 0, 0, 14).index = 3;  // result = call fib(x)
  expect_one(p,
             "function 'main' block 0 op 14: call: callee function 3 is out of range (3 "
             "functions)");

  p = parse_or_fail(kValid);
  op_at(p, 0, 0, 11).index = 2;  // f = uniform_get table [...]
  expect_one(p,
             "function 'main' block 0 op 11: uniform_get: uniform 2 is out of range (2 "
             "uniforms)");

  p = parse_or_fail(kValid);
  p.functions[0].vars[3].type = 77;
  const auto problems = problems_of(verify(p));
  REQUIRE_FALSE(problems.empty());
  CHECK(problems[0] == "function 'main': variable 'c' has invalid type id 77");

  p = parse_or_fail(kValid);
  p.uniforms[0].type = -3;
  expect_one(p, "uniform 'table': invalid type id -3");
}

TEST_CASE("verify: params, result and blocks of a function") {
  Program p = parse_or_fail(kValid);
  p.functions[0].params = {0, 0};
  expect_one(p, "function 'main': variable 'x' is a parameter twice");

  p = parse_or_fail(kValid);
  p.functions[0].params = {0, 13};
  expect_one(p, "function 'main': parameter variable 13 is out of range (13 variables)");

  p = parse_or_fail(kValid);
  p.functions[1].result = 5;  // main's call to fib then sees no result type as well
  expect_among(p, "function 'fib': result variable 5 is out of range (2 variables)");

  p = parse_or_fail(kValid);
  p.functions[1].vars[1].type = Types::kVoid;
  // The call and the copy into it fail too; the function-level rule is the one under test.
  expect_among(p, "function 'fib': result variable 'result' has type void");

  p = parse_or_fail(kValid);
  p.functions[2].blocks.clear();
  expect_one(p, "function 'noop': has no blocks");

  p = parse_or_fail(kValid);
  p.uniforms[1].type = Types::kVoid;
  p.functions[0].blocks[0].ops.erase(p.functions[0].blocks[0].ops.begin() + 12,
                                     p.functions[0].blocks[0].ops.begin() + 14);
  expect_one(p, "uniform 'pairs': type is void");
}

TEST_CASE("verify: terminators") {
  expect_text("branch c, b1, b2", "branch x, b1, b2",
              "function 'main' block 0 terminator: branch condition 'x' (int) must be a bool "
              "scalar");
  expect_text("branch c, b1, b2", "branch barr, b1, b2",
              "function 'main' block 0 terminator: branch condition 'barr' (bool[4]) must be a "
              "bool scalar");
  expect_text("jump b2", "pushjump b2, b0",
              "function 'main' block 1 terminator: pushjump belongs to the lowered (Figure 4) "
              "form");
}

TEST_CASE("verify: operand counts and destinations") {
  expect_text("c = lt x, x", "c = lt x, x, x",
              "function 'main' block 0 op 0: lt: takes 2 operands, has 3");
  expect_text("c = not c", "c = not", "function 'main' block 0 op 27: not: takes 1 operand, has 0");
  expect_text("c = lt x, x", "lt x, x", "function 'main' block 0 op 0: lt: has no destination");
  expect_text("assert c", "c = assert c",
              "function 'main' block 0 op 20: assert: defines nothing but has destination 'c' "
              "(bool)");
  expect_text("f = rand_uniform", "f = rand_uniform x",
              "function 'main' block 0 op 16: rand_uniform: takes 0 operands, has 1");
}

TEST_CASE("verify: calls") {
  expect_text("call noop()", "x = call noop()",
              "function 'main' block 0 op 15: call: 'noop' returns nothing but the call has "
              "destination 'x' (int)");
  expect_text("result = call fib(x)", "call fib(x)",
              "function 'main' block 0 op 14: call: 'fib' returns int; the call needs a "
              "destination");
  expect_text("result = call fib(x)", "f = call fib(x)",
              "function 'main' block 0 op 14: call: destination 'f' (float) does not match the "
              "result type int of 'fib'");
  expect_text("result = call fib(x)", "result = call fib(x, x)",
              "function 'main' block 0 op 14: call: 'fib' takes 1 argument, the call passes 2");
  expect_text("result = call fib(x)", "result = call fib(y)",
              "function 'main' block 0 op 14: call: argument 0 'y' (float) does not match "
              "parameter 'n' of type int");
}

TEST_CASE("verify: elementwise typing") {
  expect_text("f = sqrt y", "f = sqrt x",
              "function 'main' block 0 op 25: sqrt: does not accept int operands");
  expect_text("c = lt x, x", "c = lt x, y",
              "function 'main' block 0 op 0: lt: operands 'x' (int) and 'y' (float) differ in "
              "scalar kind");
  expect_text("arr = add arr, x", "arr = add arr, a3",
              "function 'main' block 0 op 2: add: array operands 'arr' (int[4]) and 'a3' "
              "(int[3]) differ in shape");
  expect_text("arr = add arr, x", "x = add arr, x",
              "function 'main' block 0 op 2: add: destination 'x' (int) must be int[4]");
  expect_text("barr = lt arr, arr", "arr = lt arr, arr",
              "function 'main' block 0 op 4: lt: destination 'arr' (int[4]) must be bool[4]");
  expect_text("c = lt x, x", "x = lt x, x",
              "function 'main' block 0 op 0: lt: destination 'x' (int) must be bool");
  expect_text("c = lt x, x", "c = lt p, p",
              "function 'main' block 0 op 0: lt: operand 'p' (Pair) must be a scalar or an array "
              "of scalars");
  expect_text("c = not c", "c = not x",
              "function 'main' block 0 op 27: not: does not accept int "
              "operands");
  expect_text("u = shl u, x", "u = shl u, y",
              "function 'main' block 0 op 23: shl: operands 'u' (uint) and 'y' (float) differ "
              "in scalar kind");
  expect_text("u = to_uint x", "x = to_uint x",
              "function 'main' block 0 op 22: to_uint: destination 'x' (int) must be uint");
  expect_text("f = clamp y, y, y", "f = clamp y, y, x",
              "function 'main' block 0 op 26: clamp: operands 'y' (float) and 'x' (int) differ "
              "in scalar kind");
}

TEST_CASE("verify: select") {
  expect_text("x = select c, x, x", "x = select x, x, x",
              "function 'main' block 0 op 21: select: condition 'x' (int) must be a bool scalar, "
              "or a bool array of 'x' (int)'s shape");
  // A bool array picks element by element (a vectorised loop's `if`): of the values' shape only.
  CHECK(verify(parse_or_fail(with_line("x = select c, x, x", "arr = select barr, arr, arr"))).ok());
  expect_text("x = select c, x, x", "fa = select barr, fa, fa",
              "function 'main' block 0 op 21: select: condition 'barr' (bool[4]) must be a bool "
              "scalar, or a bool array of 'fa' (float[3])'s shape");
  expect_text("x = select c, x, x", "x = select c, x, y",
              "function 'main' block 0 op 21: select: operands 'x' (int) and 'y' (float) and "
              "destination 'x' (int) must have one type");
}

TEST_CASE("verify: const, copy and make") {
  expect_text("arr = const [1, 2, 3, 4]", "arr = const [1, 2, 3]",
              "function 'main' block 0 op 1: const: has 3 immediate words but destination 'arr' "
              "(int[4]) takes 4");
  Program p = parse_or_fail(with_line("i = const 0", "i = copy y"));
  expect_one(p,
             "function 'main' block 0 op 6: copy: copies 'y' (float) into 'i' (int): types "
             "differ");
  expect_text("p = make x, fa", "p = make x, x",
              "function 'main' block 0 op 7: make: operands hold 2 words but destination 'p' "
              "(Pair) takes 4");
}

TEST_CASE("verify: access paths") {
  expect_text("f = get p [1, i*1<3]", "f = get p [1, i*1<4]",
              "function 'main' block 0 op 8: get: path reaches word 5 of 'p' (Pair) (4 words) "
              "with a 1-word part (float)");
  expect_text("f = get p [1, i*1<3]", "f = get p [4]",
              "function 'main' block 0 op 8: get: path reaches word 5 of 'p' (Pair) (4 words) "
              "with a 1-word part (float)");
  expect_text("f = get p [1, i*1<3]", "fa = get p [2]",
              "function 'main' block 0 op 8: get: path reaches word 5 of 'p' (Pair) (4 words) "
              "with a 3-word part (float[3])");
  expect_text("f = get p [1, i*1<3]", "f = get p [1, y*1<3]",
              "function 'main' block 0 op 8: get: index 'y' (float) must be an int or uint "
              "scalar");
  expect_text("f = get p [1, i*1<3]", "f = get p [1, ?*1<3]",
              "function 'main' block 0 op 8: get: path has 1 dynamic step but the op has 0 index "
              "operands");
  expect_text("f = get p [1, i*1<3]", "f = get p [1, i*1<0]",
              "function 'main' block 0 op 8: get: dynamic path step 1 has count 0");
  expect_text("p = set p [1, i*1<3] = y", "fa = set p [1, i*1<3] = y",
              "function 'main' block 0 op 10: set: destination 'fa' (float[3]) must have the "
              "aggregate's type, Pair");
  expect_text("p = set p [1, i*1<3] = y", "p = set p [1, i*1<3] = fa",
              "function 'main' block 0 op 10: set: path reaches word 6 of 'p' (Pair) (4 words) "
              "with a 3-word part (float[3])");
  expect_text("f = uniform_get table [i*1<10]", "f = uniform_get table [i*1<11]",
              "function 'main' block 0 op 11: uniform_get: path reaches word 11 of uniform "
              "'table' (10 words) with a 1-word part (float)");
  expect_text("f = uniform_get pairs [i*4<2, 1, u*1<3]", "f = uniform_get pairs [i*4<2, 2, u*1<3]",
              "function 'main' block 0 op 12: uniform_get: path reaches word 9 of uniform "
              "'pairs' (8 words) with a 1-word part (float)");
}

TEST_CASE("verify: reductions, random numbers and assert") {
  expect_text("result = sum arr", "result = sum x",
              "function 'main' block 0 op 19: sum: operand 'x' (int) must be an array of scalars");
  expect_text("result = sum arr", "c = sum barr",
              "function 'main' block 0 op 19: sum: does not accept bool arrays");
  expect_text("result = sum arr", "f = sum arr",
              "function 'main' block 0 op 19: sum: destination 'f' (float) must be int");
  expect_text("f = dot fa, fa", "f = dot fa, arr",
              "function 'main' block 0 op 18: dot: operands 'fa' (float[3]) and 'arr' (int[4]) "
              "must have one type");
  expect_text("f = rand_normal", "x = rand_normal",
              "function 'main' block 0 op 17: rand_normal: destination 'x' (int) must be float");
  expect_text("assert c", "assert x",
              "function 'main' block 0 op 20: assert: condition 'x' (int) must be a bool scalar");
}

TEST_CASE("verify: update and stray fields are rejected in Figure 2; push and pop are tapes") {
  expect_text("assert c", "update x",
              "function 'main' block 0 op 20: update: update belongs to the lowered (Figure 4) "
              "form");
  // A tape (passes/differentiate.h): push and pop of a function's own variable.
  Program tape = parse_or_fail(kValid);
  Op push;
  push.code = OpCode::Push;
  push.args = {0};
  tape.functions[0].blocks[0].ops.push_back(push);
  push.code = OpCode::Pop;
  tape.functions[0].blocks[0].ops.push_back(push);
  CHECK(verify(tape).ok());
  Program p = parse_or_fail(kValid);
  op_at(p, 0, 0, 0).imm = {1};
  expect_one(p, "function 'main' block 0 op 0: lt: only 'const' has immediate words");
  p = parse_or_fail(kValid);
  op_at(p, 0, 0, 0).index = 0;
  expect_one(p,
             "function 'main' block 0 op 0: lt: only call and uniform_get have an index "
             "(found 0)");
  p = parse_or_fail(kValid);
  op_at(p, 0, 0, 0).path = {PathStep{}};
  expect_one(p, "function 'main' block 0 op 0: lt: only get, set and uniform_get have a path");
}

// ---- Figure 4 ---------------------------------------------------------------------------------

namespace {

Op make_op(OpCode code, VarId dst, std::vector<VarId> args) {
  Op op;
  op.code = code;
  op.dst = dst;
  op.args = std::move(args);
  return op;
}

// fib lowered by hand: n is stacked, result a register, t a temp.
struct LoweredFixture {
  Program program = parse_or_fail(kValid);
  LoweredProgram low;
  LoweredFixture() {
    low.source = &program;
    low.entry_function = 1;
    low.vars = {{"fib.n", Types::kInt, Storage::Stacked, 1, 0},
                {"fib.result", Types::kInt, Storage::Register, 1, 1},
                {"fib.t", Types::kBool, Storage::Temp, 1, -1}};
    low.inputs = {0};
    low.output = 1;
    LoweredBlock b0{"fib.b0", 1, {}, {}, {}};
    b0.ops.push_back(make_op(OpCode::Lt, 2, {0, 0}));
    b0.term = Terminator{Terminator::Kind::Branch, 2, 1, 2, {}};
    LoweredBlock b1{"fib.b1", 1, {}, {}, {}};
    b1.ops.push_back(make_op(OpCode::Push, -1, {0}));
    b1.term = Terminator{Terminator::Kind::PushJump, -1, 0, 2, {}};
    LoweredBlock b2{"fib.b1.ret", 1, {}, {}, {}};
    b2.ops.push_back(make_op(OpCode::Pop, -1, {0}));
    b2.ops.push_back(make_op(OpCode::Update, -1, {0}));
    b2.ops.push_back(make_op(OpCode::Copy, 1, {0}));
    b2.term = Terminator{Terminator::Kind::Return, -1, -1, -1, {}};
    low.blocks = {b0, b1, b2};
  }
  void expect_one(const std::string& expected) {
    const auto problems = problems_of(verify(low));
    INFO(joined(problems));
    REQUIRE(problems.size() == 1);
    CHECK(problems[0] == expected);
  }
};

}  // namespace

TEST_CASE("verify lowered: the valid lowered program passes") {
  LoweredFixture f;
  const auto problems = problems_of(verify(f.low));
  INFO(joined(problems));
  CHECK(problems.empty());
}

TEST_CASE("verify lowered: calls are forbidden, pushjump allowed") {
  LoweredFixture f;
  Op call = make_op(OpCode::Call, 1, {0});
  call.index = 1;
  f.low.blocks[2].ops.push_back(call);
  f.expect_one(
      "block 2 'fib.b1.ret' op 3: call: not allowed in the lowered form (it uses push, "
      "pop and pushjump)");
}

TEST_CASE("verify lowered: stack ops only on stacked variables") {
  LoweredFixture f;
  f.low.blocks[1].ops[0].args = {1};
  f.expect_one(
      "block 1 'fib.b1' op 0: push: variable 'fib.result' (int) is register, not "
      "stacked");
}

TEST_CASE("verify lowered: a temp is never read before it is written in its block") {
  LoweredFixture f;
  f.low.blocks[1].ops.push_back(make_op(OpCode::Not, 2, {2}));
  f.expect_one(
      "block 1 'fib.b1' op 1: temp variable 'fib.t' is read before it is written in "
      "this block");

  LoweredFixture g;
  g.low.blocks[1].term = Terminator{Terminator::Kind::Branch, 2, 0, 2, {}};
  g.expect_one(
      "block 1 'fib.b1' terminator: temp variable 'fib.t' is read before it is written "
      "in this block");
}

TEST_CASE("verify lowered: targets, entry, inputs and output in range") {
  LoweredFixture f;
  f.low.blocks[1].term.target_else = 3;
  f.expect_one("block 1 'fib.b1' terminator: pushjump return block 3 is out of range (3 blocks)");

  LoweredFixture g;
  g.low.entry_block = 3;
  g.expect_one("lowered program: entry block 3 is out of range (3 blocks)");

  LoweredFixture h;
  h.low.inputs = {7};
  h.expect_one("lowered program: input variable 7 is out of range (3 variables)");

  LoweredFixture k;
  k.low.output = 3;
  k.expect_one("lowered program: output variable 3 is out of range (3 variables)");

  LoweredFixture m;
  m.low.entry_function = 9;
  m.expect_one("lowered program: entry function 9 is out of range (3 functions)");
}

TEST_CASE("verify lowered: op typing uses the merged variables' types") {
  LoweredFixture f;
  f.low.blocks[2].ops[2] = make_op(OpCode::Copy, 2, {0});
  f.expect_one(
      "block 2 'fib.b1.ret' op 2: copy: copies 'fib.n' (int) into 'fib.t' (bool): types "
      "differ");
}

}  // namespace ab
