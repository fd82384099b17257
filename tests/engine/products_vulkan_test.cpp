// Matrix products on Vulkan (docs/engine.md, "Matrix products"): the local schedule's kernels
// leave each product block to the product kernel (shaders/ab_product.glsl). A lane that reaches
// a product waits there; the round's product dispatches run it for every waiting lane and move
// it on. Every schedule gives the interpreter's bits: lanes waiting at products at different
// recursion depths and steps, a uniform operand on either side, lane-own matrices, a product
// whose work takes several dispatches on lavapipe, and a step budget that runs out at a product.
#include <algorithm>
#include <cstring>

#include "codegen/product_blocks.h"
#include "engine/device/context_impl.h"
#include "engine/run/program_impl.h"
#include "support/engine_test_support.h"
#include "support/spirv_check.h"

namespace ab::enginetest {
namespace {

// Gradient steps on 0.5 |X w - y|^2 by a recursion that keeps each level's gradient across the
// deeper call (a stacked operand), then products with a uniform on the left and on the right of
// lane-own matrices, and lane-own products only.
const char* kSource = R"(
uniform X: float[900][10];
uniform y: float[900];
uniform B: float[20][70];
uniform A: float[6][20];

fn descend(w: float[10], steps: int, rate: float) -> float[10] {
    if steps <= 0 { return w; }
    let g = (X @ w - y) @ X;
    return descend(w - g * rate, steps - 1, rate) - g * (rate * 0.5);
}

fn main(w0: float[10], steps: int) -> float[6] {
    let w = descend(w0, steps, 0.0001);
    var m: float[3][20];
    for i in 0..3 {
        for j in 0..20 { m[i][j] = w[(i + j + steps) % 10]; }
    }
    let mb = m @ B;
    let am = A @ transpose(m);
    var v = [1.0, -1.0, 0.5];
    let sq = [[w[0], w[1], w[2]], [w[3], w[4], w[5]], [w[6], w[7], w[8]]];
    for k in 0..steps { v = sq @ v; }
    let r = X @ w - y;
    return [0.5 * dot(r, r), sum(w), sum(mb[2]), am[5][1] + am[0][2], sum(v), sum(v @ sq)];
}
)";
uint32_t word(float f) {
  uint32_t w;
  std::memcpy(&w, &f, 4);
  return w;
}

// A value in [-1, 1) from (i, j), in steps of 1/64, so that products round.
float small(uint32_t i, uint32_t j) {
  return static_cast<float>(static_cast<int>(testing::lane_hash(i, j) % 128) - 64) / 64.0f;
}

Batch product_batch(uint32_t lanes) {
  Batch batch;
  batch.lanes = lanes;
  batch.inputs.resize(2);
  for (uint32_t lane = 0; lane < lanes; ++lane) {
    for (uint32_t i = 0; i < 10; ++i)
      batch.inputs[0].push_back(word(small(lane, i + 1000)));
    batch.inputs[1].push_back(lane % 6);  // 0 to 5 levels deep
  }
  const uint32_t sizes[] = {900 * 10, 900, 20 * 70, 6 * 20};
  for (uint32_t u = 0; u < 4; ++u) {
    std::vector<uint32_t> words;
    for (uint32_t i = 0; i < sizes[u]; ++i)
      words.push_back(word(small(u, i)));
    batch.uniforms.push_back(std::move(words));
  }
  return batch;
}

void check_against_interp(const Loaded& loaded, const Batch& batch, const RunOptions& options,
                          const VulkanOptions& vulkan) {
  auto program = VulkanProgram::compile(context(), loaded.lowered, vulkan);
  REQUIRE_MESSAGE(program.ok(), program.error());
  const RunResult expected = run_interp(loaded.program, loaded.entry, batch, options);
  const RunResult result = run_to_completion(*program, batch, options, vulkan);
  const std::string difference = compare_results(loaded.lowered, expected, result);
  CHECK_MESSAGE(difference.empty(), difference);
  CHECK(result.stats.lane_steps == expected.stats.lane_steps);
  check_no_validation_messages();
}

void check_against_interp(const Loaded& loaded, const Batch& batch, const RunOptions& options,
                          const Config& c) {
  check_against_interp(loaded, batch, options, options_for(c));
}

// The global schedule's variants (GlobalSchedule::choose), which find a step's lanes each their
// own way: the product kernel serves the chosen product block's lanes from the same list.
struct GlobalVariant {
  const char* name;
  VulkanOptions options;
};
std::vector<GlobalVariant> global_variants() {
  VulkanOptions base;
  base.schedule = Schedule::Global;
  base.fuse_small_batches = false;
  std::vector<GlobalVariant> out;
  VulkanOptions o = base;
  o.global_mode = GlobalMode::Masked;
  out.push_back({"masked", o});
  o = base;
  o.global_lane_list_limit = 0;
  out.push_back({"compacted", o});
  o = base;
  o.global_lane_list_limit = 1000;
  o.global_block_kernels = false;
  out.push_back({"pick in step", o});
  o.max_part_cost = 200;  // several parts: lane lists without the pick in the step
  out.push_back({"lane lists", o});
  o = base;
  o.global_lane_list_limit = 1000;
  out.push_back({"block kernels", o});
  o = base;
  o.fuse_small_batches = true;  // fused where the batch fits a subgroup (products inline)
  out.push_back({"fused or compacted", o});
  return out;
}

TEST_CASE("products vulkan: every global variant runs products apart as interp does") {
  auto loaded = load_source(kSource);
  for (const GlobalVariant& v : global_variants()) {
    auto program = VulkanProgram::compile(context(), loaded->lowered, v.options);
    REQUIRE_MESSAGE(program.ok(), program.error());
    // The global step kernels hold each product block as its jump: no product loop.
    CHECK((*program)->impl().glsl_for(Kernel::GlobalCompacted, 0).find("precise float total") ==
          std::string::npos);
    for (uint32_t budget : {0u, 11u, 25u}) {  // 0: none; else lanes fault at products and elsewhere
      for (uint32_t lanes : {1u, 7u, 100u}) {
        const std::string variant = v.name;
        CAPTURE(variant);
        CAPTURE(budget);
        CAPTURE(lanes);
        RunOptions options;
        options.stack_depth = 16;
        if (budget) options.max_steps = budget;
        if (budget && lanes == 1) continue;
        check_against_interp(*loaded, product_batch(lanes), options, v.options);
      }
    }
  }
}

TEST_CASE("products vulkan: lanes waiting at products at different depths equal interp") {
  auto loaded = load_source(kSource);
  RunOptions options;
  options.stack_depth = 16;
  const std::vector<Config> which = {configs()[4], configs()[2], configs()[3], configs()[1],
                                     configs()[0]};
  for (const Config& c : which) {
    for (uint32_t lanes : {1u, 7u, 100u}) {
      const std::string config = c.name;
      CAPTURE(config);
      CAPTURE(lanes);
      check_against_interp(*loaded, product_batch(lanes), options, c);
    }
  }
}

TEST_CASE("products vulkan: a step budget that runs out at a product faults there as in interp") {
  auto loaded = load_source(kSource);
  const std::vector<Config> which = {configs()[1], configs()[2], configs()[4]};
  // Budgets from a few blocks to past the deepest lane's run: lanes fault at product blocks and
  // elsewhere, at different depths.
  for (uint32_t budget : {3u, 6u, 11u, 17u, 25u, 40u}) {
    RunOptions options;
    options.stack_depth = 16;
    options.max_steps = budget;
    for (const Config& c : which) {
      const std::string config = c.name;
      CAPTURE(config);
      CAPTURE(budget);
      check_against_interp(*loaded, product_batch(13), options, c);
    }
  }
}

TEST_CASE("products vulkan: the product blocks, and a product that takes several dispatches") {
  auto loaded = load_source(kSource);
  auto program = VulkanProgram::compile(context(), loaded->lowered);
  REQUIRE_MESSAGE(program.ok(), program.error());
  const auto& products = (*program)->impl().products;
  // X @ w (twice), r @ X, m @ B, A @ transpose(m), sq @ v, v @ sq.
  CHECK(products.size() == 7);
  bool uniform_left = false, uniform_right = false, lane_only = false, sliced = false;
  const uint64_t per_dispatch = (kShaderLoopLimit - 2 * kProductPairLoops) / kProductPairLoops;
  for (const ProductBlock& p : products) {
    uniform_left = uniform_left || (p.a.uniform && !p.b.uniform);
    uniform_right = uniform_right || (!p.a.uniform && p.b.uniform);
    lane_only = lane_only || (!p.a.uniform && !p.b.uniform);
    sliced = sliced || product_pairs(p) > per_dispatch;
  }
  CHECK(uniform_left);
  CHECK(uniform_right);
  CHECK(lane_only);
  CHECK(sliced);  // on a device with lavapipe's loop cap, X @ w takes two dispatches
  // Every module, the product kernel's among them, passes spirv-val: the generated kernels of
  // every schedule and the hand-written ones.
  CHECK(check_spirv(**program) == 6 + 4 + 1);
}

// logistic_regression_matmul.ab's density over N rows: what the local kernels hold must not grow
// with N, since the products are the product kernel's and z stays in the state buffer.
std::string regression(int n, int d = 10) {
  return fmt::format(R"(
const N: int = {};
const D: int = {};
uniform X: float[N][D];
uniform y: float[N];
fn log_density(q: float[D]) -> float {{
    let z = X @ q;
    return sum(y * z - log1p_exp(z)) - 0.5 * dot(q, q) / 25.0;
}}
fn main(q: float[D]) -> float[D] {{ return grad(log_density, q); }}
)",
                     n, d);
}

