// Stan's distributions (lang/distributions.h, docs/language.md "Distributions"): Stan's `|`
// form; log densities against float64 formulas written here; a vectorised call equal, bit for
// bit, to the sum of its scalar calls; per-lane faults naming the function and the argument;
// compile errors; and the random draws' bits (interpreter = vm) and moments. Accuracy over grids
// against scipy.stats is python/tests/test_distributions.py's; gradients are autodiff_cases.h's.
#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <vector>

#include "support/cpu_runs.h"

namespace ab::testing {
namespace {

double lchoose(double n, double k) {
  return std::lgamma(n + 1) - std::lgamma(k + 1) - std::lgamma(n - k + 1);
}

TEST_CASE("distributions: Stan's '|' form equals the comma form") {
  const RunResult r = run_both(R"(
fn main(y: float) -> float[2] {
    return [normal_lpdf(y | 1.0, 2.0), normal_lpdf(y, 1.0, 2.0)];
}
)",
                               float_batch({{-3.0f, 0.5f, 7.0f}}));
  const std::vector<float> out = float_outputs(r);
  for (size_t lane = 0; lane < 3; ++lane)
    CHECK(float_bits(out[2 * lane]) == float_bits(out[2 * lane + 1]));
  // A user's own density takes the same form.
  CHECK(compile_errors("fn shifted_lpdf(y: float, mu: float) -> float { return mu - y; }\n"
                       "fn main(y: float) -> float { return shifted_lpdf(y | 1.0); }\n")
            .empty());
  // A bitwise or in the outcome needs parentheses: `|` ends the first argument.
  CHECK(
      compile_errors("fn main(n: int) -> float { return poisson_lpmf((n | 1) | 2.0); }\n").empty());
}

TEST_CASE("distributions: log densities match float64 formulas") {
  // Each entry: the call, then its value by the textbook formula in double.
  struct Case {
    const char* call;
    double want;
  };
  const double y = 0.7, mu = -0.3, sigma = 1.7;
  const double z = (y - mu) / sigma;
  const double ln2pi = std::log(2 * M_PI);
  const std::vector<Case> cases = {
      {"normal_lpdf(0.7 | -0.3, 1.7)", -0.5 * z * z - std::log(sigma) - 0.5 * ln2pi},
      {"std_normal_lpdf(0.7)", -0.5 * y * y - 0.5 * ln2pi},
      {"student_t_lpdf(0.7 | 4.5, -0.3, 1.7)", std::lgamma(2.75) - std::lgamma(2.25) -
                                                   0.5 * std::log(4.5 * M_PI) - std::log(sigma) -
                                                   2.75 * std::log(1 + z * z / 4.5)},
      {"cauchy_lpdf(0.7 | -0.3, 1.7)", -std::log(M_PI * sigma * (1 + z * z))},
      {"double_exponential_lpdf(0.7 | -0.3, 1.7)", -std::log(2 * sigma) - std::fabs(z)},
      {"logistic_lpdf(0.7 | -0.3, 1.7)", -z - std::log(sigma) - 2 * std::log1p(std::exp(-z))},
      {"lognormal_lpdf(0.7 | -0.3, 1.7)",
       -0.5 * std::pow((std::log(y) - mu) / sigma, 2) - std::log(y * sigma) - 0.5 * ln2pi},
      {"exponential_lpdf(0.7 | 1.7)", std::log(1.7) - 1.7 * y},
      {"gamma_lpdf(0.7 | 2.5, 1.7)",
       2.5 * std::log(1.7) - std::lgamma(2.5) + 1.5 * std::log(y) - 1.7 * y},
      {"inv_gamma_lpdf(0.7 | 2.5, 1.7)",
       2.5 * std::log(1.7) - std::lgamma(2.5) - 3.5 * std::log(y) - 1.7 / y},
      {"weibull_lpdf(0.7 | 2.5, 1.7)",
       std::log(2.5 / 1.7) + 1.5 * std::log(y / 1.7) - std::pow(y / 1.7, 2.5)},
      {"beta_lpdf(0.7 | 2.5, 1.7)", std::lgamma(4.2) - std::lgamma(2.5) - std::lgamma(1.7) +
                                        1.5 * std::log(0.7) + 0.7 * std::log(0.3)},
      {"uniform_lpdf(0.7 | -0.3, 1.7)", -std::log(2.0)},
      {"chi_square_lpdf(0.7 | 2.5)",
       0.25 * std::log(y) - y / 2 - std::lgamma(1.25) - 1.25 * std::log(2.0)},
      {"bernoulli_lpmf(1 | 0.3)", std::log(0.3)},
      {"bernoulli_lpmf(0 | 0.3)", std::log(0.7)},
      {"bernoulli_logit_lpmf(0 | 1.2)", -std::log1p(std::exp(1.2))},
      {"binomial_lpmf(3 | 10, 0.3)", lchoose(10, 3) + 3 * std::log(0.3) + 7 * std::log(0.7)},
      {"binomial_lpmf(0 | 10, 0.0)", 0.0},
      {"binomial_logit_lpmf(3 | 10, -0.8)", lchoose(10, 3) + 3 * std::log(1 / (1 + std::exp(0.8))) +
                                                7 * std::log(1 / (1 + std::exp(-0.8)))},
      {"poisson_lpmf(4 | 2.5)", 4 * std::log(2.5) - 2.5 - std::lgamma(5)},
      {"poisson_log_lpmf(4 | 0.9)", 4 * 0.9 - std::exp(0.9) - std::lgamma(5)},
      {"neg_binomial_2_lpmf(4 | 2.5, 3.5)",
       lchoose(4 + 3.5 - 1, 4) + 4 * std::log(2.5 / 6.0) + 3.5 * std::log(3.5 / 6.0)},
      {"neg_binomial_2_log_lpmf(4 | 0.9, 3.5)",
       lchoose(4 + 3.5 - 1, 4) + 4 * std::log(std::exp(0.9) / (std::exp(0.9) + 3.5)) +
           3.5 * std::log(3.5 / (std::exp(0.9) + 3.5))},
      {"categorical_logit_lpmf(2 | [0.5, -1.0, 2.0])",
       -1.0 - std::log(std::exp(0.5) + std::exp(-1.0) + std::exp(2.0))},
  };
  std::string source = "fn main(x: float) -> float[" + std::to_string(cases.size()) + "] {\n";
  source += "    return [";
  for (size_t i = 0; i < cases.size(); ++i)
    source += std::string(i ? ",\n        " : "") + cases[i].call;
  source += "];\n}\n";
  const std::vector<float> out = float_outputs(run_both(source, float_batch({{0.0f}})));
  REQUIRE(out.size() == cases.size());
  for (size_t i = 0; i < cases.size(); ++i) {
    INFO(std::string(cases[i].call));
    CHECK(out[i] == doctest::Approx(cases[i].want).epsilon(2e-6).scale(1.0));
  }
}

TEST_CASE("distributions: a vectorised call is the sum of its scalar calls, bit for bit") {
  const RunResult r = run_both(R"(
fn main(mu: float) -> float[4] {
    let ys = [0.5, -1.25, 3.0, 0.0, 2.5];
    let sigmas = [0.5, 1.0, 2.0, 4.0, 8.0];
    let ns = [0, 3, 1, 7, 2];
    var one = 0.0;
    var two = 0.0;
    var three = 0.0;
    for i in 0..5 {
        one += normal_lpdf(ys[i] | mu, 1.5);
        two += normal_lpdf(ys[i] | mu, sigmas[i]);
        three += poisson_lpmf(ns[i] | sigmas[i]);
    }
    return [normal_lpdf(ys | mu, 1.5) - one, normal_lpdf(ys | mu, sigmas) - two,
            poisson_lpmf(ns | sigmas) - three, normal_lpdf(2.0 | ys, sigmas)];
}
)",
                               float_batch({{0.25f, -2.0f}}));
  const std::vector<float> out = float_outputs(r);
  for (size_t lane = 0; lane < 2; ++lane) {
    CHECK(out[4 * lane + 0] == 0.0f);
    CHECK(out[4 * lane + 1] == 0.0f);
    CHECK(out[4 * lane + 2] == 0.0f);
    CHECK(std::isfinite(out[4 * lane + 3]));
  }
}

