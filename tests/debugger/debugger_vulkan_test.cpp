// The debugger's Vulkan source (debugger/vulkan_source.h) on lavapipe with validation on: with
// the global schedule, N debugger steps reach the CPU VM's state after N steps, also after going
// back and forward again through the timeline's checkpoints (VulkanRun::checkpoint / restore);
// with the local schedule, each step runs, in every group, exactly the lanes the per-group view
// said would run (the group's min live PC). A trace of `run --devices 0,0` replays in the model
// with each lane's history and outputs those of the one-device trace.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "debugger/trace_source.h"
#include "debugger/vulkan_source.h"
#include "support/debugger_test_support.h"
#include "support/engine_test_support.h"

using namespace ab;
using namespace ab::debugger;

namespace {

// A model's state with what the GPU does not keep cleared on both sides: Temp variables live only
// inside a block there, and a lane that faulted mid-block keeps no partial writes
// (engine_trace_test.cpp compares the engine the same way).
nlohmann::json comparable_state(const DebuggerModel& m) {
  const Module& p = m.module();
  BatchSnapshot s = m.source().snapshot(0, m.source().lanes());
  const uint32_t frame = p.register_words();
  for (uint32_t lane = 0; lane < s.lanes; ++lane)
    for (const VariableInfo& v : p.variables())
      if (v.storage == VariableInfo::Storage::Temp || s.faulted[lane])
        for (uint32_t k = 0; k < v.value_type.words; ++k)
          s.registers[size_t{lane} * frame + v.offset + k] = 0;
  nlohmann::json out = nlohmann::json::parse(state_json(p, s));
  out["next_block"] = m.blocks().name(m.source().next_block());
  out["live"] = m.live_lanes();
  out["done"] = m.source().done();
  // The same lanes ran; the VM lists them in the order they queued, the GPU source by index.
  std::vector<uint32_t> ran = m.source().last_active();
  std::sort(ran.begin(), ran.end());
  out["last_active"] = ran;
  return out;
}

// The program of `info` as a Module (the Vulkan source compiles one).
std::unique_ptr<VulkanSource> open_vulkan(const ProgramInfo& info, const Batch& batch,
                                          const RunOptions& options, Schedule schedule,
                                          LocalScope scope = LocalScope::Subgroup) {
  VulkanOptions vulkan;
  vulkan.schedule = schedule;
  vulkan.local_scope = scope;
  auto module = Module::compile(info.source_text, {info.path, "main"});
  REQUIRE_MESSAGE(module.ok(), module.error());
  auto opened = VulkanSource::open(*module, batch, options, vulkan, enginetest::context());
  if (!opened) FAIL(opened.error());
  return std::move(*opened);
}

// The sample `file` as the debugger is given it.
ProgramInfo sample_info(const char* file) {
  const std::string text = ab::testing::read_sample(file);
  return {file, text, ab::testing::compiled(text, {file, "main"})};
}

}  // namespace

TEST_CASE("vulkan source: global steps equal the VM's, also after back and forward") {
  for (const char* file : {"fib.ab", "faults.ab"}) {
    SUBCASE(file) {
      const auto& sample = ab::testing::sample_case(file);
      const Batch batch = ab::testing::make_batch(sample, 40);
      RunOptions options = sample.options;
      options.stack_depth = 64;
      const ProgramInfo info = sample_info(file);
      DebuggerModel vm(*VmSource::create(info, batch, options), {.interval = 8});
      DebuggerModel gpu(open_vulkan(info, batch, options, Schedule::Global), {.interval = 8});
      CHECK(gpu.source().describe().find("global") != std::string::npos);
      CHECK(gpu.source().group_width() == 0);
      CHECK(comparable_state(gpu)["lanes"] == comparable_state(vm)["lanes"]);
      for (uint64_t n : {1, 5, 17, 30}) {
        CAPTURE(n);
        CHECK(gpu.step(n) == vm.step(n));
        REQUIRE(gpu.position() == vm.position());
        CHECK(comparable_state(gpu) == comparable_state(vm));
      }
      // Back across several checkpoints, then forward again: the same states as the first pass.
      const nlohmann::json end = comparable_state(gpu);
      gpu.back(21);
      vm.back(21);
      REQUIRE(gpu.position() == vm.position());
      CHECK(comparable_state(gpu)["lanes"] == comparable_state(vm)["lanes"]);
      gpu.step(21);
      vm.step(21);
      CHECK(comparable_state(gpu) == comparable_state(vm));
      CHECK(comparable_state(gpu) == end);
      CHECK(gpu.timeline().checkpoint_count() > 1);
      CHECK(gpu.source().error().empty());
      enginetest::check_no_validation_messages();
    }
  }
}