TEST_CASE("products vulkan: the local kernels hold no product loop and do not grow with N") {
  std::vector<size_t> sizes;
  // Both past kLongLoopWords, so the loops over z take 8 words an iteration at both sizes.
  for (int n : {2000, 20000}) {
    auto loaded = load_source(regression(n));
    auto program = VulkanProgram::compile(context(), loaded->lowered);
    REQUIRE_MESSAGE(program.ok(), program.error());
    auto& impl = (*program)->impl();
    CHECK(impl.products.size() == 2);  // z = X @ q, and the gradient's z' @ X
    const std::string& local = impl.glsl_for(Kernel::LocalLane, 0);
    const std::string& global = impl.glsl_for(Kernel::GlobalCompacted, 0);
    CHECK(local.find("precise float total") == std::string::npos);
    CHECK(global.find("precise float total") == std::string::npos);  // the jump alone there
    sizes.push_back(local.size());
    sizes.push_back(global.size());
  }
  // Only the digits of N differ (N is a loop bound in the elementwise code over z).
  CHECK(sizes[2] < sizes[0] + sizes[0] / 100);
  CHECK(sizes[3] < sizes[1] + sizes[1] / 100);
}

// The regression's batch: each lane's q (d words), X (n x d) and y as uniforms; `salt` varies
// the numbers between tests.
Batch regression_batch(uint32_t lanes, uint32_t n, uint32_t d, uint32_t salt) {
  Batch batch;
  batch.lanes = lanes;
  batch.inputs.resize(1);
  for (uint32_t lane = 0; lane < batch.lanes; ++lane)
    for (uint32_t i = 0; i < d; ++i)
      batch.inputs[0].push_back(word(small(lane, i + salt)));
  std::vector<uint32_t> x, y;
  for (uint32_t i = 0; i < n * d; ++i)
    x.push_back(word(small(salt % 8, i)));
  for (uint32_t i = 0; i < n; ++i)
    y.push_back(i % 3 == 0 ? word(1.0f) : word(0.0f));
  batch.uniforms = {x, y};
  return batch;
}

