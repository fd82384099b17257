// Floats mean the same on every backend (docs/language.md, "Floats"): NaN, +-inf and -0 survive
// next to constants on Vulkan (no fast-math folding), the transcendental functions give the
// same bits on interp, vm and every Vulkan schedule, their special values follow C99 Annex F,
// and their accuracy against double-precision libm is within the documented ulps.
#include <cmath>
#include <limits>
#include <random>

#include "cpu/vm.h"
#include "ir/float_math.h"
#include "support/engine_test_support.h"

namespace ab::enginetest {
namespace {

const float kInf = std::numeric_limits<float>::infinity();
const float kNaN = std::numeric_limits<float>::quiet_NaN();

Batch float_batch(const std::vector<std::vector<float>>& columns) {
  Batch batch;
  batch.lanes = static_cast<uint32_t>(columns[0].size());
  for (const auto& column : columns) {
    batch.inputs.emplace_back();
    for (float f : column)
      batch.inputs.back().push_back(float_bits(f));
  }
  return batch;
}

// Runs `source` on interp, vm and every Vulkan configuration; every output word must equal the
// interpreter's bit for bit (NaN = NaN). Returns the interpreter's result.
RunResult check_every_backend(const std::string& source, const Batch& batch) {
  auto loaded = load_source(source);
  const RunResult expected = run_interp(loaded->program, loaded->entry, batch, {});
  auto compare = [&](const std::string& backend, const RunResult& got) {
    CAPTURE(backend);
    REQUIRE(got.outputs.size() == expected.outputs.size());
    CHECK(got.faulted == expected.faulted);
    int shown = 0;
    for (size_t i = 0; i < got.outputs.size(); ++i)
      if (!same_float(expected.outputs[i], got.outputs[i]) && shown++ < 8)
        FAIL_CHECK("word ", i, ": interp ", bits_float(expected.outputs[i]), " (",
                   expected.outputs[i], "), got ", bits_float(got.outputs[i]), " (", got.outputs[i],
                   ")");
  };
  compare("vm", run_vm(loaded->lowered, batch, {}));
  for (const Config& c : configs()) {
    auto result = run_vulkan(loaded->lowered, batch, {}, options_for(c), nullptr, context());
    REQUIRE_MESSAGE(result.ok(), result.error());
    compare(c.name, *result);
    check_no_validation_messages();
  }
  return expected;
}

float out(const RunResult& r, size_t i) {
  return bits_float(r.outputs.at(i));
}

TEST_CASE("floats: NaN, inf and -0 survive next to constant zeros on every backend") {
  const std::vector<float> xs = {-5.0f, 0.0f, 5.0f, kNaN, kInf, -kInf, -0.0f, 1e-40f};
  const RunResult r = check_every_backend(R"(
fn main(x: float) -> float[6] {
    let q = x * 0.0;
    return [x / 0.0, q, 0.0 / x, x + 0.0, 0.0 - x, x / (x * 0.0)];
}
)",
                                          float_batch({xs}));
  // IEEE 754, by hand: -5/0 = -inf, 0/0 = NaN, NaN*0 = NaN, inf*0 = NaN, -5*0 = -0, -0+0 = +0.
  CHECK(out(r, 0) == -kInf);
  CHECK(std::isnan(out(r, 6)));
  CHECK(std::signbit(out(r, 1)));  // -5 * 0 = -0
  CHECK(std::isnan(out(r, 3 * 6 + 1)));
  CHECK(std::isnan(out(r, 4 * 6 + 1)));
  CHECK(!std::signbit(out(r, 6 * 6 + 3)));  // -0 + 0 = +0
  CHECK(std::signbit(out(r, 2)));           // 0 / -5 = -0
  CHECK(!std::signbit(out(r, 6 * 6 + 4)));  // 0 - -0 = +0
}

TEST_CASE("floats: a NaN made next to a constant steers control flow the same everywhere") {
  const RunResult r = check_every_backend(R"(
fn main(x: float) -> float {
    let q = x * 0.0;
    let t = [10.0, 20.0];
    return t[int(q != q)];
}
)",
                                          float_batch({{kNaN, kInf, 5.0f}}));
  CHECK(out(r, 0) == 20.0f);
  CHECK(out(r, 1) == 20.0f);
  CHECK(out(r, 2) == 10.0f);
}