// Stan's dirichlet_lpdf: lgamma(sum(alpha)) - sum(lgamma(alpha)) + sum((alpha - 1) log theta)
// per row; rows of theta with one alpha, or rows of both; a 0 element with alpha 1 adds 0.
TEST_CASE("distributions: dirichlet_lpdf matches float64, row by row") {
  auto dirichlet = [](const std::vector<double>& theta, const std::vector<double>& alpha) {
    double lp = 0, total = 0;
    for (size_t i = 0; i < theta.size(); ++i) {
      total += alpha[i];
      lp += (alpha[i] == 1 ? 0.0 : (alpha[i] - 1) * std::log(theta[i])) - std::lgamma(alpha[i]);
    }
    return lp + std::lgamma(total);
  };
  const RunResult r = run_both(R"(
fn main(a: float) -> float[5] {
    let t = [0.25, 0.125, 0.625];
    let u = [0.5, 0.0, 0.5];
    return [dirichlet_lpdf(t | [a, 2.0, 30.0]), dirichlet_lpdf([t, u] | [a, 1.0, 30.0]),
            dirichlet_lpdf([t, u] | [[a, 2.0, 30.0], [0.5, 1.0, 3.0]]),
            dirichlet_lpdf(t | [[a, 2.0, 30.0], [0.5, 1.0, 3.0]]), dirichlet_lpdf([1.0] | [a])];
}
)",
                               float_batch({{1.5f, 0.2f, 45.0f}}));
  REQUIRE_MESSAGE(r.errors.empty(), describe_error(r.errors.at(0)));
  const std::vector<float> out = float_outputs(r);
  const std::vector<double> t = {0.25, 0.125, 0.625}, u = {0.5, 0.0, 0.5};
  for (const double a : {1.5, 0.2, 45.0}) {
    CAPTURE(a);
    const double af = static_cast<float>(a);
    const std::vector<double> want = {dirichlet(t, {af, 2, 30}),
                                      dirichlet(t, {af, 1, 30}) + dirichlet(u, {af, 1, 30}),
                                      dirichlet(t, {af, 2, 30}) + dirichlet(u, {0.5, 1, 3}),
                                      dirichlet(t, {af, 2, 30}) + dirichlet(t, {0.5, 1, 3}), 0.0};
    const size_t lane = a == 1.5 ? 0 : a == 0.2 ? 1 : 2;
    for (size_t i = 0; i < want.size(); ++i) {
      CAPTURE(i);
      CHECK(out[5 * lane + i] == doctest::Approx(want[i]).epsilon(4e-6).scale(1.0));
    }
  }
}