// With X of 700 x 100 words, more than a kernel may hold per lane (kMaxPrivateWords): the
// global schedule refused it while it kept the products inline; the product kernel reads X in
// place. (Not N = 7,000 x 10: a block then loops over z's 7,000 words several times, past
// lavapipe's loop cap, which the global kernels do not count: docs/engine.md.)
TEST_CASE(
    "products vulkan: a regression whose X no kernel could hold runs on the global schedule") {
  const uint32_t n = 700, d = 100;
  auto loaded = load_source(regression(static_cast<int>(n), static_cast<int>(d)));
  const Batch batch = regression_batch(9, n, d, 77);
  const auto variants = global_variants();
  for (const GlobalVariant& v : {variants[0], variants[1], variants[4]}) {
    const std::string variant = v.name;
    CAPTURE(variant);
    check_against_interp(*loaded, batch, RunOptions{}, v.options);
  }
}

// The regression at logistic_regression.ab's N = 10,000 rows: its density's block loops over
// z's 10,000 words several times, and so does the adjoint, with log1p_exp and inv_logit per word:
// lavapipe's loop cap refused it while each loop counted a word an iteration and abm_recip looped
// per call (108,196 iterations for the sampler's block). Loops over long arrays now take eight
// words an iteration (docs/engine.md, "lavapipe's loop cap"), so it runs on the local schedule and
// equals the interpreter bit for bit. (The global schedule's kernels take minutes more to compile
// at this size; "a regression whose X no kernel could hold" covers it.)
TEST_CASE("products vulkan: a regression over 10,000 rows runs under the device's loop cap") {
  const uint32_t n = 10000, d = 2;
  auto loaded = load_source(regression(static_cast<int>(n), static_cast<int>(d)));
  auto program = VulkanProgram::compile(context(), loaded->lowered);
  REQUIRE_MESSAGE(program.ok(), program.error());
  const auto& impl = (*program)->impl();
  uint64_t longest = 0;  // a block's loops, with no value moved in and out of registers
  for (int32_t b = 0; b < static_cast<int32_t>(loaded->lowered.blocks.size()); ++b)
    longest = std::max(longest, step_loop_iterations(loaded->lowered, impl.layout, b, 0));
  CHECK(longest > 4 * n / 8);  // several passes over z, eight words an iteration
  CHECK(longest < kShaderLoopLimit);
  const Batch batch = regression_batch(3, n, d, 31);
  check_against_interp(*loaded, batch, RunOptions{}, VulkanOptions{});
}

