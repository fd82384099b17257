// Tests of the textual IR: print_ir / parse_ir round trips (byte-identical text and structural
// equality), the exact spelling of a small program, parse errors with line:col, garbage input,
// print_lowered, and a round trip of every samples/*.ab program.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <random>

#include "ir/text.h"
#include "ir/verify.h"
#include "lang/frontend.h"
#include "passes/lower.h"
#include "support/read_bytes.h"

namespace ab {
namespace {

// ---- building programs by hand --------------------------------------------------------------

struct FnBuilder {
  Function fn;
  VarId var(std::string name, TypeId type) {
    fn.vars.push_back({std::move(name), type});
    return static_cast<VarId>(fn.vars.size() - 1);
  }
  int block(SourceLoc loc = {}) {
    fn.blocks.emplace_back();
    fn.blocks.back().loc = loc;
    return static_cast<int>(fn.blocks.size() - 1);
  }
  Op& op(int b, OpCode code, VarId dst, std::vector<VarId> args, SourceLoc loc = {}) {
    Op op;
    op.code = code;
    op.dst = dst;
    op.args = std::move(args);
    op.loc = loc;
    fn.blocks[b].ops.push_back(std::move(op));
    return fn.blocks[b].ops.back();
  }
  void term(int b, Terminator::Kind kind, int target = -1, int target_else = -1, VarId cond = -1,
            SourceLoc loc = {}) {
    fn.blocks[b].term = Terminator{kind, cond, target, target_else, loc};
  }
};

PathStep fixed(uint32_t offset) {
  return PathStep{false, offset, 0, 0};
}
PathStep dynamic(uint32_t stride, uint32_t count) {
  return PathStep{true, 0, stride, count};
}

// A program exercising every opcode, every terminator kind, paths, structs, arrays, uniforms,
// awkward names and source locations. It need not pass the verifier (push/pushjump in Figure 2).
Program everything_program() {
  Program p;
  p.file = "dir/every \"thing\".ab";
  Types& t = p.types;
  const TypeId f3 = t.array(Types::kFloat, 3);                                 // 5
  const TypeId pair = *t.add_struct("Pair", {{"a", Types::kInt}, {"b", f3}});  // 6
  const TypeId i4 = t.array(Types::kInt, 4);                                   // 7
  const TypeId pairs = t.array(pair, 2);                                       // 8
  const TypeId f23 = t.array(f3, 2);                                           // 9: float[2][3]
  const TypeId b4 = t.array(Types::kBool, 4);                                  // 10
  const TypeId empty = *t.add_struct("Empty", {});                             // 11
  const TypeId u2 = t.array(Types::kUInt, 2);                                  // 12
  p.uniforms.push_back({"table", t.array(Types::kFloat, 10), {3, 1}});  // interns float[10]: 13
  p.uniforms.push_back({"weights", pairs, {4, 1}});
  p.uniforms.push_back({"table", Types::kInt, {}});  // duplicate name: referred to as %2

  FnBuilder m;
  m.fn.name = "main";
  m.fn.loc = {6, 1};
  const VarId x = m.var("x", Types::kInt);
  const VarId y = m.var("y.1", Types::kFloat);
  const VarId result = m.var("result", Types::kFloat);
  const VarId c = m.var("c", Types::kBool);
  const VarId arr = m.var("arr", i4);
  const VarId fa = m.var("fa", f3);
  const VarId pr = m.var("p", pair);
  const VarId i = m.var("i", Types::kInt);
  const VarId u = m.var("u", Types::kUInt);
  const VarId dup1 = m.var("t", Types::kFloat);
  const VarId dup2 = m.var("t", Types::kFloat);
  const VarId odd = m.var("odd name", f23);
  const VarId bs = m.var("bs", b4);
  const VarId e = m.var("e", empty);
  const VarId uu = m.var("uu", u2);
  m.fn.params = {x, y};
  m.fn.result = result;

  const int b0 = m.block({6, 30});
  m.op(b0, OpCode::Const, x, {}, {7, 3}).imm = {static_cast<uint32_t>(-17)};
  m.op(b0, OpCode::Const, y, {}, {8, 3}).imm = {float_bits(0.1f)};
  m.op(b0, OpCode::Const, dup1, {}).imm = {0x7fc00001};  // a NaN with a payload
  m.op(b0, OpCode::Const, dup2, {}).imm = {float_bits(-0.0f)};
  m.op(b0, OpCode::Const, fa, {}).imm = {float_bits(1.0f), float_bits(1e-40f),
                                         float_bits(3.4028235e38f)};
  m.op(b0, OpCode::Const, c, {}).imm = {1};
  m.op(b0, OpCode::Const, bs, {}).imm = {0, 1, 7, 1};  // 7 is no bool: printed as raw bits
  m.op(b0, OpCode::Const, u, {}).imm = {4000000000u};
  m.op(b0, OpCode::Const, uu, {}).imm = {};            // too few words: raw form
  m.op(b0, OpCode::Const, pr, {}).imm = {1, 2, 3, 4};  // a struct: raw form
  m.op(b0, OpCode::Const, e, {}).imm = {};
  m.op(b0, OpCode::Const, arr, {}).imm = {1, 0xffffffff, 3, 4};
  m.op(b0, OpCode::Copy, dup1, {dup2});
  m.op(b0, OpCode::Make, pr, {x, fa}, {9, 5});
  m.op(b0, OpCode::Make, e, {});
  m.op(b0, OpCode::Get, y, {pr, i}, {10, 5}).path = {fixed(1), dynamic(1, 3)};
  m.op(b0, OpCode::Get, y, {odd, i, x}).path = {dynamic(3, 2), dynamic(1, 3)};
  Op& odd_step = m.op(b0, OpCode::Get, y, {odd, i});
  odd_step.path = {PathStep{true, 2, 3, 2}, PathStep{false, 1, 4, 5}};  // every field set
  m.op(b0, OpCode::Get, y, {pr}).path = {dynamic(1, 3)};                // index missing: "?"
  m.op(b0, OpCode::Get, y, {pr, i, x}).path = {};                       // surplus args
  m.op(b0, OpCode::Set, pr, {pr, y, i}, {11, 5}).path = {fixed(1), dynamic(1, 3)};
  m.op(b0, OpCode::Set, pr, {pr}).path = {fixed(0)};  // value missing
  Op& ug = m.op(b0, OpCode::UniformGet, y, {i}, {12, 5});
  ug.index = 0;
  ug.path = {dynamic(1, 10)};
  Op& ug2 = m.op(b0, OpCode::UniformGet, pr, {});
  ug2.index = 1;
  ug2.path = {fixed(4)};
  Op& ug3 = m.op(b0, OpCode::UniformGet, x, {});
  ug3.index = 2;
  m.op(b0, OpCode::Select, x, {c, x, x});
  // Every elementwise, reduction, random, check and stack op, spelled generically.
  for (int code = static_cast<int>(OpCode::Neg); code < static_cast<int>(OpCode::Count_); ++code) {
    const OpCode oc = static_cast<OpCode>(code);
    if (oc == OpCode::Call) continue;
    const OpInfo& info = op_info(oc);
    std::vector<VarId> args;
    for (int k = 0; k < std::max(info.arity, 0); ++k)
      args.push_back(k % 2 ? i : x);
    m.op(b0, oc, info.has_dst ? x : -1, args, {20 + code, 1 + code % 7});
  }
  m.op(b0, OpCode::Add, -1, {x, x});  // a missing dst round-trips as missing
  Op& call = m.op(b0, OpCode::Call, x, {x}, {13, 9});
  call.index = 1;
  Op& void_call = m.op(b0, OpCode::Call, -1, {}, {14, 9});
  void_call.index = 2;
  Op& dup_call = m.op(b0, OpCode::Call, -1, {});
  dup_call.index = 3;
  m.term(b0, Terminator::Kind::Branch, 1, 2, c, {15, 3});
  const int b1 = m.block({16, 1});
  m.term(b1, Terminator::Kind::Jump, 3, -1, -1, {16, 9});
  const int b2 = m.block();
  m.term(b2, Terminator::Kind::PushJump, 0, 3);
  const int b3 = m.block({-1, 0});
  m.term(b3, Terminator::Kind::Return, -1, -1, -1, {17, 1});
  p.functions.push_back(std::move(m.fn));

  FnBuilder fib;
  fib.fn.name = "fib";
  fib.fn.loc = {20, 1};
  const VarId n = fib.var("n", Types::kInt);
  fib.fn.params = {n};
  fib.fn.result = fib.var("result", Types::kInt);
  const int fb = fib.block({20, 1});
  fib.op(fb, OpCode::Call, fib.fn.result, {n}).index = 1;  // recursion
  fib.term(fb, Terminator::Kind::Return);
  p.functions.push_back(std::move(fib.fn));

  FnBuilder noop;
  noop.fn.name = "dup";
  noop.term(noop.block(), Terminator::Kind::Return);
  p.functions.push_back(std::move(noop.fn));
  FnBuilder noop2;
  noop2.fn.name = "dup";  // same name: calls refer to it as %3
  noop2.term(noop2.block(), Terminator::Kind::Return);
  p.functions.push_back(std::move(noop2.fn));

  FnBuilder no_blocks;  // printable and parseable, though the verifier rejects it
  no_blocks.fn.name = "weird fn";
  no_blocks.var("a", Types::kInt);
  no_blocks.fn.params = {0, 0};
  p.functions.push_back(std::move(no_blocks.fn));
  return p;
}

// ---- structural equality ----------------------------------------------------------------------

void check_same_loc(SourceLoc a, SourceLoc b) {
  CHECK(a.line == b.line);
  CHECK(a.col == b.col);
}

void check_same_ops(const std::vector<Op>& a, const std::vector<Op>& b) {
  REQUIRE(a.size() == b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    INFO("op " << i << " (" << op_info(a[i].code).name << ")");
    CHECK(a[i].code == b[i].code);
    CHECK(a[i].dst == b[i].dst);
    CHECK(a[i].args == b[i].args);
    CHECK(a[i].imm == b[i].imm);
    CHECK(a[i].index == b[i].index);
    REQUIRE(a[i].path.size() == b[i].path.size());
    for (size_t k = 0; k < a[i].path.size(); ++k) {
      CHECK(a[i].path[k].dynamic == b[i].path[k].dynamic);
      CHECK(a[i].path[k].offset == b[i].path[k].offset);
      CHECK(a[i].path[k].stride == b[i].path[k].stride);
      CHECK(a[i].path[k].count == b[i].path[k].count);
    }
    check_same_loc(a[i].loc, b[i].loc);
  }
}

void check_same_program(const Program& a, const Program& b) {
  CHECK(a.file == b.file);
  REQUIRE(a.types.size() == b.types.size());
  for (size_t id = 0; id < a.types.size(); ++id) {
    INFO("type " << id);
    const Type &ta = a.types[static_cast<TypeId>(id)], &tb = b.types[static_cast<TypeId>(id)];
    CHECK(ta.kind == tb.kind);
    CHECK(ta.scalar == tb.scalar);
    CHECK(ta.elem == tb.elem);
    CHECK(ta.count == tb.count);
    CHECK(ta.struct_index == tb.struct_index);
    CHECK(ta.words == tb.words);
  }
  REQUIRE(a.types.structs().size() == b.types.structs().size());
  for (size_t s = 0; s < a.types.structs().size(); ++s) {
    const StructDef &sa = a.types.structs()[s], &sb = b.types.structs()[s];
    CHECK(sa.name == sb.name);
    CHECK(sa.words == sb.words);
    REQUIRE(sa.fields.size() == sb.fields.size());
    for (size_t f = 0; f < sa.fields.size(); ++f) {
      CHECK(sa.fields[f].name == sb.fields[f].name);
      CHECK(sa.fields[f].type == sb.fields[f].type);
      CHECK(sa.fields[f].offset == sb.fields[f].offset);
    }
  }
  REQUIRE(a.uniforms.size() == b.uniforms.size());
  for (size_t u = 0; u < a.uniforms.size(); ++u) {
    CHECK(a.uniforms[u].name == b.uniforms[u].name);
    CHECK(a.uniforms[u].type == b.uniforms[u].type);
    check_same_loc(a.uniforms[u].loc, b.uniforms[u].loc);
  }
  REQUIRE(a.functions.size() == b.functions.size());
  for (size_t f = 0; f < a.functions.size(); ++f) {
    const Function &fa = a.functions[f], &fb = b.functions[f];
    INFO("function " << fa.name);
    CHECK(fa.name == fb.name);
    CHECK(fa.params == fb.params);
    CHECK(fa.result == fb.result);
    check_same_loc(fa.loc, fb.loc);
    REQUIRE(fa.vars.size() == fb.vars.size());
    for (size_t v = 0; v < fa.vars.size(); ++v) {
      CHECK(fa.vars[v].name == fb.vars[v].name);
      CHECK(fa.vars[v].type == fb.vars[v].type);
    }
    REQUIRE(fa.blocks.size() == fb.blocks.size());
    for (size_t bl = 0; bl < fa.blocks.size(); ++bl) {
      INFO("block " << bl);
      check_same_loc(fa.blocks[bl].loc, fb.blocks[bl].loc);
      check_same_ops(fa.blocks[bl].ops, fb.blocks[bl].ops);
      const Terminator &x = fa.blocks[bl].term, &y = fb.blocks[bl].term;
      CHECK(x.kind == y.kind);
      CHECK(x.cond == y.cond);
      CHECK(x.target == y.target);
      CHECK(x.target_else == y.target_else);
      check_same_loc(x.loc, y.loc);
    }
  }
}

std::optional<Program> parse(const std::string& text, Diagnostics* out = nullptr) {
  Diagnostics diags("test.ir", text);
  auto p = parse_ir(text, "test.ir", diags);
  if (out) *out = diags;
  if (!p) INFO(diags.format());
  return p;
}

// Parses `text` expecting failure; returns the first error.
Diagnostic first_error(const std::string& text) {
  Diagnostics diags("test.ir", text);
  const auto p = parse_ir(text, "test.ir", diags);
  CHECK_FALSE(p.has_value());
  REQUIRE(diags.has_errors());
  return diags.errors().front();
}

}  // namespace

TEST_CASE("text: every opcode, path, type and terminator round-trips exactly") {
  const Program original = everything_program();
  const std::string text = print_ir(original);
  Diagnostics diags("every.ir", text);
  const auto parsed = parse_ir(text, "every.ir", diags);
  INFO(text);
  INFO(diags.format());
  REQUIRE(parsed.has_value());
  check_same_program(original, *parsed);
  CHECK(print_ir(*parsed) == text);
}

TEST_CASE("text: the printed form of a small program reads as documented") {
  Program p;
  p.file = "fib.ab";
  const TypeId f3 = p.types.array(Types::kFloat, 3);
  p.types.add_struct("Pair", {{"a", Types::kInt}, {"b", f3}});
  p.uniforms.push_back({"table", f3, {2, 1}});
  FnBuilder f;
  f.fn.name = "fib";
  f.fn.loc = {5, 1};
  const VarId n = f.var("n", Types::kInt);
  const VarId result = f.var("result", Types::kInt);
  const VarId c = f.var("c", Types::kBool);
  const VarId g = f.var("g", Types::kFloat);
  f.fn.params = {n};
  f.fn.result = result;
  const int b0 = f.block({5, 1});
  f.op(b0, OpCode::Le, c, {n, n}, {6, 8});
  f.op(b0, OpCode::Const, g, {}, {6, 20}).imm = {float_bits(1.5f)};
  Op& ug = f.op(b0, OpCode::UniformGet, g, {n}, {7, 3});
  ug.index = 0;
  ug.path = {dynamic(1, 3)};
  f.op(b0, OpCode::Call, result, {n}, {7, 12}).index = 0;
  f.term(b0, Terminator::Kind::Branch, 1, 1, c, {6, 5});
  const int b1 = f.block({8, 1});
  f.term(b1, Terminator::Kind::Return, -1, -1, -1, {8, 1});
  p.functions.push_back(std::move(f.fn));

  const std::string expected =
      "program \"fib.ab\"\n"
      "\n"
      "type float[3]\n"
      "struct Pair { a: int, b: float[3] }\n"
      "\n"
      "uniform table: float[3]  @2:1\n"
      "\n"
      "fn fib(n: int) -> result: int  @5:1\n"
      "  var n: int\n"
      "  var result: int\n"
      "  var c: bool\n"
      "  var g: float\n"
      "  b0:  @5:1\n"
      "    c = le n, n  @6:8\n"
      "    g = const 1.5  @6:20\n"
      "    g = uniform_get table [n*1<3]  @7:3\n"
      "    result = call fib(n)  @7:12\n"
      "    branch c, b1, b1  @6:5\n"
      "  b1:  @8:1\n"
      "    return  @8:1\n";
  CHECK(print_ir(p) == expected);
}

TEST_CASE("text: a hand-written program parses to the ops it spells") {
  const std::string text =
      "program \"hand.ab\"   # comments and blank lines are fine\n"
      "type int[4]\n"
      "\n"
      "fn main(a: int[4], i: int) -> result: int  @1:1\n"
      "  var a: int[4]\n"
      "  var i: int\n"
      "  var result: int\n"
      "  var f: float\n"
      "  b0:\n"
      "    result = get a [i*1<4]  @2:3\n"
      "    a = set a [2] = result\n"
      "    f = const -2.5e-3\n"
      "    a = const [1, -2, 0x7fffffff, 4]\n"
      "    return  @3:1\n";
  const auto p = parse(text);
  REQUIRE(p.has_value());
  CHECK(p->file == "hand.ab");
  REQUIRE(p->functions.size() == 1);
  const Function& fn = p->functions[0];
  CHECK(fn.params == std::vector<VarId>{0, 1});
  CHECK(fn.result == 2);
  CHECK(p->types.to_string(fn.vars[0].type) == "int[4]");
  REQUIRE(fn.blocks.size() == 1);
  const auto& ops = fn.blocks[0].ops;
  REQUIRE(ops.size() == 4);
  CHECK(ops[0].code == OpCode::Get);
  CHECK(ops[0].dst == 2);
  CHECK(ops[0].args == std::vector<VarId>{0, 1});
  REQUIRE(ops[0].path.size() == 1);
  CHECK(ops[0].path[0].dynamic);
  CHECK(ops[0].path[0].stride == 1);
  CHECK(ops[0].path[0].count == 4);
  CHECK(ops[0].loc.line == 2);
  CHECK(ops[0].loc.col == 3);
  CHECK(ops[1].code == OpCode::Set);
  CHECK(ops[1].args == std::vector<VarId>{0, 2});  // aggregate, value
  REQUIRE(ops[1].path.size() == 1);
  CHECK_FALSE(ops[1].path[0].dynamic);
  CHECK(ops[1].path[0].offset == 2);
  CHECK(ops[1].loc.line == 0);
  CHECK(ops[2].imm == std::vector<uint32_t>{float_bits(-2.5e-3f)});
  CHECK(ops[3].imm == std::vector<uint32_t>{1, 0xfffffffe, 0x7fffffff, 4});
  CHECK(fn.blocks[0].term.kind == Terminator::Kind::Return);
  CHECK(fn.blocks[0].term.loc.line == 3);
  CHECK(verify(*p).ok());
}

TEST_CASE("text: type ids come back in table order, structs between arrays") {
  Program p;
  p.file = "types.ab";
  Types& t = p.types;
  const TypeId s1 = *t.add_struct("A", {{"x", Types::kBool}});             // 5
  const TypeId a1 = t.array(s1, 2);                                        // 6
  const TypeId a2 = t.array(a1, 3);                                        // 7: A[3][2]
  const TypeId s2 = *t.add_struct("B", {{"y", a2}, {"z", Types::kUInt}});  // 8
  const TypeId a3 = t.array(Types::kFloat, 0);                             // 9: empty array
  FnBuilder f;
  f.fn.name = "f";
  f.var("v", s2);
  f.var("w", a3);
  f.term(f.block(), Terminator::Kind::Return);
  p.functions.push_back(std::move(f.fn));
  const std::string text = print_ir(p);
  CHECK(text.find("type A[2]\ntype A[3][2]\nstruct B { y: A[3][2], z: uint }\ntype float[0]\n") !=
        std::string::npos);
  const auto back = parse(text);
  REQUIRE(back.has_value());
  check_same_program(p, *back);
  CHECK(back->types.find_struct("B") == s2);
  CHECK(back->functions[0].vars[1].type == a3);
}

TEST_CASE("text: floats print as short decimals that read back to the same bits") {
  for (const float value :
       {0.1f, 1.0f / 3.0f, -2.0f, 1e-45f, 3.4028235e38f, 16777217.0f, -0.0f, 123456.789f}) {
    Program p;
    p.file = "f.ab";
    FnBuilder f;
    f.fn.name = "f";
    const VarId v = f.var("v", Types::kFloat);
    const int b = f.block();
    f.op(b, OpCode::Const, v, {}).imm = {float_bits(value)};
    f.term(b, Terminator::Kind::Return);
    p.functions.push_back(std::move(f.fn));
    const std::string text = print_ir(p);
    const auto back = parse(text);
    REQUIRE(back.has_value());
    CHECK(back->functions[0].blocks[0].ops[0].imm[0] == float_bits(value));
  }
  // Spot-check the spelling of a few by hand.
  Program p;
  p.file = "f.ab";
  FnBuilder f;
  f.fn.name = "f";
  const VarId v = f.var("v", Types::kFloat);
  const int b = f.block();
  for (uint32_t bits : {float_bits(0.1f), float_bits(2.0f), float_bits(-0.0f), 0x7f800000u})
    f.op(b, OpCode::Const, v, {}).imm = {bits};
  f.term(b, Terminator::Kind::Return);
  p.functions.push_back(std::move(f.fn));
  const std::string text = print_ir(p);
  CHECK(text.find("v = const 0.1\n    v = const 2.0\n    v = const -0.0\n"
                  "    v = const 0x7f800000\n") != std::string::npos);
}

TEST_CASE("text: parse errors carry the line and column in the IR text") {
  const std::string head = "program \"e.ab\"\nfn main() -> r: int\n  var r: int\n  b0:\n";
  struct Case {
    std::string text;
    int line, col;
    std::string message;
  };
  const std::vector<Case> cases = {
      {head + "    r = add r, q\n    return\n", 5, 16, "unknown variable 'q'"},
      {head + "    r = frob r\n    return\n", 5, 9, "unknown op 'frob'"},
      {head + "    r = add r, r $\n    return\n", 5, 18, "unexpected character '$'"},
      {head + "    r = add r r\n    return\n", 5, 15, "unexpected 'r' at end of line"},
      {head + "    jump b7\n", 5, 10, "unknown block b7 (function 'main' has 1 blocks)"},
      {head + "    return\n  b2:\n    return\n", 6, 3,
       "blocks are numbered in order: expected b1, found b2"},
      {head + "    r = const 1.5\n    return\n", 5, 15,
       "an int '1.5' is not an integer in "
       "[-2147483648, 2147483647]"},
      {head + "    r = const 99999999999\n    return\n", 5, 15,
       "an int '99999999999' is not an integer in [-2147483648, 2147483647]"},
      {head + "    return\n    r = copy r\n", 6, 5,
       "statement after the block's terminator (start a new block with a label)"},
      {head + "    r = call nobody()\n    return\n", 5, 14, "unknown function 'nobody'"},
      {head + "    return\n    %0 = copy r\n", 6, 5,
       "statement after the block's terminator (start a new block with a label)"},
      {head + "    r = get r [i*1<4]\n    return\n", 5, 16, "unknown variable 'i'"},
      {head + "    r = add r, %3\n    return\n", 5, 16, "variable %3 out of range (1 declared)"},
      {"program \"e.ab\"\nfn main(x: float) -> r: int\n  var r: int\n  var x: int\n  b0:\n"
       "    return\n",
       2, 12, "'x' is declared as int but the header says float"},
      {"program \"e.ab\"\ntype int[4][2]\n", 2, 1,
       "type table out of order: this declares type 6 where type 5 is next"},
      {"program \"e.ab\"\nuniform u: Nope\n", 2, 12,
       "unknown type 'Nope' (structs are declared before use)"},
      {"program \"e.ab\nfn f()\n", 1, 9, "unterminated string"},
      {"fn f()\n", 1, 1, "expected 'program \"file\"' as the first line"},
      {"", 1, 1, "missing 'program \"file\"' header"},
      {"program \"e.ab\"\n  var x: int\n", 2, 3, "'var' outside a function"},
      {head, 2, 1, "block b0 of function 'main' has no terminator"},
  };
  for (const Case& c : cases) {
    INFO(c.text);
    const Diagnostic d = first_error(c.text);
    CHECK(d.message == c.message);
    CHECK(d.loc.line == c.line);
    CHECK(d.loc.col == c.col);
  }
}

TEST_CASE("text: several errors are reported in one parse, formatted with a caret") {
  const std::string text =
      "program \"e.ab\"\nfn main()\n  var r: int\n  b0:\n    r = add r, q\n    r = mul r, z\n"
      "    return\n";
  Diagnostics diags("e.ir", text);
  CHECK_FALSE(parse_ir(text, "e.ir", diags).has_value());
  REQUIRE(diags.errors().size() == 2);
  CHECK(diags.errors()[1].message == "unknown variable 'z'");
  CHECK(diags.format(diags.errors()[0]) ==
        "e.ir:5:16: error: unknown variable 'q'\n      r = add r, q\n                 ^\n");
}

TEST_CASE("text: garbage and mutated IR never crash the parser") {
  std::mt19937 rng(1234);
  const std::string valid = print_ir(everything_program());
  const std::string alphabet = "abx01 9:,()[]{}=*<+@%?\"\\#-.\n\tb0pfnvarconstgetcall\x01\xff";
  int parsed_ok = 0;
  for (int iter = 0; iter < 3000; ++iter) {
    std::string text;
    if (iter % 2 == 0) {
      // Random bytes drawn mostly from the IR's own alphabet.
      const int len = static_cast<int>(rng() % 200);
      for (int k = 0; k < len; ++k)
        text += alphabet[rng() % alphabet.size()];
      if (iter % 4 == 0) text = "program \"g\"\n" + text;
    } else {
      // A valid program with a few characters changed, deleted or duplicated.
      text = valid;
      const int edits = 1 + static_cast<int>(rng() % 4);
      for (int k = 0; k < edits; ++k) {
        const size_t at = rng() % text.size();
        switch (rng() % 3) {
          case 0:
            text[at] = alphabet[rng() % alphabet.size()];
            break;
          case 1:
            text.erase(at, 1 + rng() % 8);
            break;
          default:
            text.insert(at, text.substr(at, rng() % 30));
            break;
        }
      }
    }
    Diagnostics diags("g.ir", text);
    std::optional<Program> p;
    CHECK_NOTHROW(p = parse_ir(text, "g.ir", diags));
    CHECK(p.has_value() != diags.has_errors());
    CHECK_NOTHROW(diags.format());
    if (p) {
      ++parsed_ok;
      // Whatever parses prints and verifies without crashing, and prints stably.
      std::string again;
      CHECK_NOTHROW(again = print_ir(*p));
      CHECK_NOTHROW(verify(*p));
      const auto p2 = parse(again);
      REQUIRE(p2.has_value());
      CHECK(print_ir(*p2) == again);
    }
  }
  MESSAGE("mutated inputs that still parsed: " << parsed_ok);
}

TEST_CASE("text: print_lowered shows storage classes, pcs, stack ops and pushjump") {
  Program p;
  p.file = "fib.ab";
  FnBuilder f;
  f.fn.name = "fib";
  const VarId n = f.var("n", Types::kInt);
  f.fn.params = {n};
  f.fn.result = f.var("result", Types::kInt);
  f.term(f.block(), Terminator::Kind::Return);
  p.functions.push_back(std::move(f.fn));

  LoweredProgram low;
  low.source = &p;
  low.entry_function = 0;
  low.vars = {{"fib.n", Types::kInt, Storage::Stacked, 0, 0},
              {"fib.result", Types::kInt, Storage::Register, 0, 1},
              {"fib.t0", Types::kBool, Storage::Temp, 0, -1}};
  low.inputs = {0};
  low.output = 1;
  LoweredBlock b0{"fib.b0", 0, {}, {}, {1, 1}};
  Op lt;
  lt.code = OpCode::Lt;
  lt.dst = 2;
  lt.args = {0, 0};
  lt.loc = {2, 7};
  b0.ops.push_back(lt);
  Op push;
  push.code = OpCode::Push;
  push.args = {0};
  b0.ops.push_back(push);
  b0.term = Terminator{Terminator::Kind::PushJump, -1, 0, 1, {3, 5}};
  LoweredBlock b1{"fib.b0.ret1", 0, {}, {}, {}};
  Op pop = push;
  pop.code = OpCode::Pop;
  b1.ops.push_back(pop);
  b1.term = Terminator{Terminator::Kind::Return, -1, -1, -1, {}};
  low.blocks = {b0, b1};

  const std::string expected =
      "lowered program \"fib.ab\" (entry fib): 2 blocks, 3 vars (1 temp, 1 register, 1 stacked)\n"
      "entry fib.b0, inputs (fib.n), output fib.result, exit pc 2\n"
      "\n"
      "stacked  fib.n: int\n"
      "register fib.result: int\n"
      "temp     fib.t0: bool\n"
      "\n"
      "fib.b0 (pc 0, fn fib):  @1:1\n"
      "  fib.t0 = lt fib.n, fib.n  @2:7\n"
      "  push fib.n\n"
      "  pushjump fib.b0, fib.b0.ret1  @3:5\n"
      "\n"
      "fib.b0.ret1 (pc 1, fn fib):\n"
      "  pop fib.n\n"
      "  return\n";
  CHECK(print_lowered(low) == expected);
}

TEST_CASE("text: every samples/*.ab round-trips through the text form and verifies, lowered too") {
  const std::filesystem::path dir = std::filesystem::path(AB_SOURCE_DIR) / "samples";
  std::vector<std::filesystem::path> files;
  if (std::filesystem::is_directory(dir))
    for (const auto& entry : std::filesystem::directory_iterator(dir))
      if (entry.path().extension() == ".ab") files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  if (files.empty()) {
    MESSAGE("samples/ has no .ab files yet: nothing to round-trip");
    return;
  }
  for (const auto& path : files) {
    INFO(path.string());
    const std::string source = testing::read_bytes(path);
    Diagnostics diags(path.filename().string(), source);
    const auto program = compile_source(source, path.filename().string(), diags);
    INFO(diags.format());
    REQUIRE(program.has_value());
    const Status verified = verify(*program);
    CHECK_MESSAGE(verified.ok(), verified.error());
    const std::string text = print_ir(*program);
    const auto back = parse(text);
    REQUIRE(back.has_value());
    check_same_program(*program, *back);
    CHECK(print_ir(*back) == text);

    // Its lowered form verifies too, and prints every block.
    const int entry = program->find_function("main");
    if (entry < 0) continue;
    const LoweredProgram lowered = lower(*program, entry);
    const Status lowered_verified = verify(lowered);
    CHECK_MESSAGE(lowered_verified.ok(), lowered_verified.error());
    const std::string lowered_text = print_lowered(lowered);
    for (const LoweredBlock& block : lowered.blocks)
      CHECK(lowered_text.find("\n" + block.name + " (pc ") != std::string::npos);
  }
}

}  // namespace ab

namespace ab {
namespace {

TEST_CASE("types: declaring a struct twice is an Error, not an exception") {
  Types t;
  auto first = t.add_struct("Pair", {{"a", Types::kInt}});
  REQUIRE(first.ok());
  const size_t types = t.size();
  auto again = t.add_struct("Pair", {{"b", Types::kFloat}});
  REQUIRE_FALSE(again.ok());
  CHECK(again.error() == "struct 'Pair' declared twice");
  CHECK(t.find_struct("Pair") == *first);
  CHECK(t.size() == types);  // nothing was added
}

}  // namespace
}  // namespace ab
