// Code generation and compilation: every generated module (each kernel variant of every sample
// and of generated random programs) and every hand-written kernel passes spirv-val; random
// well-typed programs (recursion, loops, arrays, structs, faults, random draws) give the
// interpreter's results on every schedule; compiled SPIR-V and the pipeline cache are reused from
// the disk cache.
#include <algorithm>
#include <filesystem>
#include <set>

#include "codegen/glsl_codegen.h"
#include "engine/device/context_impl.h"
#include "engine/device/shader_compiler.h"
#include "engine/schedules/schedule_entries.h"
#include "engine/schedules/schedule_global.h"
#include "support/engine_test_support.h"
#include "support/program_gen.h"
#include "support/spirv_check.h"

namespace ab::enginetest {
namespace {

// 6 generated variants + 4 hand-written kernels, and the product kernel where `@` appears.
void check_modules_validate(VulkanProgram& program, const LoweredProgram& lowered) {
  const bool products = std::any_of(lowered.blocks.begin(), lowered.blocks.end(), [](auto& b) {
    return std::any_of(b.ops.begin(), b.ops.end(), [](const Op& op) { return is_matmul(op); });
  });
  CHECK(check_spirv(program) == (products ? 11u : 10u));
}

TEST_CASE("engine: every module generated for the samples passes spirv-val") {
  for (const auto& sample : testing::all_samples()) {
    CAPTURE(sample.file);
    auto loaded = load_sample_case(sample);
    auto program = VulkanProgram::compile(context(), loaded->lowered);
    REQUIRE_MESSAGE(program.ok(), program.error());
    for (size_t b = 0; b < loaded->lowered.blocks.size(); ++b) {
      // block_glsl (the debugger's view) is exactly the block's function in the whole module.
      const std::string one = block_glsl(loaded->lowered, static_cast<int32_t>(b));
      CHECK(one.find(fmt::format("void block_{}(uint lane)", b)) != std::string::npos);
      CHECK((*program)->glsl().find(one) != std::string::npos);
    }
    CHECK(block_glsl(loaded->lowered, -1).empty());
    CHECK(block_glsl(loaded->lowered, static_cast<int32_t>(loaded->lowered.blocks.size())).empty());
    check_modules_validate(**program, loaded->lowered);
    check_no_validation_messages();
  }
}

Batch random_program_batch(uint64_t seed, uint32_t lanes) {
  Batch batch;
  batch.lanes = lanes;
  batch.inputs.resize(2);
  for (uint32_t lane = 0; lane < batch.lanes; ++lane) {
    batch.inputs[0].push_back(static_cast<uint32_t>(testing::lane_hash(seed, lane) % 64));
    batch.inputs[1].push_back(static_cast<uint32_t>(testing::lane_hash(seed + 99, lane)));
  }
  return batch;
}

// Random programs on the given schedules and batch sizes == interp; every module passes spirv-val.
void check_random_programs(uint64_t first_seed, uint64_t last_seed,
                           const std::vector<uint32_t>& sizes, const std::vector<Config>& which) {
  for (uint64_t seed = first_seed; seed <= last_seed; ++seed) {
    CAPTURE(seed);
    const std::string source = testing::generate_program(seed);
    auto loaded = load_source(source, "main", fmt::format("gen{}.ab", seed));
    RunOptions options = random_program_options(seed);
    auto program = VulkanProgram::compile(context(), loaded->lowered);
    REQUIRE_MESSAGE(program.ok(), program.error());
    check_modules_validate(**program, loaded->lowered);
    for (uint32_t lanes : sizes) {
      CAPTURE(lanes);
      const Batch batch = random_program_batch(seed, lanes);
      const RunResult expected = run_interp(loaded->program, loaded->entry, batch, options);
      for (const Config& c : which) {
        const std::string config = c.name;
        CAPTURE(config);
        const RunResult result = run_to_completion(*program, batch, options, c);
        const std::string difference = compare_results(loaded->lowered, expected, result);
        CHECK_MESSAGE(difference.empty(), difference, "\n", source);
      }
    }
    check_no_validation_messages();
  }
}

TEST_CASE("engine: the kernels for devices without subgroup ballot compile and pass spirv-val") {
  // lavapipe has ballot, so runs use the aggregated counting; the fallback is at least compiled.
  auto loaded = load_sample_case(testing::sample_case("nuts_tree.ab"));
  const StateLayout layout = plan_state(loaded->lowered);
  for (Kernel k : {Kernel::GlobalMasked, Kernel::GlobalCompacted, Kernel::LocalSubgroup}) {
    const std::string glsl =
        generate_glsl(loaded->lowered, layout, residency_of(k), GlslTarget{}, schedule_entries());
    CHECK(glsl.find("GL_KHR_shader_subgroup_ballot") == std::string::npos);
    auto spirv = compile_glsl(glsl, kernel_macro(k), "");
    REQUIRE_MESSAGE(spirv.ok(), spirv.error());
    CHECK(validate_spirv(spirv->spirv).empty());
  }
}

TEST_CASE("engine: the schedules supply every kernel's entry point, the generator takes them") {
  // Each kernel has one entry, guarded by its macro, and the schedule running that kernel names it.
  std::set<Kernel> kernels;
  for (const KernelEntry& entry : schedule_entries()) {
    CAPTURE(kernel_macro(entry.kernel));
    CHECK(kernels.insert(entry.kernel).second);
    CHECK(entry.glsl.find(fmt::format("#ifdef {}\n", kernel_macro(entry.kernel))) !=
          std::string_view::npos);
    CHECK(entry.lane_sweep == (entry.kernel == Kernel::LocalLane));
  }
  CHECK(kernels.size() == 6);
  CHECK(GlobalMaskedSchedule::entry().kernel == Kernel::GlobalMasked);
  CHECK(GlobalSchedule::entry().kernel == Kernel::GlobalCompacted);
  CHECK(GlobalFusedSchedule::entry().kernel == Kernel::GlobalFused);
  CHECK(LocalSchedule::entry(LocalScope::Subgroup).kernel == Kernel::LocalSubgroup);
  CHECK(LocalSchedule::entry(LocalScope::Workgroup).kernel == Kernel::LocalWorkgroup);
  CHECK(LocalSchedule::entry(LocalScope::Lane).kernel == Kernel::LocalLane);

  // The code generator appends the entries it is given, of the source's residency only, in their
  // order, and fills a lane sweep template with the part's blocks.
  auto loaded = load_sample_case(testing::sample_case("fib.ab"));
  const StateLayout layout = plan_state(loaded->lowered);
  const KernelEntry entries[] = {{Kernel::GlobalCompacted, "// second memory entry\n"},
                                 {Kernel::LocalLane, "// a sweep\n//@blocks\n// end\n", true},
                                 {Kernel::GlobalMasked, "// first memory entry\n"}};
  const std::string memory =
      generate_glsl(loaded->lowered, layout, Residency::Memory, GlslTarget{}, entries);
  CHECK(memory.ends_with("// second memory entry\n// first memory entry\n"));
  CHECK(memory.find("// a sweep") == std::string::npos);
  const std::string registers =
      generate_glsl(loaded->lowered, layout, Residency::Registers, GlslTarget{}, entries);
  CHECK(registers.find("memory entry") == std::string::npos);
  const size_t sweep = registers.find("// a sweep\n");
  REQUIRE(sweep != std::string::npos);
  CHECK(registers.find("if (AB_PC(lane) == 0u && AB_BUDGET_LEFT) block_0(lane);", sweep) !=
        std::string::npos);
  CHECK(registers.ends_with("// end\n"));
  CHECK(registers.find("//@blocks") == std::string::npos);
}

TEST_CASE("engine: random programs equal interp on every schedule and pass spirv-val") {
  // lavapipe compiles a workgroup barrier loop as an LLVM coroutine, which takes minutes for
  // programs this size (docs/engine.md); the samples cover that variant.
  const std::vector<Config> schedules = {configs()[0], configs()[1], configs()[2], configs()[4]};
  check_random_programs(1, 8, {1, 7, 64, 1000}, schedules);
}

TEST_CASE(
    "engine: random programs at 20000 lanes on global/compacted, local/subgroup, local/lane") {
  check_random_programs(9, 11, {20000}, {configs()[1], configs()[2], configs()[4]});
}

TEST_CASE("engine: stacks in private arrays equal interp, overflows and dispatch ends included") {
  // ackermann recurses deeply with stacked values; at 8 entries some lanes overflow.
  const auto& sample = testing::sample_case("ackermann.ab");
  auto loaded = load_sample_case(sample);
  const StateLayout layout = plan_state(loaded->lowered);
  uint32_t stack_words = 0;
  for (const StackPlacement& s : layout.stacks)
    stack_words += s.words;
  const uint32_t fits = kPrivateStackWords / stack_words;
  CHECK(private_stack_depth(layout, fits) == fits);
  CHECK(private_stack_depth(layout, fits + 1) == 0);
  // Only CPU devices keep stacks privately; a GPU keeps them in the arenas.
  DeviceInfo cpu, gpu;
  cpu.type = "cpu";
  gpu.type = "discrete";
  CHECK(private_stack_words(cpu) == kPrivateStackWords);
  CHECK(private_stack_words(gpu) == 0);
  CHECK(private_stack_depth(layout, 1, private_stack_words(gpu)) == 0);
  // On this machine's lavapipe the runs below keep their stacks privately; on a GPU they test
  // the arenas against the same expectations.
  const bool private_here = private_stack_words(context()->device()) > 0;
  CAPTURE(private_here);

  // The register kernels' source holds the stacks privately and passes spirv-val.
  SourcePart part{BlockSet{{{0, static_cast<int32_t>(loaded->lowered.blocks.size())}}}};
  part.private_stack_depth = 24;
  const std::string glsl = generate_glsl(loaded->lowered, layout, Residency::Registers,
                                         GlslTarget{}, part, schedule_entries());
  CHECK(glsl.find("ab_stack0[") != std::string::npos);
  CHECK(glsl.find("arena0.w[(0u * P.depth + (psp)") == std::string::npos);
  for (Kernel k : {Kernel::LocalLane, Kernel::LocalSubgroup, Kernel::GlobalFused}) {
    auto spirv = compile_glsl(glsl, kernel_macro(k), "");
    REQUIRE_MESSAGE(spirv.ok(), spirv.error());
    CHECK(validate_spirv(spirv->spirv).empty());
  }

  // Private (8: overflows; 64) and arena stacks (fits + 1) give interp's results, with a
  // dispatch ending every 7 steps so that the stacks go out and come back in between.
  auto program = VulkanProgram::compile(context(), loaded->lowered);
  REQUIRE_MESSAGE(program.ok(), program.error());
  for (uint32_t depth : {8u, 64u, fits + 1}) {
    CAPTURE(depth);
    RunOptions options = sample.options;
    options.stack_depth = depth;
    for (uint32_t lanes : {5u, 300u}) {  // 5 lanes: one subgroup, the fused global kernel
      const Batch batch = testing::make_batch(sample, lanes);
      const RunResult expected = run_interp(loaded->program, loaded->entry, batch, options);
      if (depth == 8) CHECK_FALSE(expected.errors.empty());
      for (const Config& c : {configs()[1], configs()[2], configs()[4]}) {
        CAPTURE(c.name);
        VulkanOptions vo = options_for(c);
        vo.local_steps_per_dispatch = 7;
        auto run = VulkanRun::create(*program, batch, options, vo);
        REQUIRE_MESSAGE(run.ok(), run.error());
        REQUIRE((*run)->run().ok());
        auto result = (*run)->result();
        REQUIRE_MESSAGE(result.ok(), result.error());
        const std::string difference = compare_results(loaded->lowered, expected, *result);
        CHECK_MESSAGE(difference.empty(), difference);
        CHECK(result->stats.max_stack_depth == expected.stats.max_stack_depth);
      }
    }
  }
  check_no_validation_messages();
}

TEST_CASE("engine: compiled SPIR-V and the pipeline cache come back from the disk cache") {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / fmt::format("autobatch-cache-test-{}", getpid());
  fs::remove_all(dir);
  auto loaded = load_sample_case(testing::sample_case("gcd.ab"));
  VulkanOptions options;
  options.cache_dir = dir.string();
  options.schedule = Schedule::Local;
  const Batch batch = testing::make_batch(testing::sample_case("gcd.ab"), 8);
  VulkanStats first, second;
  auto a = run_vulkan(loaded->lowered, batch, {}, options, &first, context());
  REQUIRE_MESSAGE(a.ok(), a.error());
  CHECK_FALSE(first.spirv_from_cache);
  size_t spv_files = 0, pipeline_files = 0;
  for (const auto& entry : fs::directory_iterator(dir)) {
    spv_files += entry.path().extension() == ".spv";
    pipeline_files += entry.path().filename().string().rfind("pipelines-", 0) == 0;
  }
  CHECK(spv_files == 1);       // one kernel variant was needed
  CHECK(pipeline_files == 1);  // written when the program was released
  auto b = run_vulkan(loaded->lowered, batch, {}, options, &second, context());
  REQUIRE_MESSAGE(b.ok(), b.error());
  CHECK(second.spirv_from_cache);
  CHECK(a->outputs == b->outputs);

  // A corrupt entry is not trusted: it is recompiled.
  for (const auto& entry : fs::directory_iterator(dir))
    if (entry.path().extension() == ".spv") fs::resize_file(entry.path(), 6);
  VulkanStats third;
  auto c = run_vulkan(loaded->lowered, batch, {}, options, &third, context());
  REQUIRE_MESSAGE(c.ok(), c.error());
  CHECK_FALSE(third.spirv_from_cache);
  CHECK(a->outputs == c->outputs);
  fs::remove_all(dir);
  check_no_validation_messages();
}

}  // namespace
}  // namespace ab::enginetest
