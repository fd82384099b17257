// Stan's distributions as builtins of the function builder: each log density and draw composed
// of the language's ops at its call (the contract is lang/distributions.h's).
#include "lang/distributions.h"

#include <fmt/format.h>

#include <functional>
#include <limits>

#include "lang/builder_state.h"
#include "lang/composer.h"

namespace ab::frontend {

// ---- composing elementwise float expressions ---------------------------------------------------

namespace {

// A value under composition, with arithmetic spelled as in the formulas.
struct X {
  Composer* c;
  Value v;
};
X lift(const X& like, float k) {
  return X{like.c, like.c->constant(k)};
}
X apply(OpCode code, const X& a) {
  return X{a.c, a.c->op(code, {a.v})};
}
X apply(OpCode code, const X& a, const X& b) {
  return X{a.c, a.c->op(code, {a.v, b.v})};
}
// The formulas' arithmetic and functions, one op each.
// clang-format off
X operator+(const X& a, const X& b) { return apply(OpCode::Add, a, b); }
X operator-(const X& a, const X& b) { return apply(OpCode::Sub, a, b); }
X operator*(const X& a, const X& b) { return apply(OpCode::Mul, a, b); }
X operator/(const X& a, const X& b) { return apply(OpCode::Div, a, b); }
X operator-(const X& a) { return apply(OpCode::Neg, a); }
X operator+(const X& a, float k) { return a + lift(a, k); }
X operator-(const X& a, float k) { return a - lift(a, k); }
X operator*(float k, const X& a) { return lift(a, k) * a; }
X operator-(float k, const X& a) { return lift(a, k) - a; }
X operator*(const X& a, float k) { return a * lift(a, k); }
X operator/(float k, const X& a) { return lift(a, k) / a; }
X log(const X& a) { return apply(OpCode::Log, a); }
X exp(const X& a) { return apply(OpCode::Exp, a); }
X sqrt(const X& a) { return apply(OpCode::Sqrt, a); }
X abs(const X& a) { return apply(OpCode::Abs, a); }
X lgamma(const X& a) { return apply(OpCode::Lgamma, a); }
X log1p(const X& a) { return apply(OpCode::Log1p, a); }
X log1m(const X& a) { return apply(OpCode::Log1m, a); }
X log1p_exp(const X& a) { return apply(OpCode::Log1pExp, a); }
X log_sum_exp(const X& a, const X& b) { return apply(OpCode::LogSumExp, a, b); }
X pow(const X& a, const X& b) { return apply(OpCode::Pow, a, b); }
X sin(const X& a) { return apply(OpCode::Sin, a); }
X cos(const X& a) { return apply(OpCode::Cos, a); }
// clang-format on
// Comparisons and their conjunction: bool values, for checks and indicators.
X compare(OpCode code, const X& a, float k) {
  return X{a.c, a.c->op(code, {a.v, a.c->constant(k)}, Types::kBool)};
}
X compare(OpCode code, const X& a, const X& b) {
  return X{a.c, a.c->op(code, {a.v, b.v}, Types::kBool)};
}
X both(const X& a, const X& b) {
  return X{a.c, a.c->op(OpCode::And, {a.v, b.v}, Types::kBool)};
}
X indicator(const X& b) {  // 1.0 where true, 0.0 where false
  return X{b.c, b.c->op(OpCode::ToFloat, {b.v})};
}

constexpr float kLogSqrtTwoPi = 0.918938533204672742f;
constexpr float kLogPi = 1.14472988584940017f;
constexpr float kLogTwo = 0.693147180559945309f;
constexpr float kPi = 3.14159265358979324f;

// The domain an argument must lie in, as Stan's checks say it: an interval, each end open or
// closed (so NaN is never inside), whose upper end may be the length of the next argument
// (categorical's K).
struct Domain {
  float lo, hi;
  bool open_lo, open_hi;
  const char* text;  // "must be > 0"; null: not checked
  bool hi_is_next_length = false;
};
constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr Domain kNotNan{-kInf, kInf, false, false, "must not be NaN"};
constexpr Domain kFinite{-kInf, kInf, true, true, "must be finite"};
constexpr Domain kPositive{0, kInf, true, false, "must be > 0"};
constexpr Domain kPositiveFinite{0, kInf, true, true, "must be finite and > 0"};
constexpr Domain kNonNegative{0, kInf, false, false, "must be >= 0"};
constexpr Domain kUnit{0, 1, false, false, "must be in [0, 1]"};
constexpr Domain kOpenUnit{0, 1, true, true, "must be in (0, 1)"};
constexpr Domain kBinary{0, 1, false, false, "must be 0 or 1"};
constexpr Domain kCategory{1, 0, false, false, "must be in 1..K (K the length of beta)", true};

enum class Kind : uint8_t {
  Real,    // a float or a float array
  Int,     // an int or an int array
  Vector,  // one float[K], taken whole (categorical_logit's beta)
  Rows,    // one float[K] or rows float[M][K], each row taken whole (dirichlet's theta, alpha)
};

struct Param {
  const char* name;
  Kind kind;
  Domain domain;
};

// The checked arguments of one call, floats (ints converted) in `x`, as written in `raw`.
struct Args {
  std::vector<X> x;
  std::vector<Value> raw;
};

using Compose = std::function<X(Composer&, const Args&)>;

struct Distribution {
  const char* name;
  std::vector<Param> params;
  Compose body;  // a density's elementwise log density, or the draw
  TypeId result = Types::kFloat;
};

X in_domain(const Domain& d, const X& a, const Args& args, size_t index) {
  const float hi =
      d.hi_is_next_length ? static_cast<float>(a.c->types()[args.raw[index + 1].type].count) : d.hi;
  return both(compare(d.open_lo ? OpCode::Gt : OpCode::Ge, a, d.lo),
              compare(d.open_hi ? OpCode::Lt : OpCode::Le, a, hi));
}

// log(n choose k), both floats holding integers.
// Where `c` (a bool) holds, a; elsewhere b. Both must be finite (0 * inf is NaN).
X select(const X& c, const X& a, const X& b) {
  const X one = indicator(c);
  return one * a + (1.0f - one) * b;
}
X max(const X& a, float k) {
  return apply(OpCode::Max, a, lift(a, k));
}
// lgamma(x) less Stirling's approximation (x - 1/2) log x - x + log sqrt(2 pi), for x >= 10:
// the first three terms of its series.
X stirling_difference(const X& x) {
  const X inverse = 1.0f / x;
  const X square = inverse * inverse;
  return inverse * (1.0f / 12 - square * (1.0f / 360 - square * (1.0f / 1260)));
}
// log Beta(a, b) = lgamma(a) + lgamma(b) - lgamma(a + b), as Stan's lbeta computes it: from
// Stirling's series when an argument is at least 10, so the large parts of the lgammas cancel
// in the formula instead of in float32. Each branch is computed with arguments kept where it is
// finite, and the one that applies is selected.
X lbeta(const X& a, const X& b) {
  const X x = apply(OpCode::Min, a, b), y = apply(OpCode::Max, a, b);
  const X small = lgamma(x) + lgamma(y) - lgamma(x + y);
  const X y_large = max(y, 10.0f);
  const X one_large = lgamma(x) + stirling_difference(y_large) - stirling_difference(x + y_large) +
                      (y_large - 0.5f) * log1m(x / (x + y_large)) + x * (1.0f - log(x + y_large));
  const X x_large = max(x, 10.0f);
  const X share = x_large / (x_large + y_large);
  const X both_large = stirling_difference(x_large) + stirling_difference(y_large) -
                       stirling_difference(x_large + y_large) + (x_large - 0.5f) * log(share) +
                       y_large * log1m(share) + kLogSqrtTwoPi - 0.5f * log(y_large);
  return select(compare(OpCode::Lt, y, 10.0f), small,
                select(compare(OpCode::Lt, x, 10.0f), one_large, both_large));
}
// log(n choose k), both floats holding integers: -log(n + 1) - lbeta(n - k + 1, k + 1).
X lchoose(const X& n, const X& k) {
  return -log1p(n) - lbeta(n - k + 1.0f, k + 1.0f);
}
// lgamma(n + phi) - lgamma(n + 1) - lgamma(phi), the negative binomial's coefficient.
X neg_binomial_coefficient(const X& n, const X& phi) {
  return -log(n + phi) - lbeta(phi, n + 1.0f);
}
// k log t - log y - t - lgamma(k): the gamma density's log at y with shape k, where t is y times
// the rate (given with its log), and so Poisson's (k = n + 1, t = lambda). From k = 10 on,
// lgamma(k) is Stirling's series and k log t - t - (k - 1/2) log k + k is computed as
// k log1p(d / k) - d with d = t - k near the mode, where float32 would lose the large terms.
X gamma_kernel(const X& k, const X& t, const X& log_t, const X& log_y) {
  const X direct = k * log_t - log_y - t - lgamma(k);
  const X k_large = max(k, 10.0f);
  const X d = t - k_large;
  const X near = compare(OpCode::Lt, abs(d), 0.5f * k_large);
  const X log_ratio =
      select(near, log1p(max(d / k_large, -0.5f)), log_t - log(k_large));  // log(t / k)
  const X stirling = k_large * log_ratio - d + 0.5f * log(k_large) - log_y - kLogSqrtTwoPi -
                     stirling_difference(k_large);
  return select(compare(OpCode::Lt, k, 10.0f), direct, stirling);
}
// x * log1m(y), 0 where x is 0 (also when y is 1).
X multiply_log1m(const X& x, const X& y) {
  return x * log1m(y - indicator(compare(OpCode::Eq, x, 0.0f)));
}
// x * log(y), 0 where x is 0 (also when y is 0): Stan's multiply_log.
X multiply_log(const X& x, const X& y) {
  return x * log(y + indicator(compare(OpCode::Eq, x, 0.0f)));
}

constexpr Param kY{"y", Kind::Real, kNotNan};
constexpr Param kYFinite{"y", Kind::Real, kFinite};
constexpr Param kYPositive{"y", Kind::Real, kPositive};
constexpr Param kMu{"mu", Kind::Real, kFinite};
constexpr Param kSigma{"sigma", Kind::Real, kPositiveFinite};
constexpr Param kN{"n", Kind::Int, kNonNegative};
constexpr Param kTrials{"N", Kind::Int, kNonNegative};

Param positive(const char* name) {
  return Param{name, Kind::Real, kPositiveFinite};
}
Param finite(const char* name) {
  return Param{name, Kind::Real, kFinite};
}

// The elementwise log densities, full normalising constants, as Stan's `_lpdf` / `_lpmf`.
std::vector<Distribution> continuous_densities() {
  return {
      {"normal_lpdf",
       {kY, kMu, {"sigma", Kind::Real, kPositive}},
       [](Composer&, const Args& a) {
         const X z = (a.x[0] - a.x[1]) / a.x[2];
         return -0.5f * z * z - log(a.x[2]) - kLogSqrtTwoPi;
       }},
      {"std_normal_lpdf",
       {kY},
       [](Composer&, const Args& a) { return -0.5f * a.x[0] * a.x[0] - kLogSqrtTwoPi; }},
      {"student_t_lpdf",
       {kY, positive("nu"), kMu, kSigma},
       [](Composer&, const Args& a) {
         const X z = (a.x[0] - a.x[2]) / a.x[3];
         const X half_nu = 0.5f * a.x[1];
         // lgamma(nu/2 + 1/2) - lgamma(nu/2) is log sqrt(pi) - lbeta(nu/2, 1/2).
         return -lbeta(half_nu, lift(half_nu, 0.5f)) - 0.5f * log(a.x[1]) - log(a.x[3]) -
                (half_nu + 0.5f) * log1p(z * z / a.x[1]);
       }},
      {"cauchy_lpdf",
       {kY, kMu, kSigma},
       [](Composer&, const Args& a) {
         const X z = (a.x[0] - a.x[1]) / a.x[2];
         return -log1p(z * z) - log(a.x[2]) - kLogPi;
       }},
      {"double_exponential_lpdf",
       {kYFinite, kMu, kSigma},
       [](Composer&, const Args& a) {
         return -abs(a.x[0] - a.x[1]) / a.x[2] - log(a.x[2]) - kLogTwo;
       }},
      {"logistic_lpdf",
       {kYFinite, kMu, kSigma},
       [](Composer&, const Args& a) {
         const X z = (a.x[0] - a.x[1]) / a.x[2];
         return -z - 2.0f * log1p_exp(-z) - log(a.x[2]);
       }},
      {"lognormal_lpdf",
       {kYPositive, kMu, kSigma},
       [](Composer&, const Args& a) {
         const X log_y = log(a.x[0]);
         const X z = (log_y - a.x[1]) / a.x[2];
         return -0.5f * z * z - log(a.x[2]) - log_y - kLogSqrtTwoPi;
       }},
      {"exponential_lpdf",
       {{"y", Kind::Real, kNonNegative}, positive("beta")},
       [](Composer&, const Args& a) { return log(a.x[1]) - a.x[1] * a.x[0]; }},
      {"gamma_lpdf",
       {kYPositive, positive("alpha"), positive("beta")},
       [](Composer&, const Args& a) {
         const X log_y = log(a.x[0]);  // t = beta y
         return gamma_kernel(a.x[1], a.x[2] * a.x[0], log(a.x[2]) + log_y, log_y);
       }},
      {"inv_gamma_lpdf",
       {kYPositive, positive("alpha"), positive("beta")},
       [](Composer&, const Args& a) {
         const X log_y = log(a.x[0]);  // t = beta / y
         return gamma_kernel(a.x[1], a.x[2] / a.x[0], log(a.x[2]) - log_y, log_y);
       }},
      {"weibull_lpdf",
       {kYPositive, positive("alpha"), kSigma},
       [](Composer&, const Args& a) {
         const X scaled = a.x[0] / a.x[2];
         return log(a.x[1]) - log(a.x[2]) + (a.x[1] - 1.0f) * log(scaled) - pow(scaled, a.x[1]);
       }},
      {"beta_lpdf",
       {{"theta", Kind::Real, kOpenUnit}, positive("alpha"), positive("beta")},
       [](Composer&, const Args& a) {
         return -lbeta(a.x[1], a.x[2]) + (a.x[1] - 1.0f) * log(a.x[0]) +
                (a.x[2] - 1.0f) * log1m(a.x[0]);
       }},
      {"uniform_lpdf",
       {kY, finite("alpha"), finite("beta")},
       [](Composer& c, const Args& a) {
         c.check(compare(OpCode::Lt, a.x[1], a.x[2]).v, "uniform_lpdf: beta must be > alpha");
         const X inside =
             both(compare(OpCode::Le, a.x[1], a.x[0]), compare(OpCode::Le, a.x[0], a.x[2]));
         return log(indicator(inside)) - log(a.x[2] - a.x[1]);
       }},
      {"chi_square_lpdf",
       {kYPositive, positive("nu")},
       [](Composer&, const Args& a) {
         const X log_y = log(a.x[0]);  // gamma(y | nu / 2, 1 / 2)
         return gamma_kernel(0.5f * a.x[1], 0.5f * a.x[0], log_y - kLogTwo, log_y);
       }},
  };
}

std::vector<Distribution> discrete_densities() {
  return {
      {"bernoulli_lpmf",
       {{"n", Kind::Int, kBinary}, {"theta", Kind::Real, kUnit}},
       [](Composer&, const Args& a) {  // log(theta) or log(1 - theta), chosen exactly
         return log(a.x[0] * a.x[1] + (1.0f - a.x[0]) * (1.0f - a.x[1]));
       }},
      {"bernoulli_logit_lpmf",
       {{"n", Kind::Int, kBinary}, {"alpha", Kind::Real, kNotNan}},
       [](Composer&, const Args& a) { return -log1p_exp((1.0f - 2.0f * a.x[0]) * a.x[1]); }},
      {"binomial_lpmf",
       {kN, kTrials, {"theta", Kind::Real, kUnit}},
       [](Composer& c, const Args& a) {
         c.check(compare(OpCode::Le, a.x[0], a.x[1]).v, "binomial_lpmf: n must be <= N");
         return lchoose(a.x[1], a.x[0]) + multiply_log(a.x[0], a.x[2]) +
                multiply_log1m(a.x[1] - a.x[0], a.x[2]);
       }},
      {"binomial_logit_lpmf",
       {kN, kTrials, finite("alpha")},
       [](Composer& c, const Args& a) {
         c.check(compare(OpCode::Le, a.x[0], a.x[1]).v, "binomial_logit_lpmf: n must be <= N");
         return lchoose(a.x[1], a.x[0]) - a.x[0] * log1p_exp(-a.x[2]) -
                (a.x[1] - a.x[0]) * log1p_exp(a.x[2]);
       }},
      {"poisson_lpmf",
       {kN, {"lambda", Kind::Real, kPositiveFinite}},
       [](Composer&, const Args& a) {
         const X log_lambda = log(a.x[1]);  // gamma(lambda | n + 1, 1)
         return gamma_kernel(a.x[0] + 1.0f, a.x[1], log_lambda, log_lambda);
       }},
      {"poisson_log_lpmf",
       {kN, finite("alpha")},
       [](Composer&, const Args& a) {
         return gamma_kernel(a.x[0] + 1.0f, exp(a.x[1]), a.x[1], a.x[1]);
       }},
      {"neg_binomial_2_lpmf",
       {kN, positive("mu"), positive("phi")},
       [](Composer&, const Args& a) {
         const X& n = a.x[0];
         const X& mu = a.x[1];
         const X& phi = a.x[2];
         return neg_binomial_coefficient(n, phi) + n * (log(mu) - log(mu + phi)) -
                phi * log1p(mu / phi);
       }},
      {"neg_binomial_2_log_lpmf",
       {kN, finite("eta"), positive("phi")},
       [](Composer&, const Args& a) {
         const X& n = a.x[0];
         const X& eta = a.x[1];
         const X& phi = a.x[2];
         const X log_phi = log(phi);
         return neg_binomial_coefficient(n, phi) + n * (eta - log_sum_exp(eta, log_phi)) -
                phi * log1p_exp(eta - log_phi);
       }},
  };
}

// The draws, as Stan's `_rng`: scalar arguments, one draw per call from the lane's stream.
// These are a few ops each; the next ones call the library's loops.
std::vector<Distribution> direct_draws() {
  return {
      {"normal_rng",
       {kMu, kSigma},
       [](Composer& c, const Args& a) {
         return a.x[0] + a.x[1] * X{&c, c.draw(OpCode::RandNormal)};
       }},
      {"std_normal_rng",
       {},
       [](Composer& c, const Args&) {
         return X{&c, c.draw(OpCode::RandNormal)};
       }},
      {"uniform_rng",
       {finite("alpha"), finite("beta")},
       [](Composer& c, const Args& a) {
         c.check(compare(OpCode::Lt, a.x[0], a.x[1]).v, "uniform_rng: beta must be > alpha");
         return a.x[0] + (a.x[1] - a.x[0]) * X{&c, c.draw(OpCode::RandUniform)};
       }},
      {"exponential_rng",
       {positive("beta")},
       [](Composer& c, const Args& a) {
         return -log1m(X{&c, c.draw(OpCode::RandUniform)}) / a.x[0];
       }},
      {"lognormal_rng",
       {kMu, kSigma},
       [](Composer& c, const Args& a) {
         return exp(a.x[0] + a.x[1] * X{&c, c.draw(OpCode::RandNormal)});
       }},
      {"cauchy_rng",
       {kMu, kSigma},
       [](Composer& c, const Args& a) {  // the inverse of the cdf: tan(pi (u - 1/2))
         const X angle = kPi * (X{&c, c.draw(OpCode::RandUniform)} - 0.5f);
         return a.x[0] + a.x[1] * (sin(angle) / cos(angle));
       }},
      {"double_exponential_rng",
       {kMu, kSigma},
       [](Composer& c, const Args& a) {  // the difference of two exponential(1) draws
         const X e1 = -log1m(X{&c, c.draw(OpCode::RandUniform)});
         const X e2 = -log1m(X{&c, c.draw(OpCode::RandUniform)});
         return a.x[0] + a.x[1] * (e1 - e2);
       }},
      {"weibull_rng",
       {positive("alpha"), kSigma},
       [](Composer& c, const Args& a) {  // the inverse of the cdf
         const X e = -log1m(X{&c, c.draw(OpCode::RandUniform)});
         return a.x[1] * pow(e, 1.0f / a.x[0]);
       }},
  };
}

// The continuous draws that call the library's loops.
std::vector<Distribution> looping_draws() {
  return {
      {"logistic_rng",
       {kMu, kSigma},
       [](Composer& c, const Args& a) {
         const X u{&c, c.call_library("rng_open_uniform", {}, Types::kFloat)};
         return a.x[0] + a.x[1] * (log(u) - log1m(u));
       }},
      {"gamma_rng",
       {positive("alpha"), positive("beta")},
       [](Composer& c, const Args& a) {
         return X{&c, c.call_library("rng_gamma", {a.x[0].v}, Types::kFloat)} / a.x[1];
       }},
      {"inv_gamma_rng",
       {positive("alpha"), positive("beta")},
       [](Composer& c, const Args& a) {
         return a.x[1] / X{&c, c.call_library("rng_gamma", {a.x[0].v}, Types::kFloat)};
       }},
      {"chi_square_rng",
       {positive("nu")},
       [](Composer& c, const Args& a) {
         const X half_nu = 0.5f * a.x[0];
         return 2.0f * X{&c, c.call_library("rng_gamma", {half_nu.v}, Types::kFloat)};
       }},
      {"student_t_rng",
       {positive("nu"), kMu, kSigma},
       [](Composer& c, const Args& a) {
         const X half_nu = 0.5f * a.x[0];
         const X chi2 = 2.0f * X{&c, c.call_library("rng_gamma", {half_nu.v}, Types::kFloat)};
         const X z{&c, c.draw(OpCode::RandNormal)};
         return a.x[1] + a.x[2] * (z * sqrt(a.x[0] / chi2));
       }},
      {"beta_rng",
       {positive("alpha"), positive("beta")},
       [](Composer& c, const Args& a) {
         return X{&c, c.call_library("rng_beta", {a.x[0].v, a.x[1].v}, Types::kFloat)};
       }},
  };
}

// The draws of counts and categories (ints).
std::vector<Distribution> counting_draws() {
  return {
      {"bernoulli_rng",
       {{"theta", Kind::Real, kUnit}},
       [](Composer& c, const Args& a) {
         return compare(OpCode::Lt, X{&c, c.draw(OpCode::RandUniform)}, a.x[0]);
       },
       Types::kInt},
      {"bernoulli_logit_rng",
       {finite("alpha")},
       [](Composer& c, const Args& a) {
         const X p = apply(OpCode::InvLogit, a.x[0]);
         return compare(OpCode::Lt, X{&c, c.draw(OpCode::RandUniform)}, p);
       },
       Types::kInt},
      {"poisson_rng",
       {{"lambda", Kind::Real, kPositiveFinite}},
       [](Composer& c, const Args& a) {
         return X{&c, c.call_library("rng_poisson", {a.x[0].v}, Types::kInt)};
       },
       Types::kInt},
      {"poisson_log_rng",
       {finite("alpha")},
       [](Composer& c, const Args& a) {
         return X{&c, c.call_library("rng_poisson", {exp(a.x[0]).v}, Types::kInt)};
       },
       Types::kInt},
      {"binomial_rng",
       {kTrials, {"theta", Kind::Real, kUnit}},
       [](Composer& c, const Args& a) {
         return X{&c, c.call_library("rng_binomial", {a.raw[0], a.x[1].v}, Types::kInt)};
       },
       Types::kInt},
      {"binomial_logit_rng",
       {kTrials, finite("alpha")},
       [](Composer& c, const Args& a) {
         const X theta = apply(OpCode::InvLogit, a.x[1]);
         return X{&c, c.call_library("rng_binomial", {a.raw[0], theta.v}, Types::kInt)};
       },
       Types::kInt},
      {"neg_binomial_2_rng",
       {positive("mu"), positive("phi")},
       [](Composer& c, const Args& a) {  // poisson(mu gamma(phi, phi)): the gamma mixture
         const X g{&c, c.call_library("rng_gamma", {a.x[1].v}, Types::kFloat)};
         return X{&c, c.call_library("rng_poisson", {(a.x[0] * (g / a.x[1])).v}, Types::kInt)};
       },
       Types::kInt},
      {"neg_binomial_2_log_rng",
       {finite("eta"), positive("phi")},
       [](Composer& c, const Args& a) {
         const X g{&c, c.call_library("rng_gamma", {a.x[1].v}, Types::kFloat)};
         return X{&c, c.call_library("rng_poisson", {(exp(a.x[0]) * (g / a.x[1])).v}, Types::kInt)};
       },
       Types::kInt},
      {"categorical_logit_rng",
       {{"beta", Kind::Vector, kFinite}},
       [](Composer& c, const Args& a) {
         // The first k (from 1) whose cumulative weight passes u times the total weight.
         const X& beta = a.x[0];
         const X weights = exp(beta - X{&c, c.reduce(OpCode::ReduceMax, beta.v)});
         const Value total_weight = c.total(weights.v);
         const X u = X{&c, c.draw(OpCode::RandUniform)} * X{&c, total_weight};
         const uint32_t k = c.types()[beta.v.type].count;
         X cumulative{&c, c.word(weights.v, 0)};
         X category = lift(beta, 1.0f);
         for (uint32_t i = 1; i < k; ++i) {
           category = category + indicator(compare(OpCode::Ge, u, cumulative));
           cumulative = cumulative + X{&c, c.word(weights.v, i)};
         }
         return category;
       },
       Types::kInt},
  };
}

std::vector<Distribution> joined(std::vector<Distribution> a, std::vector<Distribution> b) {
  a.insert(a.end(), std::make_move_iterator(b.begin()), std::make_move_iterator(b.end()));
  return a;
}
const std::vector<Distribution>& densities() {
  static const std::vector<Distribution> table =
      joined(continuous_densities(), discrete_densities());
  return table;
}
const std::vector<Distribution>& draws() {
  static const std::vector<Distribution> table =
      joined(joined(direct_draws(), looping_draws()), counting_draws());
  return table;
}

const Distribution* find(const std::vector<Distribution>& table, const std::string& name) {
  for (const Distribution& d : table)
    if (name == d.name) return &d;
  return nullptr;
}

}  // namespace

bool is_distribution_builtin(const std::string& name) {
  return find(densities(), name) || find(draws(), name) || name == "categorical_logit_lpmf" ||
         name == "dirichlet_lpdf";
}

// ---- one call
// ------------------------------------------------------------------------------------

// A call of a distribution's builtin: its arguments typed and checked, then composed.
class DistributionCall {
 public:
  DistributionCall(FunctionBuilder& fb, const ast::Expr& e) : fb(fb), e(e), c(fb, e.loc) {}

