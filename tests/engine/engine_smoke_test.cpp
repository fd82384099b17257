// First contact: fib on every schedule equals the interpreter.
#include "support/engine_test_support.h"

namespace ab::enginetest {
namespace {

TEST_CASE("engine: fib on every schedule equals interp") {
  auto loaded = load_source(testing::read_sample("fib.ab"));
  Batch batch;
  batch.lanes = 100;
  batch.inputs.resize(1);
  for (uint32_t lane = 0; lane < batch.lanes; ++lane)
    batch.inputs[0].push_back((lane * 7) % 15);
  RunOptions options;
  const RunResult expected = run_interp(loaded->program, loaded->entry, batch, options);
  for (const Config& c : configs()) {
    CAPTURE(c.name);
    VulkanStats stats;
    auto result = run_vulkan(loaded->lowered, batch, options, options_for(c), &stats, context());
    REQUIRE_MESSAGE(result.ok(), result.error());
    CHECK(compare_results(loaded->lowered, expected, *result) == "");
    CHECK(result->stats.lane_steps == expected.stats.lane_steps);
    check_no_validation_messages();
  }
}

}  // namespace
}  // namespace ab::enginetest