TEST_CASE("vulkan source: local steps run each group's min-PC block, as the group view says") {
  const ab::debugger::testing::Loaded f = ab::debugger::testing::fib_batch(100);
  RunOptions options;
  options.stack_depth = 32;
  DebuggerModel m(open_vulkan(f.info(), f.batch, options, Schedule::Local), {.interval = 4});
  const uint32_t width = m.source().group_width();
  REQUIRE(width > 0);
  const uint32_t groups = (f.batch.lanes + width - 1) / width;
  uint64_t checked = 0;
  for (int s = 0; s < 12 && !m.source().done(); ++s) {
    // Before the step: the lanes each group's view says will run.
    std::vector<uint32_t> expected;
    for (uint32_t g = 0; g < groups; ++g) {
      const auto view = group_view(m.source(), g * width);
      REQUIRE(view.has_value());
      CHECK(view->group == g);
      for (size_t i = 0; i < view->pcs.size(); ++i)
        if (view->next_block >= 0 && view->pcs[i] == view->next_block)
          expected.push_back(view->first_lane + static_cast<uint32_t>(i));
    }
    REQUIRE(m.step(1) == 1);
    CHECK(m.source().last_active() == expected);
    checked += expected.size();
  }
  CHECK(checked > 0);
  // Going back restores the device state: the same lanes run again.
  const std::vector<uint32_t> last = m.source().last_active();
  m.back(3);
  m.step(3);
  CHECK(m.source().last_active() == last);
  enginetest::check_no_validation_messages();
}

namespace {

TEST_CASE("vulkan source: the lane scope steps to the VM's final state and shows no groups") {
  const auto& sample = ab::testing::sample_case("faults.ab");
  const Batch batch = ab::testing::make_batch(sample, 40);
  RunOptions options = sample.options;
  options.stack_depth = 64;
  const ProgramInfo info = sample_info("faults.ab");
  DebuggerModel vm(*VmSource::create(info, batch, options), {.interval = 8});
  DebuggerModel gpu(open_vulkan(info, batch, options, Schedule::Local, LocalScope::Lane),
                    {.interval = 8});
  CHECK(gpu.source().describe().find("local/lane") != std::string::npos);
  CHECK(gpu.source().group_width() == 0);
  CHECK_FALSE(group_view(gpu.source(), 0).has_value());
  uint64_t steps = 0;
  while (!gpu.source().done() && steps < 100000)
    steps += gpu.step(1);
  while (!vm.source().done())
    vm.step(1000);
  REQUIRE(gpu.source().done());
  CHECK(comparable_state(gpu)["lanes"] == comparable_state(vm)["lanes"]);
  enginetest::check_no_validation_messages();
}

#ifdef AB_CLI
// A trace replayed in the debugger's model to its end: each lane's history (the blocks it ran, in
// order) and the run's result.
struct Replayed {
  std::vector<std::vector<int32_t>> blocks;  // [lane]
  RunResult result;
  std::vector<uint32_t> shard_lanes;  // TraceFile::shard_lanes
};

Replayed replay_trace(const ab::debugger::testing::Loaded& f, const std::string& path) {
  auto file = TraceFile::read(path);
  REQUIRE_MESSAGE(file.ok(), file.error());
  auto source = TraceSource::open(*file, f.info());
  REQUIRE_MESSAGE(source.ok(), source.error());
  Replayed r;
  r.shard_lanes = (*file)->shard_lanes();
  DebuggerModel m(std::move(*source));
  r.blocks.resize(m.source().lanes());
  while (!m.source().done()) {
    const int32_t block = m.source().next_block();
    REQUIRE(m.step(1) == 1);
    for (uint32_t lane : m.source().last_active())
      r.blocks[lane].push_back(block);
  }
  CHECK(m.source().error().empty());
  r.result = m.source().result();
  return r;
}

TEST_CASE("a trace of a run over two logical devices replays each lane's history as one device's") {
  const ab::debugger::testing::Loaded f = ab::debugger::testing::fib_batch(15);
  const std::string one = ab::debugger::testing::temp_path("one.abtrace"),
                    split = ab::debugger::testing::temp_path("split.abtrace");
  const std::string run = fmt::format(
      "'{}' run '{}/samples/fib.ab' -i n=1,9,3,0,12,5,7,2,11,4,8,6,10,13,3 --backend vulkan "
      "--format json --trace ",
      AB_CLI, AB_SOURCE_DIR);
  REQUIRE(std::system((run + one + " > /dev/null 2>&1").c_str()) == 0);
  REQUIRE(std::system((run + split + " --devices 0,0 > /dev/null 2>&1").c_str()) == 0);
  const Replayed want = replay_trace(f, one), got = replay_trace(f, split);
  CHECK(want.shard_lanes.empty());
  CHECK(got.shard_lanes == std::vector<uint32_t>{8, 7});  // each device's lanes, stepped apart
  for (uint32_t lane = 0; lane < 15; ++lane) {
    CAPTURE(lane);
    CHECK(got.blocks[lane] == want.blocks[lane]);
  }
  CHECK(got.result.outputs == want.result.outputs);
  CHECK(got.result.faulted == want.result.faulted);
  CHECK(got.result.stats.lane_steps == want.result.stats.lane_steps);
  std::filesystem::remove(one);
  std::filesystem::remove(split);
}
#endif

}  // namespace
