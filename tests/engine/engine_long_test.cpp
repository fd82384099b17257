// Long runs: lavapipe silently ends any shader loop after 65,535 iterations (DESIGN.md §4), so the
// local schedule bounds its steps per dispatch and the host re-dispatches until a flag says every
// lane is done. A lane needing ~200,000 steps must finish with the right answer, and the step
// budget must still fault lanes that exceed it.
#include "engine/src/context_impl.h"
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
  batch.inputs = {{100000, 5, 70000}};
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

}  // namespace
}  // namespace ab::enginetest