TEST_CASE(
    "distributions: an argument outside its domain faults the lane, naming both, or with "
    "rejection is NaN") {
  struct Case {
    const char* call;  // with x = 1 in range, x = -1 out of range
    const char* detail;
  };
  const std::vector<Case> cases = {
      {"normal_lpdf(0.5 | 0.0, x)", "normal_lpdf: sigma must be > 0"},
      {"student_t_lpdf(0.5 | x, 0.0, 1.0)", "student_t_lpdf: nu must be finite and > 0"},
      {"exponential_lpdf(x | 1.0)", "exponential_lpdf: y must be >= 0"},
      {"gamma_lpdf(1.0 | x, 1.0)", "gamma_lpdf: alpha must be finite and > 0"},
      {"beta_lpdf(0.5 * x | 1.0, 1.0)", "beta_lpdf: theta must be in (0, 1)"},
      {"uniform_lpdf(0.5 | 0.0, x)", "uniform_lpdf: beta must be > alpha"},
      {"bernoulli_lpmf(int(x) | 0.5)", "bernoulli_lpmf: n must be 0 or 1"},
      {"binomial_lpmf(2 | 5, 0.75 * x)", "binomial_lpmf: theta must be in [0, 1]"},
      {"binomial_lpmf(3 - int(x) | 3, 0.5)", "binomial_lpmf: n must be <= N"},
      {"poisson_lpmf(int(x) | 2.0)", "poisson_lpmf: n must be >= 0"},
      {"categorical_logit_lpmf(int(x) | [1.0, 2.0])",
       "categorical_logit_lpmf: n must be in 1..K (K the length of beta)"},
      {"normal_lpdf([0.5, 1.0] | 0.0, [1.0, x])", "normal_lpdf: sigma must be > 0"},
      {"dirichlet_lpdf([0.5, 0.5] | [1.0, x])", "dirichlet_lpdf: alpha must be finite and > 0"},
      {"dirichlet_lpdf([[0.5, 0.5], [1.0 - x, x]] | [1.0, 2.0])",
       "dirichlet_lpdf: theta must be in [0, 1]"},
      {"dirichlet_lpdf([0.5, 0.25 + 0.25 * x] | [1.0, 2.0])",
       "dirichlet_lpdf: theta must be a simplex (each row summing to 1 within 2 * 2^-20)"},
      {"normal_rng(0.0, x)", "normal_rng: sigma must be finite and > 0"},
      {"poisson_rng(x)", "poisson_rng: lambda must be finite and > 0"},
  };
  for (const Case& c : cases) {
    INFO(std::string(c.call));
    const std::string source =
        std::string("fn main(x: float) -> float {\n    return float(") + c.call + ");\n}\n";
    const RunResult r = run_both(source, float_batch({{1.0f, -1.0f}}));
    REQUIRE(r.errors.size() == 1);
    CHECK(r.faulted[0] == 0);
    CHECK(r.errors[0].lane == 1);
    CHECK(r.errors[0].code == Fault::AssertFailed);
    CHECK(r.errors[0].function == "main");
    CHECK(r.errors[0].line == 2);
    CHECK(r.errors[0].detail == c.detail);
    // With Stan's rejection (the sampler's compile) a density out of its domain is NaN and the
    // lane runs on, its value in the domain unchanged; a random draw still faults.
    FrontendOptions rejecting;
    rejecting.reject_domain_errors = true;
    const RunResult rejected = run_both(source, float_batch({{1.0f, -1.0f}}), 0, rejecting);
    const bool draw = std::string(c.call).find("_rng") != std::string::npos;
    CHECK(rejected.errors.size() == (draw ? 1u : 0u));
    if (draw) continue;
    CHECK(rejected.outputs[0] == r.outputs[0]);
    CHECK(std::isnan(bits_float(rejected.outputs[1])));
  }
  // Out of uniform's support is a density of zero, as in Stan, not a fault.
  const RunResult r = run_both("fn main(x: float) -> float { return uniform_lpdf(x | 0.0, 2.0); }",
                               float_batch({{1.0f, -1.0f}}));
  CHECK(r.errors.empty());
  CHECK(bits_float(r.outputs[0]) == doctest::Approx(-std::log(2.0)));
  CHECK(bits_float(r.outputs[1]) == -INFINITY);
}

