// RunOptions::should_stop (autobatch/batch.h) on every backend: a run asked to stop ends at a
// step boundary with RunResult::stopped (CPU) or an error from VulkanRun::run, the lanes that
// finished keep their results, the others are neither finished nor faulted, and the records
// already emitted were delivered. A run never asked to stop is unchanged.
#include <doctest/doctest.h>

#include "autobatch/engine.h"
#include "autobatch/module.h"
#include "support/compiled.h"
#include "support/engine_test_support.h"

namespace ab {
namespace {

// Lane n emits n records, then loops 300,000 times if n is odd: the even lanes finish at once,
// the odd ones are still running when the test stops the run.
const char* kSlowOddLanes = R"(fn main(n: int) -> int {
    for i in 0..n { emit(i); }
    var x = 0;
    if n % 2 == 1 {
        while x < 300000 { x += 1; }
    }
    return n * 10 + x;
}
)";

std::shared_ptr<const Module> slow_module() {
  return testing::compiled(kSlowOddLanes, {"slow.ab", "main"});
}

Batch batch() {
  Batch b;
  b.lanes = 6;
  b.inputs = {{0, 1, 2, 3, 4, 5}};
  return b;
}

TEST_CASE("run stop: the CPU backends stop at a step boundary and keep what finished") {
  const auto module = slow_module();
  for (CpuBackend backend : {CpuBackend::Interpreter, CpuBackend::Vm}) {
    CAPTURE(static_cast<int>(backend));
    const auto whole = module->run_cpu(batch(), {}, backend);
    REQUIRE(whole.ok());
    CHECK(!whole->stopped);
    CHECK(whole->outputs[3] == 300030);

    uint64_t polls = 0, records = 0;
    RunOptions options;
    options.on_emit = [&](uint32_t, const uint32_t*) { ++records; };
    options.should_stop = [&] { return ++polls >= 3; };
    const auto stopped = module->run_cpu(batch(), options, backend);
    REQUIRE(stopped.ok());
    CHECK(stopped->stopped);
    CHECK(polls == 3);  // not asked again once it said stop
    CHECK(stopped->errors.empty());
    CHECK(stopped->outputs[0] == 0);  // lane 0 finished first on both backends
    CHECK(stopped->outputs[5] == 0);  // lane 5 did not finish: no invented result
    // The interpreter runs lane after lane: it stopped inside lane 1, after its one record. The
    // VM runs the lanes side by side: the records come before the loops.
    CHECK(records == (backend == CpuBackend::Interpreter ? 1 : 15));
  }
}

TEST_CASE("run stop: VulkanRun::run stops between rounds and says so") {
  const auto context = enginetest::context();
  REQUIRE(context);
  auto program = VulkanProgram::compile(context, slow_module());
  REQUIRE_MESSAGE(program.ok(), program.error());
  uint64_t polls = 0;
  RunOptions options;
  options.should_stop = [&] { return ++polls >= 1; };
  VulkanOptions vulkan;
  vulkan.schedule = Schedule::Global;  // many rounds: a round is at most a few thousand steps
  auto run = VulkanRun::create(*program, batch(), options, vulkan);
  REQUIRE_MESSAGE(run.ok(), run.error());
  const Status status = (*run)->run();
  REQUIRE(!status.ok());
  CHECK(status.error() == "the run was stopped (RunOptions::should_stop)");
  CHECK(!(*run)->done());
  CHECK(polls == 1);
  enginetest::check_no_validation_messages();
}

}  // namespace
}  // namespace ab
