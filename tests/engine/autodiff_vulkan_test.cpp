// Derived gradients (passes/differentiate.h) on Vulkan: the reverse sweep is ordinary code,
// so every schedule must give the vm's bits, and the generated SPIR-V passes spirv-val like any
// other (run_vulkan checks the validation layer; tests/engine's codegen tests run spirv-val).
// The gradients themselves are checked against finite differences in tests/ir/autodiff_test.cpp.
#include <random>

#include "cpu/vm.h"
#include "support/autodiff_cases.h"
#include "support/engine_test_support.h"
#include "support/program_gen.h"
#include "support/spirv_check.h"

namespace ab::enginetest {
namespace {

Batch points(int k, uint32_t lanes, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-2.0f, 2.0f);
  Batch batch;
  batch.lanes = lanes;
  batch.inputs.resize(1);
  for (uint32_t i = 0; i < lanes * static_cast<uint32_t>(k); ++i)
    batch.inputs[0].push_back(float_bits(d(rng)));
  return batch;
}

void check_vulkan_equals_vm(const std::string& source, int k, const std::string& entry,
                            const std::vector<Config>& which) {
  auto loaded = load_source(source, entry);
  const Batch batch = points(k, 37, 9);
  const RunResult vm = run_vm(loaded->lowered, batch, {});
  REQUIRE(vm.errors.empty());
  const RunResult interp = run_interp(loaded->program, loaded->entry, batch, {});
  CHECK(testing::describe_difference(interp, vm).empty());
  for (const Config& c : which) {
    CAPTURE(c.name);
    auto result = run_vulkan(loaded->lowered, batch, {}, options_for(c), nullptr, context());
    REQUIRE_MESSAGE(result.ok(), result.error());
    CHECK(testing::compare_results(loaded->lowered, vm, *result).empty());
    for (size_t i = 0; i < vm.outputs.size(); ++i)
      if (!testing::same_float(vm.outputs[i], result->outputs[i])) {
        FAIL_CHECK("word ", i, ": vm ", bits_float(vm.outputs[i]), ", vulkan ",
                   bits_float(result->outputs[i]));
        break;
      }
    check_no_validation_messages();
  }
}

TEST_CASE("autodiff on vulkan: every construct's gradient is the vm's bit for bit") {
  for (const testing::AutodiffCase& c : testing::autodiff_cases()) {
    CAPTURE(std::string(c.name));
    check_vulkan_equals_vm(testing::autodiff_program(c), c.k, "both", {configs()[1], configs()[4]});
    auto loaded = load_source(testing::autodiff_program(c), "both");
    auto program = VulkanProgram::compile(context(), loaded->lowered);
    REQUIRE_MESSAGE(program.ok(), program.error());
    check_spirv(**program);
    check_no_validation_messages();
  }
}

// The linear algebra's own ops (Cholesky and the triangular solves, ir/linear_algebra.h) are
// loops the GLSL emitter writes: their values and gradients on every schedule, alone so that the
// edit loop runs them (the case above runs every construct).
TEST_CASE("autodiff on vulkan: the linear algebra's values and gradients are the vm's") {
  for (const testing::AutodiffCase& c : testing::autodiff_cases()) {
    if (std::string(c.name) != "linear algebra") continue;
    check_vulkan_equals_vm(testing::autodiff_program(c), c.k, "both", {configs()[1], configs()[2]});
    return;
  }
  FAIL("no linear algebra case in autodiff_cases.h");
}

TEST_CASE("autodiff on vulkan: random float functions' gradients are the vm's bit for bit") {
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    CAPTURE(seed);
    check_vulkan_equals_vm(testing::random_float_function(seed) +
                               "\nfn main(x: float[3]) -> float[3] { return grad(f, x); }\n",
                           3, "main", {configs()[seed % configs().size()]});
  }
}

}  // namespace
}  // namespace ab::enginetest
