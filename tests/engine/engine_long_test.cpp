// Long runs: lavapipe silently ends a shader's loops after 65,535 iterations (DESIGN.md §4), so the
// local schedule bounds its steps per dispatch and the host re-dispatches until a flag says every
// lane is done. A lane needing ~200,000 steps must finish with the right answer, and the step
// budget must still fault lanes that exceed it. The count is shared by every loop of a SIMD row,
// the loops inside blocks included, so the kernels count those too and never let one be cut short.
#include <algorithm>

#include "codegen/glsl_codegen.h"
#include "engine/device/context_impl.h"
#include "engine/schedules/schedule_entries.h"
#include "support/engine_test_support.h"

namespace ab::enginetest {
namespace {

const char* kLongLoop = R"(
fn count(n: int) -> int {
    var i = 0;
    var acc = 0;
    while i < n {
        acc = (acc * 31 + i) & 0xFFFFF;
        i += 1;
    }
    return acc;
}
fn main(n: int) -> int { return count(n); }
)";

TEST_CASE("engine: a lane needing more than 65,535 steps finishes on every schedule") {
  auto loaded = load_source(kLongLoop);
  Batch batch;
  batch.lanes = 3;
  batch.inputs = {{200000, 5, 70000}};  // an iteration is one step (rotate_loops)
  RunOptions options;
  const RunResult expected = run_interp(loaded->program, loaded->entry, batch, options);
  REQUIRE(expected.stats.steps > 65535 * 3);  // well past the cap, in lane steps
  for (const Config& c : configs()) {
    // The global schedule runs no shader loop over steps (one dispatch per step), so the cap
    // cannot bite there; at ~3 dispatches per step it would also take a minute on lavapipe.
    if (c.schedule == Schedule::Global) continue;
    const std::string config = c.name;
    CAPTURE(config);
    VulkanOptions vulkan = options_for(c);
    VulkanStats stats;
    auto result = run_vulkan(loaded->lowered, batch, options, vulkan, &stats, context());
    REQUIRE_MESSAGE(result.ok(), result.error());
    CHECK(compare_results(loaded->lowered, expected, *result) == "");
    CHECK(result->stats.lane_steps == expected.stats.lane_steps);
    // At most 4096 steps per dispatch (a lane/scope step, one loop iteration, runs at most every
    // block once): the host had to relaunch many times.
    const uint64_t blocks_per_step =
        c.scope == LocalScope::Lane ? loaded->lowered.blocks.size() : 1;
    CHECK(stats.submissions >
          expected.stats.steps / (vulkan.local_steps_per_dispatch * blocks_per_step));
    check_no_validation_messages();
  }
}

// A loop over a 100-word array in a block: lavapipe's cap counts its iterations with the dispatch
// loop's, once per SIMD row of 8 lanes. Without the count, the row went on looping while its
// longest lane ran and the cap then cut a block's loop short: the lanes that had finished first
// summed only part of their array (101 for n = 100, not 10100), and a long lane lost part of an
// addition (issue 11: the NUTS chains that left the interpreter's path).
const char* kArrayLoop = R"(
fn main(n: int) -> float {
    var a = [1.0; 100];
    let b = [1.0; 100];
    for i in 0..n { a = a + b; }
    return sum(a);
}
)";

TEST_CASE("engine: loops inside blocks are never cut short by the device's loop cap") {
  auto loaded = load_source(kArrayLoop);
  Batch batch;
  batch.lanes = 6;
  batch.inputs = {{100, 500, 700, 1000, 3000, 0}};
  RunOptions options;
  const RunResult expected = run_interp(loaded->program, loaded->entry, batch, options);
  REQUIRE(expected.outputs.size() == 6);
  CHECK(bits_float(expected.outputs[0]) == 10100.0f);
  CHECK(bits_float(expected.outputs[4]) == 300100.0f);
  for (const Config& c : configs())
    for (uint32_t steps : {4096u, 60000u}) {  // the default, and the most a dispatch may take
      const std::string config = c.name;
      CAPTURE(config);
      CAPTURE(steps);
      VulkanOptions vulkan = options_for(c);
      vulkan.local_steps_per_dispatch = steps;
      auto result = run_vulkan(loaded->lowered, batch, options, vulkan, nullptr, context());
      REQUIRE_MESSAGE(result.ok(), result.error());
      CHECK(compare_results(loaded->lowered, expected, *result) == "");
    }
  check_no_validation_messages();
}