  Value density(const Distribution& d) {
    c.gather_checks();
    const std::optional<Args> args = arguments(d);
    if (!args) return Value{};
    return c.rejected(c.total(d.body(c, *args).v));
  }

  Value draw(const Distribution& d) {
    const std::optional<Args> args = arguments(d);
    if (!args) return Value{};
    const Value v = d.body(c, *args).v;
    if (v.type == d.result) return v;
    if (d.result == Types::kInt) return c.op(OpCode::ToInt, {v}, Types::kInt);
    return v;
  }

  // categorical_logit_lpmf(n | beta): beta[n] - log_sum_exp(beta), n counted from 1, per
  // element of n; an int array n is unrolled (its length is known).
  Value categorical_logit() {
    static const Distribution d{"categorical_logit_lpmf",
                                {{"n", Kind::Int, kCategory}, {"beta", Kind::Vector, kFinite}},
                                nullptr};
    c.gather_checks();
    const std::optional<Args> args = arguments(d);
    if (!args) return Value{};
    const Value& n = args->raw[0];
    const Value& beta = args->raw[1];
    const Value one = c.int_constant(1);
    std::vector<Value> picked;
    const uint32_t count = fb.types().is_array(n.type) ? fb.types().words(n.type) : 1;
    for (uint32_t i = 0; i < count; ++i) {
      const Value ni = fb.types().is_array(n.type) ? c.word(n, i) : n;
      picked.push_back(
          c.element(beta, c.index_in_domain(c.op(OpCode::Sub, {ni, one}, Types::kInt))));
    }
    const Value lse = c.reduce(OpCode::ReduceLogSumExp, beta);
    const Value terms = picked.size() == 1 ? picked[0] : c.make_array(picked, Types::kFloat);
    return c.rejected(c.total(c.op(OpCode::Sub, {terms, lse})));
  }

