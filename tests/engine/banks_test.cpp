// Banks (issue 26; docs/engine.md, "Banks"): a lane state or a stack arena larger than one
// storage-buffer binding spans several bindings of its buffer. VulkanOptions::bank_bytes forces
// small banks, so these programs run with the lane state over several banks and every arena over
// several windows; results, snapshots and checkpoints are the interpreter's (or the VM's) on every
// schedule, and a run that does not fit even so is refused with one message.
#include <cstring>

#include "autobatch/sampler.h"
#include "codegen/state_layout.h"
#include "core/module_impl.h"
#include "engine/run/program_impl.h"
#include "shaders/ab_layout.h"
#include "support/engine_test_support.h"

namespace ab::enginetest {
namespace {

// A recursive tree builder over points of D coordinates (the shape of a NUTS tree): stacks of
// structs that grow with the depth, loops over the coordinates, random draws, and a probe index
// that faults some lanes.
std::string tree_program(int d) {
  return fmt::format(R"(
const D: int = {};
struct Point {{ q: float[D], p: float[D] }}
struct Tree {{ left: Point, right: Point, pick: float[D], size: int }}

fn step(s: Point, eps: float) -> Point {{
    let p = s.p - s.q * (eps * 0.5);
    return Point {{ q: s.q + p * eps, p: p }};
}}

fn build(s: Point, depth: int, eps: float) -> Tree {{
    if depth == 0 {{
        let next = step(s, eps);
        return Tree {{ left: next, right: next, pick: next.q, size: 1 }};
    }}
    let first = build(s, depth - 1, eps);
    let second = build(first.right, depth - 1, eps);
    var tree = first;
    tree.right = second.right;
    if uniform() * float(first.size + second.size) < float(second.size) {{
        tree.pick = second.pick;
    }}
    tree.size = first.size + second.size;
    return tree;
}}

fn main(q0: float[D], eps: float, depth: int, probe: int) -> float[D] {{
    var p: float[D];
    for i in 0..D {{ p[i] = normal(); }}
    let tree = build(Point {{ q: q0, p: p }}, depth, eps);
    var out = tree.pick;
    out[0] = out[probe];  // out of range for some lanes: a fault record
    return out;
}}
)",
                     d);
}

constexpr int kD = 6;
constexpr uint32_t kDepth = 8;  // stack entries per lane: main, build to depth 3, step, the exit

// Trees of depth 0 to 3.
Batch tree_batch(uint32_t lanes) {
  return point_batch(kD, lanes, [](uint32_t lane) { return lane % 4; });
}

RunOptions tree_options() {
  RunOptions options;
  options.seed = 11;
  options.stack_depth = kDepth;
  return options;
}

// A bank size under which `lanes` lanes of the program need two to four state banks and two or
// three windows per arena: a power of two, so that a window is exactly one bank.
uint64_t small_banks(const StateLayout& layout, uint32_t lanes, uint32_t depth = kDepth) {
  const uint64_t state = uint64_t{layout.slots} * lanes * 4;
  uint64_t arena = 0;
  for (uint32_t w : layout.arena_words)
    arena = std::max(arena, uint64_t{w} * depth * lanes * 4);
  uint64_t bank = 256;
  while (bank * 2 < arena && bank * 3 < state)
    bank *= 2;
  const Banks banks =
      plan_banks(layout, lanes, depth, bank,
                 context()->impl().properties.limits.minStorageBufferOffsetAlignment);
  CAPTURE(bank);
  CAPTURE(state);
  CAPTURE(arena);
  REQUIRE(banks.state > 1);
  REQUIRE(banks.state <= AB_STATE_BANKS);
  REQUIRE(banks.arena > 1);
  REQUIRE(banks.arena <= AB_ARENA_WINDOWS);
  return bank;
}

VulkanOptions banked(const Config& c, uint64_t bank_bytes) {
  VulkanOptions vulkan = options_for(c);
  vulkan.bank_bytes = bank_bytes;
  return vulkan;
}

Expected<RunResult> run_banked(const std::shared_ptr<VulkanProgram>& program, const Batch& batch,
                               const RunOptions& options, const VulkanOptions& vulkan) {
  auto run = VulkanRun::create(program, batch, options, vulkan);
  if (!run) return Error{run.error()};
  if (auto s = (*run)->run(); !s) return Error{s.error()};
  return (*run)->result();
}

TEST_CASE("banks: the plan is one binding each while the buffers fit") {
  auto loaded = load_source(tree_program(kD), "main", "tree6.ab");
  const StateLayout layout = plan_state(loaded->lowered);
  // One binding each: the default plan, whose kernels are those of a layout without banks.
  CHECK(plan_banks(layout, 100, kDepth, uint64_t{128} << 20, 16) == Banks{});
  const Banks split = plan_banks(layout, 100, kDepth, uint64_t{layout.slots} * 100 * 4 / 2, 16);
  CHECK(split.state == 3);  // half the state per bank, less the alignment's room: three
  CHECK(split.state_slots * 3 >= layout.slots);
  CHECK(split.align_mask == 3);
  CHECK(split.arena >= 1);
}

TEST_CASE("banks: a recursive program over several banks equals interp on every schedule") {
  auto loaded = load_source(tree_program(kD), "main", "tree6.ab");
  const RunOptions options = tree_options();
  // 70 lanes: more than a subgroup (the compacted and local kernels); 5 lanes: the fused kernel.
  for (uint32_t lanes : {70u, 5u}) {
    CAPTURE(lanes);
    const Batch batch = tree_batch(lanes);
    const RunResult expected = run_interp(loaded->program, loaded->entry, batch, options);
    REQUIRE_FALSE(expected.errors.empty());  // the probe faults some lanes
    for (const Config& c : configs()) {
      if (lanes == 5 && c.schedule != Schedule::Global) continue;
      const std::string config = c.name;
      CAPTURE(config);
      auto program = VulkanProgram::compile(context(), loaded->lowered, options_for(c));
      REQUIRE_MESSAGE(program.ok(), program.error());
      const uint64_t bank = small_banks((*program)->impl().layout, lanes);
      auto result = run_banked(*program, batch, options, banked(c, bank));
      REQUIRE_MESSAGE(result.ok(), result.error());
      const std::string difference = compare_results(loaded->lowered, expected, *result);
      CHECK_MESSAGE(difference.empty(), difference);
      CHECK(result->stats.max_stack_depth == expected.stats.max_stack_depth);
      check_no_validation_messages();
    }
  }
}

// A program split into parts keeps its fixed and stack-pointer slots in registers and moves
// them with a loop over computed slots (SourcePart::compact_moves): those go through the banks'
// ladder (ab_state_get/set) rather than a bank known when the code is generated.
TEST_CASE("banks: a split program over several banks equals interp") {
  auto loaded = load_source(tree_program(kD), "main", "tree6.ab");
  const RunOptions options = tree_options();
  const Batch batch = tree_batch(70);
  const RunResult expected = run_interp(loaded->program, loaded->entry, batch, options);
  for (const Config& c : {configs()[1], configs()[4]}) {
    const std::string config = c.name;
    CAPTURE(config);
    VulkanOptions vulkan = options_for(c);
    vulkan.max_part_cost = 150;
    auto program = VulkanProgram::compile(context(), loaded->lowered, vulkan);
    REQUIRE_MESSAGE(program.ok(), program.error());
    REQUIRE((*program)->impl().parts(residency_of(
                c.schedule == Schedule::Global ? Kernel::GlobalCompacted : Kernel::LocalLane)) > 1);
    vulkan.bank_bytes = small_banks((*program)->impl().layout, batch.lanes);
    auto result = run_banked(*program, batch, options, vulkan);
    REQUIRE_MESSAGE(result.ok(), result.error());
    const std::string difference = compare_results(loaded->lowered, expected, *result);
    CHECK_MESSAGE(difference.empty(), difference);
    check_no_validation_messages();
  }
}

// Snapshots and checkpoints read and write the banked buffers as one: the states after each
// few steps are the unbanked run's, and a restored checkpoint goes on to the same results.
TEST_CASE("banks: snapshots and a restored checkpoint across banks match the unbanked run") {
  auto loaded = load_source(tree_program(kD), "main", "tree6.ab");
  const RunOptions options = tree_options();
  const Batch batch = tree_batch(70);
  const Config& compacted = configs()[1];
  const Config& lane = configs()[4];
  for (const Config& c : {compacted, lane}) {
    const std::string config = c.name;
    CAPTURE(config);
    auto program = VulkanProgram::compile(context(), loaded->lowered, options_for(c));
    REQUIRE_MESSAGE(program.ok(), program.error());
    const uint64_t bank = small_banks((*program)->impl().layout, batch.lanes);
    auto plain = VulkanRun::create(*program, batch, options, options_for(c));
    auto split = VulkanRun::create(*program, batch, options, banked(c, bank));
    REQUIRE_MESSAGE(plain.ok(), plain.error());
    REQUIRE_MESSAGE(split.ok(), split.error());
    std::shared_ptr<const RunCheckpoint> saved;
    for (uint64_t n : {3u, 17u, 40u}) {
      CAPTURE(n);
      REQUIRE((*plain)->step(n).ok());
      REQUIRE((*split)->step(n).ok());
      auto a = (*plain)->snapshot();
      auto b = (*split)->snapshot();
      REQUIRE_MESSAGE(a.ok(), a.error());
      REQUIRE_MESSAGE(b.ok(), b.error());
      CHECK(b->pc == a->pc);
      CHECK(b->pc_depth == a->pc_depth);
      CHECK(b->faulted == a->faulted);
      CHECK(b->registers == a->registers);

      REQUIRE(b->stacks.size() == a->stacks.size());
      for (size_t s = 0; s < a->stacks.size(); ++s) {
        REQUIRE(b->stacks[s].depth == a->stacks[s].depth);
        // The live entries: nothing defines those above a lane's stack pointer.
        const size_t w = a->stacks[s].words.size() / (size_t{a->lanes} * a->stack_capacity);
        for (uint32_t l = 0; l < a->lanes; ++l)
          for (size_t k = 0; k < a->stacks[s].depth[l] * w; ++k) {
            const size_t at = size_t{l} * a->stack_capacity * w + k;
            REQUIRE(b->stacks[s].words[at] == a->stacks[s].words[at]);
          }
      }
      if (n == 3) {
        auto taken = (*split)->checkpoint();
        REQUIRE_MESSAGE(taken.ok(), taken.error());
        saved = *taken;
      }
    }
    REQUIRE((*split)->restore(*saved).ok());
    REQUIRE((*plain)->run().ok());
    REQUIRE((*split)->run().ok());
    auto a = (*plain)->result();
    auto b = (*split)->result();
    REQUIRE_MESSAGE(a.ok(), a.error());
    REQUIRE_MESSAGE(b.ok(), b.error());
    CHECK(compare_results(loaded->lowered, *a, *b) == "");
    check_no_validation_messages();
  }
}

// The sampler (sampler/nuts.ab over a 3-d Gaussian: trees on a stack, adaptation, emitted
// draws) with its lane state over several banks and its tree stack over several windows.
TEST_CASE("banks: the sampler's draws over several banks are interp's on two schedules") {
  auto model =
      sample::Model::load(std::string(AB_SOURCE_DIR) + "/tests/data/models/gaussian_iid.ab");
  REQUIRE_MESSAGE(model.ok(), model.error());
  sample::Options options;
  options.chains = 20;
  options.draws = 3;
  options.warmup = 5;
  options.seed = 3;
  const auto want = sample::run(**model, {}, options, sample::cpu_runner(CpuBackend::Interpreter));
  REQUIRE_MESSAGE(want.ok(), want.error());
  REQUIRE(want->received == 20 * 3);
  const StateLayout layout = plan_state((*model)->module()->impl().lowered);
  const uint64_t bank = small_banks(layout, options.chains, sample::recursion_depth(options));
  for (const Config& c : {configs()[1], configs()[4]}) {
    const std::string config = c.name;
    CAPTURE(config);
    VulkanOptions vulkan = banked(c, bank);
    const auto got = sample::run(**model, {}, options, sample::vulkan_runner(context(), vulkan));
    REQUIRE_MESSAGE(got.ok(), got.error());
    REQUIRE(got->draws_data.size() == want->draws_data.size());
    CHECK(std::memcmp(got->draws_data.data(), want->draws_data.data(),
                      want->draws_data.size() * sizeof(float)) == 0);
    CHECK(got->stats.n_leapfrog == want->stats.n_leapfrog);
    CHECK(got->stats.tree_depth == want->stats.tree_depth);
    check_no_validation_messages();
  }
}

// A device that binds fewer storage buffers than the layout's AB_BINDINGS (some mobile GPUs bind
// 24), stood in for by VulkanOptions::max_bindings: the banks its bindings hold are planned and
// the results are the interpreter's; a plan that needs more is refused with one message, and a
// limit below the engine's AB_BIND_STATE_BANK1 bindings when the program is compiled.
TEST_CASE("banks: fewer bindings run with the banks that fit them, or are refused") {
  // No recursion: a lane state of 64-word arrays, one lane in seven dividing by 0.
  auto flat = load_source(R"(
fn main(n: int) -> int {
    var a: int[64];
    for i in 0..64 { a[i] = i * n; }
    var b = a;
    var s = 0;
    for i in 0..64 { s += a[i] - b[63 - i]; }
    return s + 640 / (n % 7);
}
)",
                          "main", "flat.ab");
  Batch batch;
  batch.lanes = 70;
  batch.inputs.resize(1);
  for (uint32_t lane = 0; lane < batch.lanes; ++lane)
    batch.inputs[0].push_back(lane);
  RunOptions options;
  options.stack_depth = 2;  // main's return: an arena far smaller than the lane state
  const RunResult expected = run_interp(flat->program, flat->entry, batch, options);
  REQUIRE_FALSE(expected.errors.empty());
  auto tree = load_source(tree_program(kD), "main", "tree6.ab");
  const uint32_t align =
      static_cast<uint32_t>(context()->impl().properties.limits.minStorageBufferOffsetAlignment);
  for (const Config& c : {configs()[1], configs()[4]}) {
    const std::string config = c.name;
    CAPTURE(config);
    // One binding past the unbanked layout's: a second state bank, no second arena window.
    VulkanOptions vulkan = options_for(c);
    vulkan.max_bindings = AB_BIND_STATE_BANK1 + 1;
    auto program = VulkanProgram::compile(context(), flat->lowered, vulkan);
    REQUIRE_MESSAGE(program.ok(), program.error());
    CHECK((*program)->impl().bindings == AB_BIND_STATE_BANK1 + 1);
    const StateLayout& layout = (*program)->impl().layout;
    const uint64_t state = uint64_t{layout.slots} * batch.lanes * 4;
    vulkan.bank_bytes = (state * 3 / 5 + align) / align * align;
    REQUIRE(plan_banks(layout, batch.lanes, options.stack_depth, vulkan.bank_bytes, align) ==
            Banks{.state = 2, .state_slots = (layout.slots + 1) / 2, .align_mask = align / 4 - 1});
    auto result = run_banked(*program, batch, options, vulkan);
    REQUIRE_MESSAGE(result.ok(), result.error());
    const std::string difference = compare_results(flat->lowered, expected, *result);
    CHECK_MESSAGE(difference.empty(), difference);
    // Three state banks are more than 14 bindings hold.
    vulkan.bank_bytes = (state * 2 / 5 + align) / align * align;
    auto three = VulkanRun::create(*program, batch, options, vulkan);
    REQUIRE_FALSE(three.ok());
    CHECK(three.error().find("the lane state needs") != std::string::npos);
    CHECK(three.error().find("2 bindings of") != std::string::npos);
    CHECK(three.error().find('\n') == std::string::npos);

    // The tree program's arena over several windows: more than 14 bindings hold.
    VulkanOptions tree_vulkan = options_for(c);
    tree_vulkan.max_bindings = AB_BIND_STATE_BANK1 + 1;
    auto tree_program = VulkanProgram::compile(context(), tree->lowered, tree_vulkan);
    REQUIRE_MESSAGE(tree_program.ok(), tree_program.error());
    tree_vulkan.bank_bytes = small_banks((*tree_program)->impl().layout, 70);
    auto windows = VulkanRun::create(*tree_program, tree_batch(70), tree_options(), tree_vulkan);
    REQUIRE_FALSE(windows.ok());
    CHECK(windows.error().find("bindings of") != std::string::npos);
    CHECK(windows.error().find('\n') == std::string::npos);
    check_no_validation_messages();
  }
  VulkanOptions too_few;
  too_few.max_bindings = AB_BIND_STATE_BANK1 - 1;
  auto program = VulkanProgram::compile(context(), flat->lowered, too_few);
  REQUIRE_FALSE(program.ok());
  CHECK(program.error() ==
        fmt::format("VulkanOptions::max_bindings allows at most {} storage buffers per shader "
                    "stage; the engine's kernels need {}",
                    AB_BIND_STATE_BANK1 - 1, AB_BIND_STATE_BANK1));
}

TEST_CASE("banks: a lane state too large for every bank is refused with one message") {
  auto loaded = load_source(tree_program(kD), "main", "tree6.ab");
  auto program = VulkanProgram::compile(context(), loaded->lowered);
  REQUIRE_MESSAGE(program.ok(), program.error());
  const uint32_t slots = (*program)->impl().layout.slots;
  VulkanOptions vulkan;
  // Five banks' worth of lane state: more than AB_STATE_BANKS bindings hold.
  vulkan.bank_bytes = uint64_t{slots} * 100 * 4 / (AB_STATE_BANKS + 1);
  auto run = VulkanRun::create(*program, tree_batch(100), tree_options(), vulkan);
  REQUIRE_FALSE(run.ok());
  CHECK(run.error().find("the lane state needs") != std::string::npos);
  CHECK(run.error().find("4 bindings of") != std::string::npos);
  CHECK(run.error().find("VulkanOptions::bank_bytes") != std::string::npos);
  CHECK(run.error().find("reduce the batch size") != std::string::npos);
  CHECK(run.error().find('\n') == std::string::npos);
  check_no_validation_messages();
}

}  // namespace
}  // namespace ab::enginetest