TEST_CASE("engine: a device with a loop cap gets kernels that count their loops") {
  auto loaded = load_source(kArrayLoop);
  const StateLayout layout = plan_state(loaded->lowered);
  GlslTarget capped;
  capped.loop_limit = kShaderLoopLimit;
  capped.loop_lanes = 8;
  const std::string counted =
      generate_glsl(loaded->lowered, layout, Residency::Registers, capped, schedule_entries());
  CHECK(counted.find("#define AB_LOOP_LIMITED 1") != std::string::npos);
  // The addition's loop: 100 iterations and its final test.
  CHECK(counted.find("AB_COUNT_LOOPS(101u);") != std::string::npos);
  CHECK(counted.find("#define AB_LOOP_ROOM_ROW ") != std::string::npos);
  // Other devices, and the kernels of one block per dispatch, count nothing.
  const std::string uncapped = generate_glsl(loaded->lowered, layout, Residency::Registers,
                                             GlslTarget{}, schedule_entries());
  CHECK(uncapped.find("#define AB_LOOP_LIMITED") == std::string::npos);
  const std::string memory =
      generate_glsl(loaded->lowered, layout, Residency::Memory, capped, schedule_entries());
  CHECK(memory.find("#define AB_LOOP_LIMITED") == std::string::npos);
}

// The steps-per-dispatch limit guards against lavapipe's loop cap, so it applies there only.
TEST_CASE("engine: only a device that caps shader loops refuses > 60,000 steps per dispatch") {
  DeviceInfo lavapipe;
  lavapipe.name = "llvmpipe (LLVM 15.0.6, 256 bits)";
  lavapipe.driver = "llvmpipe Mesa 22.3.6 (LLVM 15.0.6)";
  CHECK(caps_shader_loops(lavapipe));
  DeviceInfo gpu;
  gpu.name = "NVIDIA H100 80GB HBM3";
  gpu.driver = "NVIDIA 550.54.15";
  CHECK_FALSE(caps_shader_loops(gpu));
  DeviceInfo other_mesa;
  other_mesa.name = "AMD Radeon RX 7900 XTX (RADV NAVI31)";
  other_mesa.driver = "radv Mesa 22.3.6";
  CHECK_FALSE(caps_shader_loops(other_mesa));

  // On this machine's device the refusal is what a run sees: lavapipe refuses 60,001 with the
  // message and takes 60,000; another device takes both.
  auto loaded = load_source(kLongLoop);
  Batch batch;
  batch.lanes = 2;
  batch.inputs = {{70000, 5}};
  RunOptions options;
  const RunResult expected = run_interp(loaded->program, loaded->entry, batch, options);
  const bool capped = caps_shader_loops(context()->device());
  for (uint32_t steps : {60000u, 60001u}) {
    CAPTURE(steps);
    VulkanOptions vulkan;
    vulkan.local_steps_per_dispatch = steps;
    auto result = run_vulkan(loaded->lowered, batch, options, vulkan, nullptr, context());
    if (capped && steps > 60000) {
      REQUIRE_FALSE(result.ok());
      CHECK(result.error().find("local_steps_per_dispatch must stay below 60,000") !=
            std::string::npos);
    } else {
      REQUIRE_MESSAGE(result.ok(), result.error());
      CHECK(compare_results(loaded->lowered, expected, *result) == "");
    }
  }
  check_no_validation_messages();
}

TEST_CASE("engine: the step budget faults a long lane with the interpreter's record") {
  auto loaded = load_source(kLongLoop);
  Batch batch;
  batch.lanes = 2;
  batch.inputs = {{100000, 10}};
  RunOptions options;
  options.max_steps = 70000;
  const RunResult expected = run_interp(loaded->program, loaded->entry, batch, options);
  REQUIRE(expected.errors.size() == 1);
  for (const Config& c : configs()) {
    if (c.schedule == Schedule::Global && c.mode == GlobalMode::Masked) continue;  // slow here
    const std::string config = c.name;
    CAPTURE(config);
    VulkanOptions vulkan = options_for(c);
    vulkan.steps_per_submission = 256;
    auto result = run_vulkan(loaded->lowered, batch, options, vulkan, nullptr, context());
    REQUIRE_MESSAGE(result.ok(), result.error());
    CHECK(compare_results(loaded->lowered, expected, *result) == "");
    check_no_validation_messages();
  }
}

TEST_CASE("engine: the local schedule finishes with one step per dispatch, nested loops included") {
  // The lane scope's loops nest (a recursion inside a loop here); each dispatch must still run
  // every live lane's block, however small its budget.
  auto loaded = load_source(R"(
fn fib(n: int) -> int {
    if n <= 1 { return 1; }
    return fib(n - 1) + fib(n - 2);
}
fn main(n: int) -> int {
    var s = 0;
    for i in 0..n { s += fib(i); }
    return s;
}
)");
  Batch batch;
  batch.lanes = 5;
  batch.inputs = {{0, 1, 4, 7, 3}};
  RunOptions options;
  const RunResult expected = run_interp(loaded->program, loaded->entry, batch, options);
  for (const Config& c : configs()) {
    if (c.schedule == Schedule::Global) continue;
    const std::string config = c.name;
    CAPTURE(config);
    VulkanOptions vulkan = options_for(c);
    vulkan.local_steps_per_dispatch = 1;
    VulkanStats stats;
    auto result = run_vulkan(loaded->lowered, batch, options, vulkan, &stats, context());
    REQUIRE_MESSAGE(result.ok(), result.error());
    CHECK(compare_results(loaded->lowered, expected, *result) == "");
    CHECK(stats.submissions > 10);
    check_no_validation_messages();
  }
}