TEST_CASE("floats: transcendentals give the same bits on every backend for hard inputs") {
  const float denorm_min = std::numeric_limits<float>::denorm_min();
  const std::vector<float> hard = {
      0.0f,       -0.0f,      kInf,    -kInf, kNaN,  denorm_min, 1e-40f, -1e-40f, 1e-45f,
      1e-30f,     0.5f,       1.0f,    -1.0f, 2.0f,  -2.5f,      3.0f,   10.0f,   -10.0f,
      88.7f,      -103.0f,    -150.0f, 3e9f,  -3e9f, 1e10f,      1e30f,  3.4e38f, 1.5707964f,
      3.1415927f, 6.2831855f, 0.55f,   9.1f,  20.0f, -0.75f,     64.0f,  65.0f};
  std::vector<float> x, y;
  for (size_t i = 0; i < hard.size(); ++i)
    for (size_t j = 0; j < hard.size(); j += 3) {
      x.push_back(hard[i]);
      y.push_back(hard[(i + j) % hard.size()]);
    }
  check_every_backend(R"(
fn main(x: float, y: float) -> float[8] {
    return [sin(x), cos(x), exp(x), log(x), tanh(x), pow(x, y), pow(y, x), sqrt(abs(x))];
}
)",
                      float_batch({x, y}));
}

// a * b + c rounded twice, as every backend computes it (the C++ side builds with
// -ffp-contract=off, so this is not fused either).
float unfused(float a, float b, float c) {
  const float product = a * b;
  return product + c;
}

TEST_CASE("floats: no backend fuses a multiply and an add, in a block, a loop, a call or a stack") {
  // Inputs where one rounding (a fused multiply-add) and two give different bits: a = b = 1 +
  // 2^-12 makes a * b = 1 + 2^-11 + 2^-24, whose 2^-24 the product's rounding drops; c cancels
  // the rest, so unfused it is 0 and fused 2^-24. Then random ones where the two differ.
  std::vector<float> a = {1.000244140625f, 1.5f + 0x1p-20f}, b = {1.000244140625f, 3.0f + 0x1p-21f},
                     c = {-1.00048828125f, -4.5f};
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> unit(-4.0f, 4.0f);
  while (a.size() < 64) {
    const float x = unit(rng), y = unit(rng), z = -(x * y) + unit(rng) * 0x1p-10f;
    if (std::fma(x, y, z) == unfused(x, y, z)) continue;
    a.push_back(x);
    b.push_back(y);
    c.push_back(z);
  }
  for (size_t i = 0; i < a.size(); ++i)
    CHECK(std::fma(a[i], b[i], c[i]) != unfused(a[i], b[i], c[i]));
  const RunResult r = check_every_backend(R"(
fn times(a: float, b: float) -> float { return a * b; }
// The product crosses a recursive call: pushed, popped, then added.
fn after_calls(a: float, b: float, c: float, n: int) -> float {
    if n == 0 { return c; }
    let p = a * b;
    let rest = after_calls(a, b, c, n - 1);
    return p + rest;
}
fn main(a: float, b: float, c: float) -> float[6] {
    var acc = c;
    for i in 0..1 { acc = acc + a * b; }
    return [a * b + c, c + a * b, dot([c, a], [1.0, b]), times(a, b) + c, acc,
            after_calls(a, b, c, 1)];
}
)",
                                          float_batch({a, b, c}));
  for (size_t i = 0; i < a.size(); ++i) {
    CAPTURE(i);
    const float want = unfused(a[i], b[i], c[i]);
    for (size_t k = 0; k < 6; ++k)
      CHECK(float_bits(out(r, i * 6 + k)) == float_bits(want));
  }
  CHECK(out(r, 0) == 0.0f);  // 1 + 2^-11 - (1 + 2^-11): fused, it would be 2^-24
}

