// split_at_products (passes/): the front end gives each matrix product a block of its own (the
// block Vulkan's product kernel runs), with the whole-uniform reads that feed it and nothing
// else, so that a uniform operand never becomes a lane's variable; values and step counts stay
// the same on the interpreter and the vm.
#include <doctest/doctest.h>

#include <algorithm>

#include "cpu/interp.h"
#include "cpu/vm.h"
#include "passes/split_at_products.h"
#include "support/result_compare.h"
#include "support/samples.h"

namespace ab {
namespace {

const char* kSource = R"(
uniform X: float[3][70];
fn main(w: float[70], m: float[2][2], v0: float[2]) -> float[4] {
    let a = X @ w;
    let t = X;
    let b = t @ w + t[0][1];
    var v = v0;
    for k in 0..3 { v = m @ v; }
    return [a[0], b[2], v[0], v[1]];
}
)";

TEST_CASE("split_at_products: each product is a block of its own, its uniform reads with it") {
  const testing::CompiledProgram c = testing::compile_program(kSource, "split.ab");
  const Function& fn = c.program.functions[c.entry];
  int products = 0;
  for (const Block& block : fn.blocks)
    for (size_t i = 0; i < block.ops.size(); ++i) {
      const Op& op = block.ops[i];
      if (!is_matmul(op)) continue;
      ++products;
      CHECK(is_product_block(block));
      CHECK(i + 1 == block.ops.size());
      // A product never writes its own operand: the next block copies a fresh result.
      CHECK(std::find(op.args.begin(), op.args.end(), op.dst) == op.args.end());
      // Every uniform operand is read in the product's block.
      for (VarId arg : op.args) {
        const bool read_here = std::any_of(block.ops.begin(), block.ops.end() - 1,
                                           [&](const Op& r) { return r.dst == arg; });
        const bool lane_value =
            std::none_of(fn.blocks.begin(), fn.blocks.end(), [&](const Block& b) {
              return std::any_of(b.ops.begin(), b.ops.end(),
                                 [&](const Op& r) { return r.dst == arg && is_uniform_get(r); });
            });
        CHECK((read_here || lane_value));
      }
    }
  CHECK(products == 3);
}

TEST_CASE("split_at_products: interp and vm agree on values and lane steps") {
  const testing::CompiledProgram c = testing::compile_program(kSource, "split.ab");
  Batch batch;
  batch.lanes = 3;
  batch.inputs.resize(3);
  for (uint32_t lane = 0; lane < 3; ++lane) {
    for (uint32_t i = 0; i < 70; ++i)
      batch.inputs[0].push_back(float_bits(static_cast<float>(i % 7) * 0.25f - float(lane)));
    for (float f : {0.0f, 1.0f, 1.0f, 1.0f})
      batch.inputs[1].push_back(float_bits(f));
    for (float f : {1.0f, float(lane)})
      batch.inputs[2].push_back(float_bits(f));
  }
  std::vector<uint32_t> x;
  for (uint32_t i = 0; i < 3 * 70; ++i)
    x.push_back(float_bits(static_cast<float>(i % 11) * 0.5f - 2.0f));
  batch.uniforms = {x};
  const RunResult interp = run_interp(c.program, c.entry, batch, {});
  REQUIRE(interp.errors.empty());
  const RunResult vm = run_vm(c.lowered, batch, {});
  CHECK(testing::describe_difference(interp, vm).empty());
  CHECK(interp.stats.lane_steps == vm.stats.lane_steps);
  // Lane 1: v = (1, 1) -> (1, 2) -> (2, 3) -> (3, 5) under Fibonacci's matrix.
  CHECK(bits_float(interp.outputs[4 + 2]) == 3.0f);
  CHECK(bits_float(interp.outputs[4 + 3]) == 5.0f);
}

}  // namespace
}  // namespace ab