// On a device that caps loops, a loop over 1,024 words or more takes 8 words an iteration, so
// lavapipe's cap counts an eighth of them; a shorter loop, and another device's code, are
// unchanged (docs/engine.md, "lavapipe's loop cap").
TEST_CASE("engine: loops over long arrays take eight words an iteration") {
  for (uint32_t words : {100u, 4000u}) {
    CAPTURE(words);
    auto loaded = load_source(
        fmt::format("fn main(a: float[{}]) -> float {{\n    return sum(a * a);\n}}\n", words));
    const StateLayout layout = plan_state(loaded->lowered);
    GlslTarget capped;
    capped.loop_limit = kShaderLoopLimit;
    const std::string glsl =
        generate_glsl(loaded->lowered, layout, Residency::Memory, capped, schedule_entries());
    // Another device's code is unchanged.
    CHECK(
        generate_glsl(loaded->lowered, layout, Residency::Memory, GlslTarget{}, schedule_entries())
            .find("i += 8u") == std::string::npos);
    uint64_t iterations = 0;  // with no value in registers: the blocks' loops and the counts
    for (int32_t b = 0; b < static_cast<int32_t>(loaded->lowered.blocks.size()); ++b)
      iterations = std::max(iterations, step_loop_iterations(loaded->lowered, layout, b, 0));
    // The block reads a, squares it and sums the squares: three passes over its words.
    if (words < 1024) {
      CHECK(glsl.find("i += 8u") == std::string::npos);
      CHECK(iterations > 3 * words);
    } else {
      CHECK(glsl.find("i += 8u") != std::string::npos);
      CHECK(glsl.find("(i + 7u)") != std::string::npos);
      CHECK(iterations < 3 * words / 4);
    }
  }
}

// A block whose loops over long arrays would pass lavapipe's cap in one step if each counted a
// word an iteration (six passes over 20,000 words: the run was refused) runs: its long values stay
// in the state buffer and its loops take eight words an iteration (docs/engine.md, "lavapipe's
// loop cap"). At 300 and 20,000 words it equals the interpreter on every device.
TEST_CASE("engine: a block whose loops run over long arrays runs under the device's loop cap") {
  for (uint32_t words : {300u, 20000u}) {
    CAPTURE(words);
    auto loaded =
        load_source(fmt::format("fn main(a: float[{}]) -> float {{\n"
                                "    let b = a * 2.0 + a;\n"
                                "    return sum((b * b - a) * a);\n"
                                "}}\n",
                                words));
    Batch batch;
    batch.lanes = 3;
    batch.inputs.resize(1);
    for (uint32_t i = 0; i < batch.lanes * words; ++i)
      batch.inputs[0].push_back(float_bits(static_cast<float>(i % 7) * 0.25f));
    const RunResult expected = run_interp(loaded->program, loaded->entry, batch, {});
    auto result = run_vulkan(loaded->lowered, batch, {}, VulkanOptions{}, nullptr, context());
    REQUIRE_MESSAGE(result.ok(), result.error());
    CHECK(compare_results(loaded->lowered, expected, *result) == "");
  }
  check_no_validation_messages();
}

// What the unrolling cannot shorten is still refused on a capped device, with the block's place:
// sin reduces its argument bit by bit, some 70 loop iterations for each of 2,000 words.
TEST_CASE("engine: a block whose loops pass the device's loop cap in one step is refused") {
  const bool capped = caps_shader_loops(context()->device());
  auto loaded = load_source("fn main(a: float[2000]) -> float {\n    return sum(sin(a));\n}\n");
  Batch batch;
  batch.lanes = 2;
  batch.inputs.resize(1);
  for (uint32_t i = 0; i < batch.lanes * 2000; ++i)
    batch.inputs[0].push_back(float_bits(static_cast<float>(i % 7) * 0.25f));
  auto result = run_vulkan(loaded->lowered, batch, {}, VulkanOptions{}, nullptr, context());
  if (capped) {
    REQUIRE_FALSE(result.ok());
    CHECK(result.error().find("test.ab:") != std::string::npos);
    CHECK(result.error().find("loop iterations in one step") != std::string::npos);
    CHECK(result.error().find("--backend vm") != std::string::npos);
  } else {
    REQUIRE_MESSAGE(result.ok(), result.error());
    const RunResult expected = run_interp(loaded->program, loaded->entry, batch, {});
    CHECK(compare_results(loaded->lowered, expected, *result) == "");
  }
  check_no_validation_messages();
}

}  // namespace
}  // namespace ab::enginetest
