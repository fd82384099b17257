// Every sample on every Vulkan schedule (global masked and compacted, local per subgroup and per
// workgroup) gives what the reference interpreter gives, at batch sizes 1, 7, 64 and 1000, with
// divergent inputs; 20000 lanes on a few samples (the CPU device has 2 cores). Validation is on
// and any message fails the test.
#include "engine_test_support.h"

namespace ab::enginetest {
namespace {

void check_sample(const testing::SampleCase& sample, const std::vector<uint32_t>& sizes,
                  const std::vector<Config>& which) {
  auto loaded = load_sample_case(sample);
  for (const Config& c : which) {
    auto program = VulkanProgram::compile(context(), loaded->lowered, options_for(c));
    REQUIRE_MESSAGE(program.ok(), program.error());
    for (uint32_t lanes : sizes) {
      CAPTURE(sample.file);
      const std::string config = c.name;
      CAPTURE(config);
      CAPTURE(lanes);
      const Batch batch = testing::make_batch(sample, lanes);
      const RunResult expected = run_interp(loaded->program, loaded->entry, batch, sample.options);
      auto run = VulkanRun::create(*program, batch, sample.options, options_for(c));
      REQUIRE_MESSAGE(run.ok(), run.error());
      auto status = (*run)->run();
      REQUIRE_MESSAGE(status.ok(), status.error());
      auto result = (*run)->result();
      REQUIRE_MESSAGE(result.ok(), result.error());
      const std::string difference = compare_results(loaded->lowered, expected, *result);
      CHECK_MESSAGE(difference.empty(), difference);
      CHECK(result->stats.lane_steps == expected.stats.lane_steps);
      CHECK(result->stats.max_stack_depth == expected.stats.max_stack_depth);
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

TEST_CASE("engine: 20000 lanes on collatz and bits") {
  // The largest size on two samples and two schedules only: on lavapipe a masked step costs ~Z
  // (minutes at this size); the other variants are covered at 1000 lanes.
  const std::vector<Config> fast = {configs()[1],
                                    configs()[2]};  // global/compacted, local/subgroup
  for (const char* file : {"collatz.ab", "bits.ab"}) {
    SUBCASE(file) {
      check_sample(testing::sample_case(file), {20000}, fast);
    }
  }
}

}  // namespace
}  // namespace ab::enginetest
