// Residency by size (issue 26; docs/engine.md, "Residency by size"): with
// VulkanOptions::register_value_words the kernels that keep a lane's state in registers for a
// dispatch keep there only values of at most that many words and leave longer ones in the state
// buffer. The results are the interpreter's on every schedule whatever the threshold, and a
// kernel's source then no longer grows with the size of the program's values.
#include "codegen/glsl_codegen.h"
#include "codegen/kernel_split.h"
#include "codegen/state_layout.h"
#include "support/engine_test_support.h"
#include "support/program_gen.h"

namespace ab::enginetest {
namespace {

// The threshold the tests use: a model's points and NUTS trees in memory, scalars in registers.
constexpr uint32_t kSixteen = 16;

// nuts_tree.ab's control flow over a point of D coordinates: recursion that stacks structs of
// 2D words, random draws, loops over the coordinates, and an index that faults for some lanes.
std::string nuts_program(int d) {
  return fmt::format(R"(
const D: int = {};
struct State {{ q: float[D], p: float[D] }}
struct Tree {{ minus: State, plus: State, proposal: float[D], size: int, stop: bool }}

fn leapfrog(s: State, eps: float) -> State {{
    let p_half = s.p - s.q * (eps * 0.5);
    let q = s.q + p_half * eps;
    return State {{ q: q, p: p_half - q * (eps * 0.5) }};
}}

fn energy(s: State) -> float {{ return 0.5 * (dot(s.q, s.q) + dot(s.p, s.p)); }}

fn u_turn(minus: State, plus: State) -> bool {{
    let span = plus.q - minus.q;
    return dot(span, minus.p) < 0.0 || dot(span, plus.p) < 0.0;
}}

fn build_tree(s: State, direction: float, depth: int, eps: float, h0: float) -> Tree {{
    if depth == 0 {{
        let next = leapfrog(s, direction * eps);
        return Tree {{ minus: next, plus: next, proposal: next.q, size: 1,
                      stop: energy(next) - h0 > 1000.0 }};
    }}
    let first = build_tree(s, direction, depth - 1, eps, h0);
    if first.stop {{ return first; }}
    var edge = first.plus;
    if direction < 0.0 {{ edge = first.minus; }}
    let second = build_tree(edge, direction, depth - 1, eps, h0);
    var tree = first;
    if direction < 0.0 {{ tree.minus = second.minus; }} else {{ tree.plus = second.plus; }}
    if uniform() * float(first.size + second.size) < float(second.size) {{
        tree.proposal = second.proposal;
    }}
    tree.size = first.size + second.size;
    tree.stop = second.stop || u_turn(tree.minus, tree.plus);
    return tree;
}}

fn transition(q0: float[D], eps: float) -> float[D] {{
    var p: float[D];
    for i in 0..D {{ p[i] = normal(); }}
    let start = State {{ q: q0, p: p }};
    let h0 = energy(start);
    var tree = Tree {{ minus: start, plus: start, proposal: q0, size: 1, stop: false }};
    for depth in 0..4 {{
        var direction = 1.0;
        if uniform() < 0.5 {{ direction = -1.0; }}
        var edge = tree.plus;
        if direction < 0.0 {{ edge = tree.minus; }}
        let sub = build_tree(edge, direction, depth, eps, h0);
        if sub.stop {{ break; }}
        if uniform() * float(tree.size) < float(sub.size) {{ tree.proposal = sub.proposal; }}
        if direction < 0.0 {{ tree.minus = sub.minus; }} else {{ tree.plus = sub.plus; }}
        tree.size += sub.size;
        if u_turn(tree.minus, tree.plus) {{ break; }}
    }}
    return tree.proposal;
}}

fn main(q0: float[D], eps: float, iterations: int, probe: int) -> float[D] {{
    var q = q0;
    for i in 0..iterations {{ q = transition(q, eps); }}
    q[0] = q[probe];  // out of range for some lanes: a fault record
    return q;
}}
)",
                     d);
}

// One to three transitions.
Batch nuts_batch(int d, uint32_t lanes) {
  return point_batch(d, lanes, [](uint32_t lane) { return 1 + lane % 3; });
}

// Runs `batch` with `program` on configuration c; fails the test unless the results are
// `expected`.
void check_run(const std::shared_ptr<VulkanProgram>& program, const Loaded& loaded,
               const Batch& batch, const RunOptions& options, const Config& c,
               const RunResult& expected, uint32_t steps_per_dispatch = 0) {
  VulkanOptions vulkan = options_for(c);
  if (steps_per_dispatch) vulkan.local_steps_per_dispatch = steps_per_dispatch;
  auto run = VulkanRun::create(program, batch, options, vulkan);
  REQUIRE_MESSAGE(run.ok(), run.error());
  auto status = (*run)->run();
  REQUIRE_MESSAGE(status.ok(), status.error());
  auto result = (*run)->result();
  REQUIRE_MESSAGE(result.ok(), result.error());
  const std::string difference = compare_results(loaded.lowered, expected, *result);
  CHECK_MESSAGE(difference.empty(), difference);
}

// The program with values over `register_words` words in the state buffer.
std::shared_ptr<VulkanProgram> compile_with(const Loaded& loaded, uint32_t register_words) {
  VulkanOptions vulkan;
  vulkan.register_value_words = register_words;
  auto program = VulkanProgram::compile(context(), loaded.lowered, vulkan);
  REQUIRE_MESSAGE(program.ok(), program.error());
  return *program;
}

TEST_CASE("residency: a NUTS tree over 24 coordinates equals interp in registers and in memory") {
  const int d = 24;  // a State is 48 words, a Tree 122: both stay in the state buffer
  auto loaded = load_source(nuts_program(d), "main", "nuts24.ab");
  RunOptions options;
  options.seed = 7;
  options.stack_depth = 16;
  // One program and two kernels, each compiled once (compiling is nearly all of the time; every
  // schedule took 14 minutes from an empty cache on lavapipe): local/lane keeps the scalars in
  // registers and the long values in the state buffer, global/compacted keeps everything in the
  // buffer. The other register kernels share local/lane's residency code, and the random
  // programs below run them.
  const auto program = compile_with(*loaded, kSixteen);
  const Config& lane = configs()[4];
  const Config& compacted = configs()[1];
  REQUIRE(std::string(lane.name) == "local/lane");
  REQUIRE(std::string(compacted.name) == "global/compacted");
  for (uint32_t lanes : {5u, 70u}) {
    CAPTURE(lanes);
    const Batch batch = nuts_batch(d, lanes);
    const RunResult expected = run_interp(loaded->program, loaded->entry, batch, options);
    REQUIRE_FALSE(expected.errors.empty());  // the probe faults some lanes
    check_run(program, *loaded, batch, options, lane, expected);
    // Dispatches that end every few steps: the values in memory carry over between them.
    check_run(program, *loaded, batch, options, lane, expected, 5);
  }
  // 70 lanes are more than a subgroup: the compacted kernel, not the fused one.
  const Batch batch = nuts_batch(d, 70);
  check_run(program, *loaded, batch, options, compacted,
            run_interp(loaded->program, loaded->entry, batch, options));
  check_no_validation_messages();
}

TEST_CASE("residency: only scalars or pairs in registers give interp's results") {
  // Random programs (loops, recursion, arrays, structs, faults, random draws) with only scalars
  // in registers (1) and with pairs in registers but not longer values (2), on the kernels of
  // register residency: local lane and subgroup, and global fused (one subgroup's lanes).
  for (uint64_t seed = 1; seed <= 3; ++seed) {
    CAPTURE(seed);
    const std::string source = testing::generate_program(seed);
    auto loaded = load_source(source, "main", fmt::format("gen{}.ab", seed));
    RunOptions options = random_program_options(seed);
    for (uint32_t words : {1u, 2u}) {
      CAPTURE(words);
      const auto program = compile_with(*loaded, words);  // shared by both batches
      for (uint32_t lanes : {6u, 100u}) {
        Batch batch;
        batch.lanes = lanes;
        batch.inputs.resize(2);
        for (uint32_t lane = 0; lane < lanes; ++lane) {
          batch.inputs[0].push_back(static_cast<uint32_t>(testing::lane_hash(seed, lane) % 64));
          batch.inputs[1].push_back(static_cast<uint32_t>(testing::lane_hash(seed + 99, lane)));
        }
        const RunResult expected = run_interp(loaded->program, loaded->entry, batch, options);
        for (const Config& c : {configs()[1], configs()[2], configs()[4]}) {
          CAPTURE(c.name);
          check_run(program, *loaded, batch, options, c, expected);
        }
      }
    }
  }
  check_no_validation_messages();
}

TEST_CASE("residency: automatic: long values leave the registers only in a split program") {
  auto loaded = load_source(nuts_program(24), "main", "nuts24.ab");
  for (uint32_t max_part_cost : {0u, 300u}) {  // never split; split into several parts
    CAPTURE(max_part_cost);
    VulkanOptions vulkan;
    vulkan.max_part_cost = max_part_cost;
    auto program = VulkanProgram::compile(context(), loaded->lowered, vulkan);
    REQUIRE_MESSAGE(program.ok(), program.error());
    CHECK(((*program)->parts() > 1) == (max_part_cost > 0));
    CHECK(automatic_register_words(loaded->lowered, max_part_cost) ==
          (max_part_cost > 0 ? kLargeProgramRegisterWords : kRegisterWords));
  }
}

TEST_CASE("residency: the register kernels' source does not grow with the values' size") {
  auto small = load_source(nuts_program(24), "main", "nuts24.ab");
  auto large = load_source(nuts_program(240), "main", "nuts240.ab");
  auto source = [](const Loaded& loaded, uint32_t register_words) {
    SourcePart part{BlockSet{{{0, static_cast<int32_t>(loaded.lowered.blocks.size())}}}};
    part.register_words = register_words;
    return generate_glsl(loaded.lowered, plan_state(loaded.lowered), Residency::Registers,
                         GlslTarget{}, part);
  };
  // The same code but for the numbers in it (a few digits more each).
  const size_t a = source(*small, kSixteen).size(), b = source(*large, kSixteen).size();
  CHECK(b < a + a / 20);
  // With every value in registers, ab_load and ab_store move each word: ten times the words,
  // a source several times longer.
  CHECK(source(*large, kRegisterWords).size() > 3 * b);
}

}  // namespace
}  // namespace ab::enginetest
