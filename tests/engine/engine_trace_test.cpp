// The global schedule is Algorithm 2 exactly: on every sample its step trace (block chosen,
// lanes that ran it) equals the CPU VM's, under both heuristics and every variant (masked,
// compacted, and fused for a batch of one workgroup), and so do the statistics derived from it.
// Stepping the GPU N steps reaches the VM's state after N steps (PCs, PC stacks, every variable and
// variable stack).
#include "cpu/vm.h"
#include "support/engine_test_support.h"

namespace ab::enginetest {
namespace {

// The global schedule's statistics are the VM's: same steps, blocks, lane steps, calls and depth.
void check_same_statistics(const RunStats& gpu, const RunStats& vm) {
  CHECK(gpu.steps == vm.steps);
  CHECK(gpu.block_executions == vm.block_executions);
  CHECK(gpu.lane_steps == vm.lane_steps);
  CHECK(gpu.calls == vm.calls);
  CHECK(gpu.max_stack_depth == vm.max_stack_depth);
  CHECK(gpu.utilization == doctest::Approx(vm.utilization).epsilon(1e-5));
}

TEST_CASE("engine: global trace and statistics equal the VM's on every sample") {
  for (const auto& sample : testing::all_samples()) {
    SUBCASE(sample.file.c_str()) {
      auto loaded = load_sample_case(sample);
      // The fused variant runs batches that fit one subgroup.
      const uint32_t subgroup = std::min<uint32_t>(context()->device().subgroup_size, 50);
      const Batch wide = testing::make_batch(sample, 50);
      const Batch narrow = testing::make_batch(sample, subgroup);
      for (Heuristic h : {Heuristic::MinPc, Heuristic::MostLanes})
        for (const char* variant : {"masked", "compacted", "compacted-pass", "fused"}) {
          const Batch& batch = variant == std::string("fused") ? narrow : wide;
          RunOptions options = sample.options;
          options.heuristic = h;
          options.record_trace = true;
          const RunResult vm = run_vm(loaded->lowered, batch, options);
          REQUIRE(!vm.trace.empty());
          CAPTURE(sample.file);
          CAPTURE(std::string(heuristic_name(h)));
          CAPTURE(std::string(variant));
          VulkanOptions vulkan;
          vulkan.schedule = Schedule::Global;
          vulkan.global_mode =
              variant == std::string("masked") ? GlobalMode::Masked : GlobalMode::Compacted;
          vulkan.fuse_small_batches = variant == std::string("fused");
          // Lists (faults.ab and nuts_tree.ab have more blocks than the default limit) or the pass.
          vulkan.global_lane_list_limit = variant == std::string("compacted-pass") ? 0 : 1000;
          vulkan.steps_per_submission = 13;  // traces span many submissions
          vulkan.local_steps_per_dispatch = 13;
          VulkanStats stats;
          auto gpu = run_vulkan(loaded->lowered, batch, options, vulkan, &stats, context());
          REQUIRE_MESSAGE(gpu.ok(), gpu.error());
          CHECK(stats.schedule == (variant == std::string("fused")    ? "global/fused"
                                   : variant == std::string("masked") ? "global/masked"
                                                                      : "global/compacted"));
          REQUIRE(gpu->trace.size() == vm.trace.size());
          size_t first_difference = vm.trace.size();
          for (size_t i = 0; i < vm.trace.size(); ++i)
            if (gpu->trace[i].block != vm.trace[i].block ||
                gpu->trace[i].active != vm.trace[i].active) {
              first_difference = i;
              break;
            }
          CHECK_MESSAGE(first_difference == vm.trace.size(), "traces differ at step ",
                        first_difference);
          check_same_statistics(gpu->stats, vm.stats);
          CHECK(compare_results(loaded->lowered, vm, *gpu) == "");
          check_no_validation_messages();
        }
    }
  }
}

// Compares the parts of two snapshots the GPU keeps: Temp variables exist only inside a block on
// the GPU, and a lane that faulted mid-block keeps no partial writes there.
void check_same_state(const LoweredProgram& program, const BatchSnapshot& vm,
                      const BatchSnapshot& gpu) {
  REQUIRE(gpu.lanes == vm.lanes);
  CHECK(gpu.step == vm.step);
  CHECK(gpu.pc == vm.pc);
  CHECK(gpu.pc_depth == vm.pc_depth);
  CHECK(gpu.faulted == vm.faulted);
  CHECK(gpu.lane_steps == vm.lane_steps);
  for (uint32_t lane = 0; lane < vm.lanes; ++lane)
    for (uint32_t d = 0; d < vm.pc_depth[lane]; ++d)
      REQUIRE(gpu.pc_stack[size_t{lane} * gpu.stack_capacity + d] ==
              vm.pc_stack[size_t{lane} * vm.stack_capacity + d]);
  std::vector<TypeId> types;
  for (const LoweredVar& v : program.vars)
    types.push_back(v.type);
  std::vector<uint32_t> offset;
  const uint32_t frame = layout_words(program.types(), types, offset);
  for (uint32_t lane = 0; lane < vm.lanes; ++lane) {
    if (vm.faulted[lane]) continue;
    for (size_t v = 0; v < program.vars.size(); ++v) {
      if (program.vars[v].storage == Storage::Temp) continue;
      std::vector<Scalar> kinds;
      word_kinds(program.types(), types[v], kinds);
      for (uint32_t k = 0; k < kinds.size(); ++k) {
        const size_t at = size_t{lane} * frame + offset[v] + k;
        const bool same = kinds[k] == Scalar::Float
                              ? same_float(gpu.registers[at], vm.registers[at])
                              : gpu.registers[at] == vm.registers[at];
        REQUIRE_MESSAGE(same, "lane ", lane, " variable ", program.vars[v].name, " word ", k);
      }
    }
  }
  REQUIRE(gpu.stacks.size() == vm.stacks.size());
  for (size_t s = 0; s < vm.stacks.size(); ++s) {
    CHECK(gpu.stacks[s].var == vm.stacks[s].var);
    CHECK(gpu.stacks[s].depth == vm.stacks[s].depth);
    std::vector<Scalar> kinds;
    word_kinds(program.types(), types[vm.stacks[s].var], kinds);
    const uint32_t w = static_cast<uint32_t>(kinds.size());
    for (uint32_t lane = 0; lane < vm.lanes; ++lane)
      for (uint32_t d = 0; d < vm.stacks[s].depth[lane]; ++d)
        for (uint32_t k = 0; k < w; ++k) {
          const uint32_t a = gpu.stacks[s].words[(size_t{lane} * gpu.stack_capacity + d) * w + k];
          const uint32_t b = vm.stacks[s].words[(size_t{lane} * vm.stack_capacity + d) * w + k];
          REQUIRE((kinds[k] == Scalar::Float ? same_float(a, b) : a == b));
        }
  }
}

// Steps the VM and the run by each of `counts` in turn; after each, both agree on whether the
// batch is done and on every lane's state.
void step_both(const LoweredProgram& lowered, VmRun& vm, VulkanRun& run,
               std::initializer_list<uint64_t> counts) {
  for (uint64_t n : counts) {
    CAPTURE(n);
    vm.step(n);
    auto stepped = run.step(n);
    REQUIRE_MESSAGE(stepped.ok(), stepped.error());
    CHECK(*stepped == vm.done());
    auto snap = run.snapshot();
    REQUIRE_MESSAGE(snap.ok(), snap.error());
    check_same_state(lowered, vm.snapshot(), *snap);
  }
}

TEST_CASE("engine: stepping the global schedule N steps reaches the VM's state after N steps") {
  for (const char* file : {"fib.ab", "merge_sort.ab", "faults.ab", "nuts_tree.ab"})
    for (bool fused : {false, true}) {
      CAPTURE(file);
      CAPTURE(fused);
      const auto& sample = testing::sample_case(file);
      auto loaded = load_sample_case(sample);
      const Batch batch = testing::make_batch(
          sample, fused ? std::min<uint32_t>(context()->device().subgroup_size, 24) : 24);
      RunOptions options = sample.options;
      options.stack_depth = 64;
      VmRun vm(loaded->lowered, batch, options);
      VulkanOptions vulkan;
      vulkan.schedule = Schedule::Global;
      vulkan.steps_per_submission = 8;
      vulkan.local_steps_per_dispatch = 8;
      vulkan.fuse_small_batches = fused;
      auto program = VulkanProgram::compile(context(), loaded->lowered, vulkan);
      REQUIRE_MESSAGE(program.ok(), program.error());
      auto run = VulkanRun::create(*program, batch, options, vulkan);
      REQUIRE_MESSAGE(run.ok(), run.error());
      step_both(loaded->lowered, vm, **run, {1, 2, 7, 30, 100});
      check_no_validation_messages();
    }
}

// Per-block lane lists (VulkanOptions::global_lane_list_limit, global/compacted's default) against
// the VM and the compaction pass they replace: lanes that fault (every fault kind, stack overflow
// and the step budget among them) or finish leave the lists, batches from one lane to more than
// a subgroup's worth of workgroups, and from one step per submission (a pick dispatch, then the
// step kernel, which does not pick) to many (each step kernel picks the next block).
TEST_CASE("engine: global lane lists give the VM's trace and results at every batch size") {
  struct Case {
    const char* file;
    uint32_t lanes;
    uint32_t steps_per_submission;
    bool split = false;  // parts of a few blocks: a pick dispatch per step, no block kernels
  };
  for (const Case& c :
       {Case{"faults.ab", 1, 1}, Case{"faults.ab", 7, 3}, Case{"faults.ab", 1000, 64},
        Case{"faults.ab", 20000, 1000}, Case{"collatz.ab", 1000, 1}, Case{"collatz.ab", 20000, 64},
        Case{"fib.ab", 7, 1000}, Case{"fib.ab", 1000, 5, true}}) {
    CAPTURE(c.file);
    CAPTURE(c.lanes);
    CAPTURE(c.steps_per_submission);
    const auto& sample = testing::sample_case(c.file);
    auto loaded = load_sample_case(sample);
    const Batch batch = testing::make_batch(sample, c.lanes);
    for (Heuristic h : {Heuristic::MinPc, Heuristic::MostLanes}) {
      CAPTURE(std::string(heuristic_name(h)));
      RunOptions options = sample.options;
      options.heuristic = h;
      options.record_trace = true;
      options.stack_depth = 16;  // faults.ab's endless recursion overflows sooner
      const RunResult vm = run_vm(loaded->lowered, batch, options);
      // Lists with a step kernel per block (the default), lists with one kernel, the pass.
      for (int variant = 0; variant < 3; ++variant) {
        CAPTURE(variant);
        const bool lists = variant < 2, block_kernels = variant == 0;
        VulkanOptions vulkan;
        vulkan.schedule = Schedule::Global;
        vulkan.global_mode = GlobalMode::Compacted;
        vulkan.fuse_small_batches = false;  // batches of 1 and 7 take the lists too
        vulkan.global_lane_list_limit = lists ? 1000 : 0;
        vulkan.global_block_kernels = block_kernels;
        vulkan.steps_per_submission = c.steps_per_submission;
        if (c.split) vulkan.max_part_cost = 10;
        VulkanStats stats;
        auto gpu = run_vulkan(loaded->lowered, batch, options, vulkan, &stats, context());
        REQUIRE_MESSAGE(gpu.ok(), gpu.error());
        CHECK(stats.schedule == "global/compacted");
        // Lists: the first count, then per submission a pick dispatch and each step's kernel
        // (or every block's kernel, most of them empty).
        const uint64_t blocks = loaded->lowered.blocks.size();
        const uint64_t per_step = block_kernels ? blocks : 1;
        CHECK((stats.parts > 1) == c.split);
        if (lists && !c.split)
          CHECK(stats.dispatches ==
                1 + stats.submissions * (1 + c.steps_per_submission * per_step));
        REQUIRE(gpu->trace.size() == vm.trace.size());
        for (size_t i = 0; i < vm.trace.size(); ++i) {
          REQUIRE_MESSAGE(gpu->trace[i].block == vm.trace[i].block, "step ", i);
          REQUIRE_MESSAGE(gpu->trace[i].active == vm.trace[i].active, "step ", i);
        }
        check_same_statistics(gpu->stats, vm.stats);
        CHECK(compare_results(loaded->lowered, vm, *gpu) == "");
        check_no_validation_messages();
      }
    }
  }
}

// Lists are rebuilt from the lanes' PCs when a checkpoint is restored: the run goes on as if it
// had never gone back.
TEST_CASE("engine: global lane lists survive a checkpoint's restore") {
  const auto& sample = testing::sample_case("faults.ab");
  auto loaded = load_sample_case(sample);
  const Batch batch = testing::make_batch(sample, 100);
  RunOptions options = sample.options;
  options.record_trace = true;
  options.stack_depth = 16;
  const RunResult vm = run_vm(loaded->lowered, batch, options);
  VulkanOptions vulkan;
  vulkan.schedule = Schedule::Global;
  vulkan.global_lane_list_limit = 1000;  // faults.ab may have more blocks than the default
  vulkan.steps_per_submission = 5;
  auto program = VulkanProgram::compile(context(), loaded->lowered, vulkan);
  REQUIRE_MESSAGE(program.ok(), program.error());
  auto run = VulkanRun::create(*program, batch, options, vulkan);
  REQUIRE_MESSAGE(run.ok(), run.error());
  REQUIRE((*run)->step(12).ok());
  auto saved = (*run)->checkpoint();
  REQUIRE_MESSAGE(saved.ok(), saved.error());
  REQUIRE((*run)->step(40).ok());
  REQUIRE((*run)->restore(**saved).ok());
  REQUIRE((*run)->run().ok());
  auto gpu = (*run)->result();
  REQUIRE_MESSAGE(gpu.ok(), gpu.error());
  REQUIRE(gpu->trace.size() == vm.trace.size());
  for (size_t i = 0; i < vm.trace.size(); ++i) {
    REQUIRE_MESSAGE(gpu->trace[i].block == vm.trace[i].block, "step ", i);
    REQUIRE_MESSAGE(gpu->trace[i].active == vm.trace[i].active, "step ", i);
  }
  CHECK(compare_results(loaded->lowered, vm, *gpu) == "");
  check_no_validation_messages();
}

// On a device with a loop cap (lavapipe) the fused kernel ends a dispatch once its loops near the
// cap, long before the step budget here: a loop over a 100-word array costs a hundred of the
// 65,535 per step. step(n) must still take exactly n steps.
TEST_CASE(
    "engine: stepping the fused global kernel stays exact when the loop cap ends a dispatch") {
  auto loaded = load_source(R"(
fn main(n: int) -> float {
    var a = [1.0; 100];
    let b = [1.0; 100];
    for i in 0..n { a = a + b; }
    return sum(a);
}
)");
  Batch batch;
  batch.lanes = std::min<uint32_t>(context()->device().subgroup_size, 4);
  batch.inputs = {{}};
  for (uint32_t lane = 0; lane < batch.lanes; ++lane)
    batch.inputs[0].push_back(900 + 300 * lane);
  RunOptions options;
  VmRun vm(loaded->lowered, batch, options);
  VulkanOptions vulkan;
  vulkan.schedule = Schedule::Global;
  vulkan.fuse_small_batches = true;
  vulkan.local_steps_per_dispatch = 60000;
  auto program = VulkanProgram::compile(context(), loaded->lowered, vulkan);
  REQUIRE_MESSAGE(program.ok(), program.error());
  auto run = VulkanRun::create(*program, batch, options, vulkan);
  REQUIRE_MESSAGE(run.ok(), run.error());
  step_both(loaded->lowered, vm, **run, {700, 1500, 1});
  check_no_validation_messages();
}

}  // namespace
}  // namespace ab::enginetest