  // dirichlet_lpdf(theta | alpha), Stan's with its constant: per row, lgamma(sum(alpha)) -
  // sum(lgamma(alpha)) + sum(multiply_log(alpha - 1, theta)) (the first two terms as
  // log_multivariate_beta's chain of lbeta); theta and alpha a float[K] each or
  // rows float[M][K] (a vector is every row's), the rows summed. theta must be a simplex: its
  // elements in [0, 1], each row summing to 1 within K * 2^-20 (Stan's 1e-8 is float64's).
  Value dirichlet() {
    static const Distribution d{
        "dirichlet_lpdf",
        {{"theta", Kind::Rows, kUnit}, {"alpha", Kind::Rows, kPositiveFinite}},
        nullptr};
    c.gather_checks();
    const std::optional<Args> args = arguments(d);
    if (!args) return Value{};
    Value theta = args->raw[0], alpha = args->raw[1];
    const uint32_t k = row_length(theta);
    const uint32_t rows = std::max(row_count(theta), row_count(alpha));
    if (row_length(alpha) != k ||
        (row_count(theta) > 1 && row_count(alpha) > 1 && row_count(theta) != row_count(alpha))) {
      fb.error(e.loc, fmt::format("'dirichlet_lpdf' needs theta and alpha of one row length (and "
                                  "as many rows where both have rows), found '{}' and '{}'",
                                  fb.type_name(theta.type), fb.type_name(alpha.type)));
      return Value{};
    }
    const Value off = c.op(OpCode::Abs, {c.op(OpCode::Sub, {row_sums(theta), c.constant(1.0f)})});
    c.check(c.op(OpCode::Le, {off, c.constant(static_cast<float>(k) * 0x1p-20f)}, Types::kBool),
            fmt::format("dirichlet_lpdf: theta must be a simplex (each row summing to 1 within "
                        "{} * 2^-20)",
                        k));
    X lp = -log_multivariate_beta(alpha, k);
    if (row_count(alpha) < rows) {  // one alpha for every row of theta
      lp = lp * static_cast<float>(rows);
      alpha = fb.matrix_op(OpCode::Outer, ones(rows), alpha, e.loc);
    }
    if (row_count(theta) < rows) theta = fb.matrix_op(OpCode::Outer, ones(rows), theta, e.loc);
    const X kernel = multiply_log(X{&c, alpha} - 1.0f, X{&c, theta});
    return c.rejected((lp + X{&c, c.total(kernel.v)}).v);
  }