TEST_CASE("floats: dot sums blocks of 64 terms like a product, on every backend") {
  // Lane 0: 1e8 then 149 ones. One chain of adds loses every 1 (1e8's ulp is 8); blocks of 64
  // keep the second and third blocks' 64 and 22: 1e8 + 88. The other lanes: random words, where
  // any backend summing in another order would differ in some low bit.
  constexpr uint32_t kLanes = 37, kTerms = 150;
  Batch batch;
  batch.lanes = kLanes;
  batch.inputs.resize(2);
  std::mt19937 gen(11);
  std::uniform_real_distribution<float> d(-2.0f, 2.0f);
  for (uint32_t lane = 0; lane < kLanes; ++lane)
    for (uint32_t k = 0; k < kTerms; ++k) {
      batch.inputs[0].push_back(float_bits(lane == 0 ? 1.0f : d(gen)));
      batch.inputs[1].push_back(float_bits(lane == 0 ? (k == 0 ? 1e8f : 1.0f) : d(gen)));
    }
  const RunResult r = check_every_backend(
      "fn main(a: float[150], v: float[150]) -> float[2] { return [dot(a, v), dot(v, a)]; }",
      batch);
  CHECK(out(r, 0) == 100000088.0f);
  CHECK(out(r, 1) == 100000088.0f);
}

TEST_CASE("floats: special values of the transcendentals follow C99 Annex F") {
  // Expected values written from C99 F.9 (not from the implementation).
  CHECK(ab_pow(-2.5f, 0.0f) == 1.0f);
  CHECK(ab_pow(kNaN, -0.0f) == 1.0f);
  CHECK(ab_pow(1.0f, kNaN) == 1.0f);
  CHECK(std::isnan(ab_pow(kNaN, kNaN)));
  CHECK(ab_pow(-0.0f, -0.0f) == 1.0f);
  CHECK(ab_pow(0.0f, -1.0f) == kInf);
  CHECK(ab_pow(-0.0f, -1.0f) == -kInf);
  CHECK(ab_pow(-0.0f, -2.0f) == kInf);
  CHECK(ab_pow(-0.0f, -0.5f) == kInf);
  CHECK(std::signbit(ab_pow(-0.0f, 3.0f)));
  CHECK(!std::signbit(ab_pow(-0.0f, 2.0f)));
  CHECK(ab_pow(-1.0f, kInf) == 1.0f);
  CHECK(ab_pow(0.5f, -kInf) == kInf);
  CHECK(ab_pow(2.0f, -kInf) == 0.0f);
  CHECK(ab_pow(0.5f, kInf) == 0.0f);
  CHECK(ab_pow(2.0f, kInf) == kInf);
  CHECK(ab_pow(-kInf, -3.0f) == 0.0f);
  CHECK(std::signbit(ab_pow(-kInf, -3.0f)));
  CHECK(ab_pow(-kInf, 3.0f) == -kInf);
  CHECK(ab_pow(-kInf, 2.0f) == kInf);
  CHECK(ab_pow(kInf, -1.0f) == 0.0f);
  CHECK(std::isnan(ab_pow(-8.0f, 1.0f / 3.0f)));
  // Integral exponents are exact when every partial product is.
  CHECK(ab_pow(2.0f, 10.0f) == 1024.0f);
  CHECK(ab_pow(-3.0f, 5.0f) == -243.0f);
  CHECK(ab_pow(2.0f, -3.0f) == 0.125f);
  CHECK(ab_pow(10.0f, 2.0f) == 100.0f);
  CHECK(ab_log(0.0f) == -kInf);
  CHECK(ab_log(-0.0f) == -kInf);
  CHECK(std::isnan(ab_log(-1.0f)));
  CHECK(ab_log(kInf) == kInf);
  CHECK(ab_log(1.0f) == 0.0f);
  CHECK(ab_exp(-kInf) == 0.0f);
  CHECK(ab_exp(kInf) == kInf);
  CHECK(ab_exp(0.0f) == 1.0f);
  CHECK(ab_exp(100.0f) == kInf);
  CHECK(std::isnan(ab_sin(kInf)));
  CHECK(std::isnan(ab_cos(-kInf)));
  CHECK(std::signbit(ab_sin(-0.0f)));
  CHECK(std::signbit(ab_tanh(-0.0f)));
  CHECK(ab_tanh(kInf) == 1.0f);
  CHECK(ab_tanh(-kInf) == -1.0f);
  for (float f : {ab_sin(kNaN), ab_cos(kNaN), ab_exp(kNaN), ab_log(kNaN), ab_tanh(kNaN)})
    CHECK(std::isnan(f));
}

