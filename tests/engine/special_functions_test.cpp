// The special functions (docs/language.md, "Special functions"): the same bits on interp, vm and
// every Vulkan schedule for hard inputs, their special values, and their accuracy against
// float64 references (libm where it has the function; for digamma and trigamma a float64
// recurrence and asymptotic series written here) within the documented ulps over stated ranges.
#include <cmath>
#include <limits>
#include <random>

#include "cpu/vm.h"
#include "ir/float_math.h"
#include "support/engine_test_support.h"
#include "support/spirv_check.h"

namespace ab::enginetest {
namespace {

const float kInf = std::numeric_limits<float>::infinity();
const float kNaN = std::numeric_limits<float>::quiet_NaN();

// polygamma of order 0 (digamma) or 1 (trigamma) in double precision: the recurrence up to 30,
// then the asymptotic series (terms below 1e-17 there).
double polygamma(int order, double x) {
  double acc = 0.0;
  while (x < 30.0) {
    acc += order == 0 ? -1.0 / x : 1.0 / (x * x);
    x += 1.0;
  }
  const double r = 1.0 / x, z = r * r;
  if (order == 0)
    return acc + std::log(x) - 0.5 * r -
           z * (1.0 / 12 - z * (1.0 / 120 - z * (1.0 / 252 - z * (1.0 / 240 - z / 132))));
  return acc + r +
         z * (0.5 +
              r * (1.0 / 6 - z * (1.0 / 30 - z * (1.0 / 42 - z * (1.0 / 30 - z * 5.0 / 66)))));
}

// Error of `got` in units of the float ulp at the true value `want` (denormal ulp below 2^-126).
double ulps(float got, double want) {
  if (std::isnan(want)) return std::isnan(got) ? 0.0 : 1e30;
  const float nearest = static_cast<float>(want);
  if (std::isinf(nearest)) return got == nearest ? 0.0 : 1e30;
  const int exponent = std::max(std::ilogb(nearest == 0.0f ? 1e-38f : nearest), -126);
  return std::fabs(static_cast<double>(got) - want) / std::ldexp(1.0, exponent - 23);
}

Batch float_batch(const std::vector<float>& x, const std::vector<float>& y) {
  Batch batch;
  batch.lanes = static_cast<uint32_t>(x.size());
  batch.inputs.resize(2);
  for (size_t i = 0; i < x.size(); ++i) {
    batch.inputs[0].push_back(float_bits(x[i]));
    batch.inputs[1].push_back(float_bits(y[i]));
  }
  return batch;
}

TEST_CASE("special functions: the same bits on every backend for hard inputs") {
  const float denorm_min = std::numeric_limits<float>::denorm_min();
  const std::vector<float> hard = {
      0.0f,   -0.0f, kInf,   -kInf, kNaN,  denorm_min, 1e-40f,     -1e-30f, 1e-7f,
      0.5f,   -0.5f, 1.0f,   -1.0f, 2.0f,  -2.5f,      1.4616321f, 3.0f,    7.99f,
      8.0f,   10.0f, -10.3f, 16.0f, 17.0f, 20.0f,      -17.6f,     88.7f,   -103.0f,
      10.09f, 10.2f, 9.3f,   0.75f, 1.25f, 1e30f,      -1e30f,     3.4e38f, -4.5f};
  std::vector<float> x, y;
  for (size_t i = 0; i < hard.size(); ++i)
    for (size_t j = 0; j < hard.size(); j += 5) {
      x.push_back(hard[i]);
      y.push_back(hard[(i + j) % hard.size()]);
    }
  auto loaded = load_source(R"(
fn main(x: float, y: float) -> float[11] {
    return [lgamma(x), digamma(x), trigamma(x), log1p(x), expm1(x), log1p_exp(x),
            log_sum_exp(x, y), erf(x), erfc(x), inv_logit(x), log1m(x)];
}
)");
  const Batch batch = float_batch(x, y);
  const RunResult expected = run_interp(loaded->program, loaded->entry, batch, {});
  // The interpreter computes what the C++ functions compute.
  for (size_t lane = 0; lane < x.size(); ++lane) {
    const float want[11] = {ab_lgamma(x[lane]),
                            ab_digamma(x[lane]),
                            ab_trigamma(x[lane]),
                            ab_log1p(x[lane]),
                            ab_expm1(x[lane]),
                            ab_log1p_exp(x[lane]),
                            ab_log_sum_exp(x[lane], y[lane]),
                            ab_erf(x[lane]),
                            ab_erfc(x[lane]),
                            ab_inv_logit(x[lane]),
                            ab_log1m(x[lane])};
    for (int k = 0; k < 11; ++k)
      CHECK(same_float(expected.outputs[lane * 11 + k], float_bits(want[k])));
  }
  auto compare = [&](const std::string& backend, const RunResult& got) {
    CAPTURE(backend);
    REQUIRE(got.outputs.size() == expected.outputs.size());
    int shown = 0;
    for (size_t i = 0; i < got.outputs.size(); ++i)
      if (!same_float(expected.outputs[i], got.outputs[i]) && shown++ < 8)
        FAIL_CHECK("lane ", i / 11, " function ", i % 11, ": interp ",
                   bits_float(expected.outputs[i]), ", got ", bits_float(got.outputs[i]));
  };
  compare("vm", run_vm(loaded->lowered, batch, {}));
  auto program = VulkanProgram::compile(context(), loaded->lowered);
  REQUIRE_MESSAGE(program.ok(), program.error());
  check_spirv(**program);
  for (const Config& c : configs()) {
    auto result = run_vulkan(loaded->lowered, batch, {}, options_for(c), nullptr, context());
    REQUIRE_MESSAGE(result.ok(), result.error());
    compare(c.name, *result);
    check_no_validation_messages();
  }
}

TEST_CASE("special functions: special values") {
  CHECK(ab_log1p(-1.0f) == -kInf);
  CHECK(std::isnan(ab_log1p(-2.0f)));
  CHECK(ab_log1p(kInf) == kInf);
  CHECK(std::signbit(ab_log1p(-0.0f)));
  CHECK(ab_log1m(1.0f) == -kInf);
  CHECK(std::isnan(ab_log1m(2.0f)));
  CHECK(std::isnan(ab_log1m(kInf)));
  CHECK(ab_log1m(-kInf) == kInf);
  CHECK((ab_log1m(0.0f) == 0.0f && !std::signbit(ab_log1m(0.0f))));
  CHECK((ab_log1m(-0.0f) == 0.0f && !std::signbit(ab_log1m(-0.0f))));
  CHECK(ab_expm1(-kInf) == -1.0f);
  CHECK(ab_expm1(kInf) == kInf);
  CHECK(std::signbit(ab_expm1(-0.0f)));
  CHECK(ab_log1p_exp(kInf) == kInf);
  CHECK(ab_log1p_exp(-kInf) == 0.0f);
  CHECK(ab_log1p_exp(100.0f) == 100.0f);
  CHECK(ab_log_sum_exp(-kInf, -kInf) == -kInf);
  CHECK(ab_log_sum_exp(-kInf, 2.0f) == 2.0f);
  CHECK(ab_log_sum_exp(kInf, 2.0f) == kInf);
  CHECK(std::isnan(ab_log_sum_exp(kNaN, 2.0f)));
  CHECK(ab_erf(kInf) == 1.0f);
  CHECK(ab_erf(-kInf) == -1.0f);
  CHECK(std::signbit(ab_erf(-0.0f)));
  CHECK(ab_erfc(kInf) == 0.0f);
  CHECK(ab_erfc(-kInf) == 2.0f);
  CHECK(ab_inv_logit(kInf) == 1.0f);
  CHECK(ab_inv_logit(-kInf) == 0.0f);
  CHECK(ab_inv_logit(0.0f) == 0.5f);
  CHECK(ab_lgamma(1.0f) == 0.0f);
  CHECK(ab_lgamma(2.0f) == 0.0f);
  CHECK(ab_lgamma(0.0f) == kInf);
  CHECK(ab_lgamma(-3.0f) == kInf);
  CHECK(ab_lgamma(kInf) == kInf);
  CHECK(ab_lgamma(-kInf) == kInf);
  CHECK(std::isnan(ab_digamma(0.0f)));
  CHECK(std::isnan(ab_digamma(-2.0f)));
  CHECK(ab_digamma(kInf) == kInf);
  CHECK(ab_trigamma(-1.0f) == kInf);
  CHECK(ab_trigamma(kInf) == 0.0f);
  for (float f :
       {ab_lgamma(kNaN), ab_digamma(kNaN), ab_trigamma(kNaN), ab_log1p(kNaN), ab_log1m(kNaN),
        ab_expm1(kNaN), ab_log1p_exp(kNaN), ab_erf(kNaN), ab_erfc(kNaN), ab_inv_logit(kNaN)})
    CHECK(std::isnan(f));
}

TEST_CASE("special functions: within their documented ulps of float64 over the stated ranges") {
  struct Case {
    const char* name;
    float (*f)(float);
    double (*reference)(double);
    double lo, hi;    // the range (docs/language.md)
    bool log_scale;   // sample |x| log-uniformly in [lo, hi] (both signs when signed)
    double max_ulps;  // docs/language.md
  };
  const Case cases[] = {
      {"log1p", ab_log1p, [](double v) { return std::log1p(v); }, -0.999, 100.0, false, 1.5},
      {"log1p", ab_log1p, [](double v) { return std::log1p(v); }, 1e-30, 1e30, true, 1.5},
      {"log1m", ab_log1m, [](double v) { return std::log1p(-v); }, -100.0, 0.999, false, 1.5},
      {"log1m", ab_log1m, [](double v) { return std::log1p(-v); }, 1e-30, 1.0, true, 1.5},
      {"expm1", ab_expm1, [](double v) { return std::expm1(v); }, -20.0, 88.0, false, 1.5},
      {"expm1", ab_expm1, [](double v) { return std::expm1(v); }, 1e-30, 1.0, true, 1.5},
      {"log1p_exp", ab_log1p_exp,
       [](double v) { return v > 0 ? v + std::log1p(std::exp(-v)) : std::log1p(std::exp(v)); },
       -80.0, 80.0, false, 2.0},
      {"inv_logit", ab_inv_logit, [](double v) { return 1.0 / (1.0 + std::exp(-v)); }, -80.0, 80.0,
       false, 2.5},
      {"erf", ab_erf, [](double v) { return std::erf(v); }, -6.0, 6.0, false, 2.5},
      {"erf", ab_erf, [](double v) { return std::erf(v); }, 1e-30, 6.0, true, 2.5},
      {"erfc", ab_erfc, [](double v) { return std::erfc(v); }, -6.0, 9.1, false, 5.0},
      {"lgamma", ab_lgamma, [](double v) { return std::lgamma(v); }, 1e-30, 1e30, true, 4.0},
      {"lgamma", ab_lgamma, [](double v) { return std::lgamma(v); }, 0.0, 20.0, false, 4.0},
      {"digamma", ab_digamma, [](double v) { return polygamma(0, v); }, 1e-30, 1e30, true, 8.5},
      {"digamma", ab_digamma, [](double v) { return polygamma(0, v); }, 0.0, 20.0, false, 8.5},
      {"trigamma", ab_trigamma, [](double v) { return polygamma(1, v); }, 1e-15, 1e15, true, 5.0},
      {"trigamma", ab_trigamma, [](double v) { return polygamma(1, v); }, 0.0, 20.0, false, 5.0},
  };
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  for (const Case& c : cases) {
    CAPTURE(std::string(c.name));
    CAPTURE(c.lo);
    double worst = 0.0;
    float worst_x = 0.0f;
    for (int i = 0; i < 100000; ++i) {
      const double u = unit(rng);
      const auto v = static_cast<float>(c.log_scale ? c.lo * std::pow(c.hi / c.lo, u)
                                                    : c.lo + (c.hi - c.lo) * u);
      if (v <= 0.0f && c.log_scale) continue;
      const double e = ulps(c.f(v), c.reference(v));
      if (e > worst) worst = e, worst_x = v;
    }
    CAPTURE(worst_x);
    MESSAGE(std::string(c.name), " over [", c.lo, ", ", c.hi, "]: max ", worst, " ulp");
    CHECK(worst <= c.max_ulps);
  }
  // log_sum_exp(a, b) = max(a, b) + log1p(e^-|a-b|): within 1.5 ulp of max(|a|, |b|, result),
  // about the rounding of the final add (relative error is unbounded where the result crosses 0).
  double worst = 0.0;
  for (int i = 0; i < 100000; ++i) {
    const auto a = static_cast<float>(-60.0 + 120.0 * unit(rng));
    const auto b = static_cast<float>(a + (-30.0 + 60.0 * unit(rng)));
    const double m = std::max<double>(a, b);
    const double want = m + std::log(std::exp(a - m) + std::exp(b - m));
    const double scale = std::max({std::fabs(double{a}), std::fabs(double{b}), std::fabs(want)});
    const double err = std::fabs(ab_log_sum_exp(a, b) - want) /
                       std::ldexp(1.0, std::ilogb(static_cast<float>(scale)) - 23);
    worst = std::max(worst, err);
  }
  MESSAGE("log_sum_exp: max ", worst, " ulp of max(|a|, |b|, result)");
  CHECK(worst <= 1.5);
}

// log1m(x) = ln(1 - x) in a program, on the interpreter (the oracle): within 1.5 ulp of float64
// over a grid from -100 to 1 that includes tiny x of both signs and x within a few ulps of 1,
// -inf at 1 and NaN above it, as log gives for 1 - x <= 0.
TEST_CASE("log1m: the interpreter within 1.5 ulp of float64 over a grid, NaN above 1") {
  std::vector<float> x;
  for (int i = 0; i <= 2000; ++i)
    x.push_back(-100.0f + 0.05f * static_cast<float>(i));  // -100 .. 0 (rounded steps)
  for (float t = 1e-30f; t < 1.0f; t *= 1.7f)
    x.insert(x.end(), {t, -t, 1.0f - t});  // tiny x, and x near 1 down to its last ulps
  float near_one = 1.0f;
  for (int k = 0; k < 64; ++k)
    x.push_back(near_one = std::nextafter(near_one, 0.0f));
  const std::vector<float> above_one = {1.0f, std::nextafter(1.0f, 2.0f), 1.5f, 2.0f, 1e30f, kInf};
  x.insert(x.end(), above_one.begin(), above_one.end());
  auto loaded = load_source("fn main(x: float, y: float) -> float { return log1m(x); }\n");
  const RunResult got = run_interp(loaded->program, loaded->entry, float_batch(x, x), {});
  REQUIRE(got.outputs.size() == x.size());
  double worst = 0.0;
  float worst_x = 0.0f;
  for (size_t i = 0; i < x.size(); ++i) {
    const float value = bits_float(got.outputs[i]);
    if (x[i] >= 1.0f) {
      CAPTURE(x[i]);
      CHECK((x[i] == 1.0f ? value == -kInf : std::isnan(value)));
      continue;
    }
    const double e = ulps(value, std::log1p(-static_cast<double>(x[i])));
    if (e > worst) worst = e, worst_x = x[i];
  }
  CAPTURE(worst_x);
  MESSAGE("log1m over the grid: max ", worst, " ulp");
  CHECK(worst <= 1.5);
}

// Negative arguments go through the reflection formulas: no relative accuracy is promised near
// the zeros of lgamma and digamma below 0, but the absolute error is small.
TEST_CASE("special functions: reflection below zero is close in absolute terms") {
  std::mt19937 rng(3);
  std::uniform_real_distribution<double> unit(-20.0, 0.0);
  double worst_lgamma = 0.0, worst_digamma = 0.0;
  for (int i = 0; i < 20000; ++i) {
    const auto x = static_cast<float>(unit(rng));
    if (std::floor(x) == x) continue;
    const double d = std::fabs(x - std::round(x));
    if (d < 1e-3) continue;  // next to a pole the value itself is huge
    worst_lgamma = std::max(worst_lgamma, std::fabs(ab_lgamma(x) - std::lgamma(double{x})) /
                                              std::max(1.0, std::fabs(std::lgamma(double{x}))));
    const double psi = polygamma(0, 1.0 - x) - M_PI / std::tan(M_PI * x);
    worst_digamma =
        std::max(worst_digamma, std::fabs(ab_digamma(x) - psi) / std::max(1.0, std::fabs(psi)));
  }
  MESSAGE("lgamma below 0: ", worst_lgamma, "; digamma below 0: ", worst_digamma);
  CHECK(worst_lgamma < 1e-5);
  CHECK(worst_digamma < 1e-4);
}

}  // namespace
}  // namespace ab::enginetest
