// Every sample on every Vulkan schedule (global masked and compacted, local per subgroup and per
// workgroup) gives what the reference interpreter gives, at batch sizes 1, 7, 64 and 1000, with
// divergent inputs; 20000 lanes on the two fastest schedules (the CPU device has 2 cores).
// Validation is on and any message fails the test.
#include <optional>

#include "support/engine_test_support.h"

namespace ab::enginetest {
namespace {

void check_sample(const testing::SampleCase& sample, const std::vector<uint32_t>& sizes,
                  const std::vector<Config>& which, std::optional<uint32_t> stack_depth = {}) {
  auto loaded = load_sample_case(sample);
  RunOptions options = sample.options;
  if (stack_depth) options.stack_depth = *stack_depth;
  for (const Config& c : which) {
    auto program = VulkanProgram::compile(context(), loaded->lowered, options_for(c));
    REQUIRE_MESSAGE(program.ok(), program.error());
    for (uint32_t lanes : sizes) {
      CAPTURE(sample.file);
      const std::string config = c.name;
      CAPTURE(config);
      CAPTURE(lanes);
      const Batch batch = testing::make_batch(sample, lanes);
      const RunResult expected = run_interp(loaded->program, loaded->entry, batch, options);
      const RunResult result = run_to_completion(*program, batch, options, c);
      const std::string difference = compare_results(loaded->lowered, expected, result);
      CHECK_MESSAGE(difference.empty(), difference);
      CHECK(result.stats.lane_steps == expected.stats.lane_steps);
      CHECK(result.stats.max_stack_depth == expected.stats.max_stack_depth);
      check_no_validation_messages();
    }
  }
}

TEST_CASE("engine: every sample on every schedule equals interp at 1, 7, 64 and 1000 lanes") {
  for (const auto& sample : testing::all_samples()) {
    SUBCASE(sample.file.c_str()) {
      check_sample(sample, {1, 7, 64, 1000}, configs());
    }
  }
}

TEST_CASE("engine: every sample at 20000 lanes on global/compacted, local/subgroup, local/lane") {
  // The masked variant costs ~Z per step on lavapipe (minutes at this size) and local/workgroup
  // compiles slowly; both are covered at 1000 lanes above. Stacks 64 deep (the samples need
  // far less): at the default 1024 a two-word stack of 20000 lanes needs 156 MiB, more than
  // lavapipe's 128 MiB maxStorageBufferRange, which the engine refuses with a message (tested
  // below).
  const std::vector<Config> fast = {configs()[1], configs()[2], configs()[4]};
  for (const auto& sample : testing::all_samples()) {
    SUBCASE(sample.file.c_str()) {
      check_sample(sample, {20000}, fast, 64);
    }
  }
}

TEST_CASE("engine: a batch whose stacks exceed a binding's limit is refused with a message") {
  const auto sample = testing::sample_case("simpson.ab");
  auto loaded = load_sample_case(sample);
  auto program = VulkanProgram::compile(context(), loaded->lowered);
  REQUIRE_MESSAGE(program.ok(), program.error());
  const uint64_t limit = context()->device().max_storage_buffer_range;
  RunOptions options = sample.options;
  options.stack_depth = 1024;
  // Enough lanes that one word per entry of a single stack passes what an arena's bindings hold
  // (its windows: docs/engine.md, "Banks").
  const auto lanes = static_cast<uint32_t>(3 * limit / (4ull * options.stack_depth) + 1);
  auto run = VulkanRun::create(*program, testing::make_batch(sample, lanes), options);
  REQUIRE_FALSE(run.ok());
  CHECK(run.error().find("maxStorageBufferRange") != std::string::npos);
  CHECK(run.error().find("reduce the batch size or the stack depth") != std::string::npos);
  check_no_validation_messages();
}

TEST_CASE("engine: uniforms past a binding's limit are refused with advice about the uniforms") {
  const uint64_t limit = context()->device().max_storage_buffer_range;
  // Uniforms of the largest size a type may have (2^24 words), enough of them to pass the limit.
  constexpr uint64_t kWords = uint64_t{1} << 24;
  const uint64_t count = limit / (4 * kWords) + 1;
  if (count > 4) return;  // a device this roomy cannot be made to refuse in a test's memory
  std::string source;
  std::string sum = "0.0";
  for (uint64_t u = 0; u < count; ++u) {
    source += fmt::format("uniform table{}: float[{}];\n", u, kWords - u);
    sum += fmt::format(" + table{}[i]", u);
  }
  source += "fn main(i: int) -> float { return " + sum + "; }\n";
  auto loaded = load_source(source);
  auto program = VulkanProgram::compile(context(), loaded->lowered);
  REQUIRE_MESSAGE(program.ok(), program.error());
  Batch batch;
  batch.lanes = 1;  // the fewest lanes there can be: the batch is not what is too big
  batch.inputs = {{0}};
  for (uint64_t u = 0; u < count; ++u)
    batch.uniforms.emplace_back(kWords - u, 0u);
  auto run = VulkanRun::create(*program, batch, RunOptions{});
  REQUIRE_FALSE(run.ok());
  CAPTURE(run.error());
  CHECK(run.error().find("the uniform data needs") == 0);
  CHECK(run.error().find("the largest is 'table0', float[16777216]") != std::string::npos);
  CHECK(run.error().find("the batch size does not change their size") != std::string::npos);
  CHECK(run.error().find("reduce the batch size") == std::string::npos);
  check_no_validation_messages();
}

}  // namespace
}  // namespace ab::enginetest