 private:
  // sum(lgamma(alpha)) - lgamma(sum(alpha)) over every row of alpha (float[K] or float[M][K]),
  // as the chain sum over j = 1 .. K - 1 of lbeta(alpha[0] + ... + alpha[j - 1], alpha[j])
  // (Gamma's ratios telescope), so that lbeta's Stirling form cancels the large parts of the
  // lgammas (directly, float32 loses 100+ ulp at alpha = 40). The prefix sums and the shifted
  // alpha are products with constant 0/1 matrices (the shift is exact).
  X log_multivariate_beta(const Value& alpha, uint32_t k) {
    if (k == 1) return lift(X{&c, alpha}, 0.0f);
    std::vector<uint32_t> prefix(size_t{k} * (k - 1), 0u), shift(size_t{k} * (k - 1), 0u);
    for (uint32_t i = 0; i < k; ++i)
      for (uint32_t j = 0; j + 1 < k; ++j) {
        if (i <= j) prefix[size_t{i} * (k - 1) + j] = float_bits(1.0f);
        if (i == j + 1) shift[size_t{i} * (k - 1) + j] = float_bits(1.0f);
      }
    const TypeId by = fb.types().array(fb.types().array(Types::kFloat, k - 1), k);
    const Value sums = fb.matrix_op(OpCode::MatMul, alpha, c.constant(by, prefix), e.loc);
    const Value next = fb.matrix_op(OpCode::MatMul, alpha, c.constant(by, shift), e.loc);
    return X{&c, c.total(lbeta(X{&c, sums}, X{&c, next}).v)};
  }