// A vectorised loop's `if` (passes/vectorize_loops.h) runs as selects on bool arrays, element by
// element, and a part of a range as slices and element writes as one Set: Vulkan gives the bits
// of the loops the interpreter runs unvectorised.
TEST_CASE("products vulkan: vectorised loops with an if and slices give the loops' bits") {
  const char* source = R"(
const N: int = 40;
uniform x: float[N];
fn main(q: float[2]) -> float {
    var lp = -0.0;
    var n = 0;
    for i in 0..N {
        let z = q[0] + q[1] * x[i];
        if z < 2.0 { lp -= log1p(exp(z)); } else if z < 4.0 { lp -= z; n += 1; } else { lp += log(z); }
    }
    var out = [0.0; N];
    for i in 1..N - 1 { out[i + 1] = x[i - 1] * q[1] + x[i]; }
    return lp + float(n) + out[N - 1] + sum(out);
}
)";
  Diagnostics diags("test.ab", source);
  FrontendOptions as_loops;
  as_loops.vectorize_loops = false;
  std::optional<Program> loop = compile_source(source, "test.ab", diags, as_loops);
  REQUIRE(loop.has_value());
  auto loaded = load_source(source);
  Batch batch;
  batch.lanes = 9;
  batch.inputs.resize(1);
  for (uint32_t lane = 0; lane < batch.lanes; ++lane) {
    batch.inputs[0].push_back(word(small(lane, 1) * 3.0f));
    batch.inputs[0].push_back(word(small(lane, 2) * 4.0f));
  }
  batch.uniforms.resize(1);
  for (uint32_t i = 0; i < 40; ++i)
    batch.uniforms[0].push_back(word(i % 7 == 0 ? -0.0f : small(9, i)));
  const RunResult expected = run_interp(*loop, loop->find_function("main"), batch, {});
  for (const Config& c : {configs()[0], configs()[4]}) {
    auto program = VulkanProgram::compile(context(), loaded->lowered, options_for(c));
    REQUIRE_MESSAGE(program.ok(), program.error());
    const RunResult result = run_to_completion(*program, batch, RunOptions{}, c);
    const std::string difference = compare_results(loaded->lowered, expected, result);
    CHECK_MESSAGE(difference.empty(), c.name, ": ", difference);
    CHECK(result.stats.lane_steps * 10 < expected.stats.lane_steps);  // not a step per row
  }
  check_no_validation_messages();
}

}  // namespace
}  // namespace ab::enginetest