TEST_CASE("distributions: bad calls are compile errors that say what is wrong") {
  CHECK(compile_errors("fn main(y: float[3]) -> float { return normal_lpdf(y | [0.0, 1.0], "
                       "1.0); }\n")
            .find("the array arguments of 'normal_lpdf' must have one shape, found 'float[3]' "
                  "and 'float[2]'") != std::string::npos);
  CHECK(compile_errors("fn main(y: float) -> float { return poisson_lpmf(y | 1.0); }\n")
            .find("argument 1 of 'poisson_lpmf' (n) must be an 'int' or an int array, found "
                  "'float'") != std::string::npos);
  CHECK(compile_errors("fn main(t: float[3]) -> float { return dirichlet_lpdf(t | [1.0, 2.0]); "
                       "}\n")
            .find("'dirichlet_lpdf' needs theta and alpha of one row length (and as many rows "
                  "where both have rows), found 'float[3]' and 'float[2]'") != std::string::npos);
  CHECK(compile_errors("fn main(t: float) -> float { return dirichlet_lpdf(t | [1.0, 2.0]); }\n")
            .find("argument 1 of 'dirichlet_lpdf' (theta) must be a float vector 'float[K]' or "
                  "rows 'float[M][K]', found 'float'") != std::string::npos);
  CHECK(compile_errors("fn main(y: float) -> float { return normal_lpdf(y | 1.0); }\n")
            .find("'normal_lpdf' takes 3 arguments, found 2") != std::string::npos);
  CHECK(compile_errors("fn normal_lpdf(y: float) -> float { return y; }\nfn main(y: float) -> "
                       "float { return y; }\n")
            .find("cannot redefine builtin function 'normal_lpdf'") != std::string::npos);
  CHECK(compile_errors("fn rng_gamma(y: float) -> float { return y; }\nfn main(y: float) -> "
                       "float { return gamma_rng(y, 1.0); }\n")
            .find("cannot redefine builtin function 'rng_gamma'") != std::string::npos);
  // A draw from the library's loops cannot be differentiated: said once, at the user's call.
  CHECK(compile_errors("fn f(x: float[1]) -> float { return x[0] * gamma_rng(2.0, 1.0); }\n"
                       "fn main(x: float[1]) -> float[1] { return grad(f, x); }\n") ==
        "cannot differentiate 'f': a random draw in 'f'\n");
}