  // A float[K]'s K or a float[M][K]'s; its M, 1 for a vector.
  uint32_t row_length(const Value& v) {
    const TypeId elem = fb.types()[v.type].elem;
    return fb.types().is_array(elem) ? fb.types()[elem].count : fb.types()[v.type].count;
  }
  uint32_t row_count(const Value& v) {
    return fb.types().is_array(fb.types()[v.type].elem) ? fb.types()[v.type].count : 1;
  }
  Value ones(uint32_t n) {
    const TypeId t = fb.types().array(Types::kFloat, n);
    return c.constant(t, std::vector<uint32_t>(n, float_bits(1.0f)));
  }
  // sum(v) of a vector, or each row's sum of a matrix (v @ ones).
  Value row_sums(const Value& v) {
    if (row_count(v) == 1 && !fb.types().is_array(fb.types()[v.type].elem))
      return c.reduce(OpCode::Sum, v);
    return fb.matrix_op(OpCode::MatMul, v, ones(row_length(v)), e.loc);
  }

  std::optional<Args> arguments(const Distribution& d) {
    if (e.args.size() != d.params.size()) {
      fb.error(e.loc, fmt::format("'{}' takes {} argument{}, found {}", e.name, d.params.size(),
                                  d.params.size() == 1 ? "" : "s", e.args.size()));
      return std::nullopt;
    }
    Args args;
    TypeId shape = kPoison;  // the float shape every array argument must have
    for (size_t i = 0; i < d.params.size(); ++i) {
      const Param& p = d.params[i];
      const TypeId want = p.kind == Kind::Int ? Types::kInt : Types::kFloat;
      const Value v = fb.expr(*e.args[i], want);
      if (!v.ok()) return std::nullopt;
      const bool is_array = fb.types().is_array(v.type);
      const bool vector = is_array && !fb.types().is_array(fb.types()[v.type].elem);
      const bool rows = is_array && !vector && fb.types().is_array(fb.types()[v.type].elem) &&
                        !fb.types().is_array(fb.types()[fb.types()[v.type].elem].elem);
      const bool fits = fb.types().leaf(v.type) == want && (p.kind == Kind::Vector ? vector
                                                            : p.kind == Kind::Rows ? vector || rows
                                                                                   : true);
      if (!fits) {
        const char* what = p.kind == Kind::Int      ? "an 'int' or an int array"
                           : p.kind == Kind::Vector ? "a float vector 'float[K]'"
                           : p.kind == Kind::Rows
                               ? "a float vector 'float[K]' or rows 'float[M][K]'"
                               : "a 'float' or a float array";
        fb.error(e.args[i]->loc, fmt::format("argument {} of '{}' ({}) must be {}, found '{}'",
                                             i + 1, e.name, p.name, what, fb.type_name(v.type)));
        return std::nullopt;
      }
      if (is_array && (p.kind == Kind::Real || p.kind == Kind::Int)) {
        const TypeId as_float = fb.with_leaf(v.type, Types::kFloat);
        if (shape != kPoison && shape != as_float) {
          fb.error(e.args[i]->loc,
                   fmt::format("the array arguments of '{}' must have one shape, found '{}' and "
                               "'{}'",
                               e.name, fb.type_name(shape), fb.type_name(as_float)));
          return std::nullopt;
        }
        shape = as_float;
      }
      args.raw.push_back(v);
      args.x.push_back(X{&c, c.to_float(v)});
    }
    for (size_t i = 0; i < d.params.size(); ++i) {
      const Domain& domain = d.params[i].domain;
      if (!domain.text) continue;
      c.check(in_domain(domain, args.x[i], args, i).v,
              fmt::format("{}: {} {}", e.name, d.params[i].name, domain.text));
    }
    return args;
  }

  FunctionBuilder& fb;
  const ast::Expr& e;
  Composer c;
};

std::optional<Value> FunctionBuilder::distribution(const ast::Expr& e) {
  DistributionCall call{*this, e};
  if (e.name == "categorical_logit_lpmf") return call.categorical_logit();
  if (e.name == "dirichlet_lpdf") return call.dirichlet();
  if (const Distribution* d = find(densities(), e.name)) return call.density(*d);
  if (const Distribution* d = find(draws(), e.name)) return call.draw(*d);
  return std::nullopt;
}

}  // namespace ab::frontend