// Error in units in the last place of the float nearest `want`.
double ulps(float got, double want) {
  const float nearest = static_cast<float>(want);
  if (std::isnan(want)) return std::isnan(got) ? 0.0 : 1e30;
  if (std::isinf(nearest)) return got == nearest ? 0.0 : 1e30;
  const int exponent = std::max(std::ilogb(nearest == 0.0f ? 1e-38f : nearest), -126);
  return std::fabs(static_cast<double>(got) - want) / std::ldexp(1.0, exponent - 23);
}

TEST_CASE("floats: transcendentals are within their documented ulps of the true value") {
  struct Case {
    const char* name;
    float (*f)(float);
    double (*reference)(double);
    double max_ulps;  // docs/language.md
  };
  const Case cases[] = {
      {"exp", ab_exp, [](double v) { return std::exp(v); }, 1.0},
      {"log", ab_log, [](double v) { return std::log(v); }, 1.0},
      {"sin", ab_sin, [](double v) { return std::sin(v); }, 2.5},
      {"cos", ab_cos, [](double v) { return std::cos(v); }, 2.5},
      {"tanh", ab_tanh, [](double v) { return std::tanh(v); }, 2.0},
  };
  std::mt19937 rng(7);
  for (const Case& c : cases) {
    CAPTURE(c.name);
    double worst = 0.0;
    float worst_x = 0.0f;
    for (int i = 0; i < 200000; ++i) {
      // Half uniform bit patterns (every exponent, denormals, huge arguments), half [-100, 100].
      float v = i % 2 ? bits_float(rng()) : std::uniform_real_distribution<float>(-100, 100)(rng);
      if (std::isnan(v)) continue;
      const double e = ulps(c.f(v), c.reference(v));
      if (e > worst) worst = e, worst_x = v;
    }
    CAPTURE(worst_x);
    CHECK(worst <= c.max_ulps);
  }
  double worst = 0.0;
  for (int i = 0; i < 200000; ++i) {
    const float x = std::uniform_real_distribution<float>(0.0f, 10.0f)(rng);
    float y = std::uniform_real_distribution<float>(-20.0f, 20.0f)(rng);
    if (i % 3 == 0) y = std::floor(y);
    const double want = std::pow(static_cast<double>(x), static_cast<double>(y));
    // docs/language.md: within 4 + 2 |y ln x| ulps, plus |y| for an integral |y| <= 64 (repeated
    // squaring rounds once per multiply).
    const bool integral = std::floor(y) == y && std::fabs(y) <= 64.0f;
    const double allowed = 4.0 + 2.0 * std::fabs(y * std::log(static_cast<double>(x))) +
                           (integral ? std::fabs(y) : 0.0);
    worst = std::max(worst, ulps(ab_pow(x, y), want) / allowed);
  }
  CHECK(worst <= 1.0);
}

TEST_CASE("floats: lavapipe preserves signed zero, inf and NaN, and the kernels ask for it") {
  auto ctx = context();
  REQUIRE(ctx);
  CHECK(ctx->device().float_specials_preserved);
  auto loaded = load_source("fn main(x: float) -> float { return x / 0.0; }");
  auto program = VulkanProgram::compile(ctx, loaded->lowered, {});
  REQUIRE(program.ok());
  CHECK((*program)->glsl().find("spirv_execution_mode(capabilities = [4466], 4461, 32)") !=
        std::string::npos);
}

}  // namespace
}  // namespace ab::enginetest