// Mean and variance of `n` draws of `call` against the distribution's, within 5 standard errors
// (the variance's from the fourth central moment `m4`).
struct Moments {
  const char* call;
  double mean, variance, m4;
};

TEST_CASE("distributions: random draws have their distribution's moments") {
  const std::vector<Moments> cases = {
      {"normal_rng(1.5, 2.0)", 1.5, 4.0, 3 * 16.0},
      {"std_normal_rng()", 0.0, 1.0, 3.0},
      {"uniform_rng(-1.0, 3.0)", 1.0, 16.0 / 12, 256.0 / 80},
      {"exponential_rng(2.0)", 0.5, 0.25, 9.0 / 16},
      {"gamma_rng(2.5, 2.0)", 1.25, 2.5 / 4, 3 * 2.5 * (2.5 + 2) / 16},
      {"gamma_rng(0.3, 1.0)", 0.3, 0.3, 3 * 0.3 * 2.3},
      {"inv_gamma_rng(12.0, 2.0)", 2.0 / 11, 4.0 / 1210, 0.0},
      {"gamma_rng(6.0, 1.0)", 6.0, 6.0, 3 * 6.0 * 8.0},
      {"chi_square_rng(3.0)", 3.0, 6.0, 12 * 3 * 5.0},
      {"beta_rng(2.0, 3.0)", 0.4, 0.04, 0.0},
      {"beta_rng(0.2, 0.5)", 0.2 / 0.7, 0.1 / (0.49 * 1.7), 0.0},
      {"lognormal_rng(0.1, 0.5)", std::exp(0.1 + 0.125),
       (std::exp(0.25) - 1) * std::exp(0.2 + 0.25), 0.0},
      {"student_t_rng(8.0, 1.0, 2.0)", 1.0, 4.0 * 8 / 6, 0.0},
      {"double_exponential_rng(1.0, 2.0)", 1.0, 8.0, 0.0},
      {"logistic_rng(1.0, 2.0)", 1.0, 4.0 * M_PI * M_PI / 3, 0.0},
      {"float(bernoulli_rng(0.3))", 0.3, 0.21, 0.0},
      {"float(bernoulli_logit_rng(0.5))", 1 / (1 + std::exp(-0.5)), 0.0, 0.0},
      {"float(binomial_rng(10, 0.3))", 3.0, 2.1, 0.0},
      {"float(binomial_rng(200, 0.7))", 140.0, 42.0, 0.0},
      {"float(poisson_rng(3.5))", 3.5, 3.5, 0.0},
      {"float(poisson_rng(60.0))", 60.0, 60.0, 0.0},
      {"float(poisson_log_rng(1.0))", std::exp(1.0), std::exp(1.0), 0.0},
      {"weibull_rng(2.0, 3.0)", 3.0 * std::sqrt(M_PI) / 2, 9.0 * (1 - M_PI / 4), 0.0},
      {"float(binomial_logit_rng(20, 0.0))", 10.0, 5.0, 0.0},
      {"float(neg_binomial_2_rng(6.0, 2.5))", 6.0, 6.0 + 36.0 / 2.5, 0.0},
      {"float(neg_binomial_2_log_rng(1.0, 4.0))", std::exp(1.0),
       std::exp(1.0) + std::exp(2.0) / 4.0, 0.0},
      {"float(categorical_logit_rng([0.0, 1.0, -1.0]))", 0.0, 0.0, 0.0},
  };
  const uint32_t n = 4000;
  for (const Moments& m : cases) {
    INFO(std::string(m.call));
    const std::string source =
        std::string("fn main(x: float) -> float {\n    return ") + m.call + ";\n}\n";
    const RunResult r = run_both(source, float_batch({std::vector<float>(n, 0.0f)}), 17);
    REQUIRE(r.errors.empty());
    double sum = 0, sum2 = 0;
    for (float v : float_outputs(r)) {
      sum += v;
      sum2 += double(v) * v;
    }
    const double mean = sum / n, variance = sum2 / n - mean * mean;
    double want_mean = m.mean, want_variance = m.variance;
    if (std::string(m.call).find("categorical") != std::string::npos) {
      const double w[3] = {1.0, std::exp(1.0), std::exp(-1.0)};
      const double t = w[0] + w[1] + w[2];
      want_mean = (1 * w[0] + 2 * w[1] + 3 * w[2]) / t;
      want_variance = (1 * w[0] + 4 * w[1] + 9 * w[2]) / t - want_mean * want_mean;
    }
    if (std::string(m.call).find("bernoulli_logit") != std::string::npos)
      want_variance = want_mean * (1 - want_mean);
    CHECK(std::fabs(mean - want_mean) < 5 * std::sqrt(want_variance / n));
    // Without the fourth moment, a loose check: within 15% (heavy tails: logistic, student_t).
    if (m.m4 > 0)
      CHECK(std::fabs(variance - want_variance) <
            5 * std::sqrt((m.m4 - want_variance * want_variance) / n));
    else
      CHECK(std::fabs(variance - want_variance) < 0.15 * want_variance);
  }
}

TEST_CASE("distributions: draws are the lane's stream: the same bits for any batch size") {
  const std::string source = R"(
fn main(x: float) -> float[4] {
    return [gamma_rng(0.5 + x, 1.0), float(poisson_rng(2.0 + 20.0 * x)),
            float(binomial_rng(40, 0.2 + 0.5 * x)), beta_rng(0.3 + x, 2.0)];
}
)";
  std::vector<float> xs;
  for (int i = 0; i < 64; ++i)
    xs.push_back(static_cast<float>(i % 7) / 7.0f);
  const RunResult all = run_both(source, float_batch({xs}), 3);
  const RunResult few =
      run_both(source, float_batch({std::vector<float>(xs.begin(), xs.begin() + 5)}), 3);
  REQUIRE(all.errors.empty());
  for (size_t w = 0; w < few.outputs.size(); ++w)
    CHECK(few.outputs[w] == all.outputs[w]);
}

}  // namespace
}  // namespace ab::testing
