// Proper tail calls (docs/language.md, "Tail calls"): `return f(...)` reuses the caller's frame on
// every backend. The programs of TFP's auto_batching test suite run at stack depth 3; tail loops
// of a million iterations never overflow; parameters are assigned in parallel; struct results and
// mutual recursion work; a call that is not in tail position still stacks and overflows as before.
#include "cpu/vm.h"
#include "ir/text.h"
#include "support/engine_test_support.h"

namespace ab::enginetest {
namespace {

const char* kTfpPrograms = R"(
fn iota_sum(n: int, acc: int) -> int {
    if n <= 0 { return acc; }
    return iota_sum(n - 1, acc + n);
}
fn gcd(a: int, b: int) -> int {
    if a == 0 { return b; }
    else if a <= b { return gcd(a, b - a); }
    return gcd(b, a);
}
struct Out { sum: int, g: int }
fn main(n: int, a: int, b: int) -> Out {
    return Out { sum: iota_sum(n, 0), g: gcd(a, b) };
}
)";

const char* kMutual = R"(
fn is_even(n: int) -> bool {
    if n == 0 { return true; }
    return is_odd(n - 1);
}
fn is_odd(n: int) -> bool {
    if n == 0 { return false; }
    return is_even(n - 1);
}
fn main(n: int) -> bool { return is_even(n); }
)";

// A state machine over two functions whose results are structs, with a swap of parameters.
const char* kStructs = R"(
struct P { x: int, y: int, steps: int }
fn ping(x: int, y: int, k: int) -> P {
    if k <= 0 { return P { x: x, y: y, steps: 0 }; }
    if x > y { return pong(y, x, k - 1); }
    return ping(y, x + 1, k - 1);
}
fn pong(a: int, b: int, k: int) -> P {
    if k % 7 == 0 { return P { x: a, y: b, steps: k }; }
    return ping(b - a, a, k - 1);
}
fn main(x: int, y: int, k: int) -> P { return ping(x, y, k); }
)";

Batch int_batch(const std::vector<std::vector<int32_t>>& columns) {
  Batch batch;
  batch.lanes = static_cast<uint32_t>(columns[0].size());
  for (const auto& column : columns)
    batch.inputs.emplace_back(column.begin(), column.end());
  return batch;
}

int32_t out(const RunResult& r, size_t i) {
  return static_cast<int32_t>(r.outputs.at(i));
}

// Runs on vm and the Vulkan configurations `which` selects; each must equal the interpreter's
// outputs, faults, error records, steps and calls. Returns the interpreter's result.
RunResult check_backends(const Loaded& loaded, const Batch& batch, const RunOptions& options,
                         bool (*which)(const Config&)) {
  const RunResult expected = run_interp(loaded.program, loaded.entry, batch, options);
  auto compare = [&](const std::string& backend, const RunResult& got) {
    CAPTURE(backend);
    CHECK(compare_results(loaded.lowered, expected, got) == "");
    CHECK(got.stats.lane_steps == expected.stats.lane_steps);
    CHECK(got.stats.calls == expected.stats.calls);
    CHECK(got.stats.max_stack_depth == expected.stats.max_stack_depth);
  };
  compare("vm", run_vm(loaded.lowered, batch, options));
  for (const Config& c : configs()) {
    if (!which(c)) continue;
    auto result = run_vulkan(loaded.lowered, batch, options, options_for(c), nullptr, context());
    REQUIRE_MESSAGE(result.ok(), result.error());
    compare(c.name, *result);
    check_no_validation_messages();
  }
  return expected;
}

bool every_config(const Config&) {
  return true;
}
// Long single-lane loops: the global schedule pays a dispatch per step, so it gets shorter ones.
bool local_configs(const Config& c) {
  return c.schedule == Schedule::Local;
}
bool global_configs(const Config& c) {
  return c.schedule == Schedule::Global;
}

int count_terms(const LoweredProgram& p, Terminator::Kind kind) {
  int n = 0;
  for (const LoweredBlock& b : p.blocks)
    n += b.term.kind == kind;
  return n;
}

TEST_CASE("tail calls: TFP's iota_sum and gcd run at stack depth 3 on every backend") {
  auto loaded = load_source(kTfpPrograms);
  const Batch batch = int_batch({{12, -13, 100, 0}, {7, 12, 49, 0}, {9, 9, 56, 5}});
  RunOptions options;
  options.stack_depth = 3;
  const RunResult r = check_backends(*loaded, batch, options, every_config);
  REQUIRE(r.errors.empty());
  const std::vector<int32_t> sums = {78, 0, 5050, 0}, gcds = {1, 3, 7, 5};
  for (size_t lane = 0; lane < 4; ++lane) {
    CHECK(out(r, 2 * lane) == sums[lane]);
    CHECK(out(r, 2 * lane + 1) == gcds[lane]);
  }
  // main calls each once (depth 2); the tail calls never add a frame.
  CHECK(r.stats.max_stack_depth == 2);
}

TEST_CASE("tail calls: the lowering pushes nothing for iota_sum and gcd") {
  auto loaded = load_source(kTfpPrograms);
  const LoweredProgram& p = loaded->lowered;
  CHECK(p.count(Storage::Stacked) == 0);
  int tail_jumps = 0, push_jumps = 0;
  for (const LoweredBlock& b : p.blocks) {
    const std::string fn = loaded->program.functions[b.function].name;
    if (fn == "iota_sum" || fn == "gcd") {
      CHECK(b.term.kind != Terminator::Kind::PushJump);
      for (const Op& op : b.ops)
        CHECK((op.code != OpCode::Push && op.code != OpCode::Pop && op.code != OpCode::Update));
    }
    tail_jumps += b.term.kind == Terminator::Kind::TailJump;
    push_jumps += b.term.kind == Terminator::Kind::PushJump;
  }
  CHECK(tail_jumps == 3);  // iota_sum's and gcd's two
  CHECK(push_jumps == 2);  // main's two calls are not in tail position
  // `autobatch ir --lowered` names the terminator.
  const std::string text = print_lowered(p);
  CHECK(text.find("tailjump gcd.b0") != std::string::npos);
}

TEST_CASE("tail calls: a million iterations at depth 3, mutual recursion to 100000") {
  RunOptions options;
  options.stack_depth = 3;
  options.max_steps = 50'000'000;
  SUBCASE("iota_sum") {
    auto loaded = load_source(kTfpPrograms);
    const RunResult r = check_backends(*loaded, int_batch({{1'000'000, 3000}, {1, 1}, {1, 1}}),
                                       options, local_configs);
    REQUIRE(r.errors.empty());
    CHECK(out(r, 0) == static_cast<int32_t>(uint32_t{500000} * 1000001u));  // wraps mod 2^32
    CHECK(out(r, 2) == 4501500);
    check_backends(*loaded, int_batch({{3000}, {1}, {1}}), options, global_configs);
  }
  SUBCASE("is_even / is_odd") {
    auto loaded = load_source(kMutual);
    CHECK(count_terms(loaded->lowered, Terminator::Kind::TailJump) == 3);  // main's too
    const RunResult r =
        check_backends(*loaded, int_batch({{100'000, 99'999, 0, 7}}), options, local_configs);
    REQUIRE(r.errors.empty());
    CHECK(r.outputs == std::vector<uint32_t>{1, 0, 1, 0});
    check_backends(*loaded, int_batch({{2000, 1999}}), options, global_configs);
  }
}

TEST_CASE("tail calls: struct results across functions, with swapped parameters") {
  auto loaded = load_source(kStructs);
  std::vector<int32_t> xs, ys, ks;
  for (int32_t i = 0; i < 64; ++i) {
    xs.push_back(i * 37 % 19 - 9);
    ys.push_back(i * 11 % 23 - 11);
    ks.push_back(i * 5 % 41);
  }
  RunOptions options;
  options.stack_depth = 1;  // every call is a tail call, main's too: one frame is enough
  const RunResult r = check_backends(*loaded, int_batch({xs, ys, ks}), options, every_config);
  CHECK(r.errors.empty());
  CHECK(r.stats.max_stack_depth == 1);
}

TEST_CASE("tail calls: a call that is not in tail position still stacks and overflows") {
  auto loaded = load_source(R"(
fn count(n: int) -> int {
    if n <= 0 { return 0; }
    return 1 + count(n - 1);
}
fn main(n: int) -> int { return count(n); }
)");
  CHECK(count_terms(loaded->lowered, Terminator::Kind::PushJump) == 1);
  CHECK(count_terms(loaded->lowered, Terminator::Kind::TailJump) == 1);  // main's
  RunOptions options;
  options.stack_depth = 3;
  // main's tail call hands its frame to count(n), whose n non-tail calls need n + 1 frames:
  // count(2) fits in 3, count(3) does not.
  const RunResult r = check_backends(*loaded, int_batch({{0, 1, 2, 3, 50}}), options, every_config);
  CHECK(r.faulted == std::vector<uint8_t>{0, 0, 0, 1, 1});
  REQUIRE(r.errors.size() == 2);
  for (const LaneError& e : r.errors)
    CHECK(e.code == Fault::StackOverflow);
}

TEST_CASE("tail calls: a lane looping forever through tail calls ends on the step budget") {
  auto loaded = load_source(R"(
fn spin(n: int) -> int { return spin(n + 1); }
fn main(n: int) -> int {
    if n < 0 { return n; }
    return spin(n);
}
)");
  RunOptions options;
  options.stack_depth = 2;
  options.max_steps = 5000;
  const RunResult r = check_backends(*loaded, int_batch({{-4, 0, 3}}), options, every_config);
  CHECK(r.faulted == std::vector<uint8_t>{0, 1, 1});
  for (const LaneError& e : r.errors)
    CHECK(e.code == Fault::StepBudget);
  CHECK(out(r, 0) == -4);
}

}  // namespace
}  // namespace ab::enginetest
