// Stan's constrained vector types (sampler/parameters.h): each transform's log-Jacobian, as the
// sampler's glue computes it in float32, against log|det| of a numeric Jacobian of the
// transform (central differences in double), the glue's constrained point against the double
// transform, and --init's inverse map with its refusals; the same for bounds that depend on
// earlier parameters (Stan's GARCH, `upper=1 - alpha1`).
#include <doctest/doctest.h>

#include <cmath>
#include <functional>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "autobatch/module.h"
#include "autobatch/sampler.h"
#include "sampler/parameters.h"

namespace {

using namespace ab::sample;

const std::string kModel =
    "struct Params { b: float<lower=1, upper=3>, s: simplex[4], o: ordered[3], "
    "po: positive_ordered[2], m: simplex[2][3], z: float }\n"
    "fn log_density(p: Params) -> float { return 0.0; }\n";

// A Cholesky factor of a 4 x 4 correlation matrix between two bounded coordinates.
const std::string kCorrelationModel =
    "struct Params { a: float<lower=0>, c: cholesky_factor_corr[4], d: float }\n"
    "fn log_density(p: Params) -> float { return 0.0; }\n";

ParameterLayout model_layout(const std::string& model = kModel) {
  ab::CompileOptions options;
  options.file = "types.ab";
  options.entry = "log_density";
  auto module = ab::Module::compile(model, options);
  REQUIRE_MESSAGE(module.ok(), module.error());
  auto layout = struct_layout((*module)->functions().at(0).params.at(0).value_type);
  REQUIRE_MESSAGE(layout.ok(), layout.error());
  return *layout;
}

// Runs the glue's `entry` (nuts_constrain or nuts_log_jacobian) at each point, returns its words.
std::vector<float> run_glue(const ParameterLayout& layout, const std::string& entry,
                            const std::vector<std::vector<double>>& points,
                            const std::string& model = kModel,
                            const ab::UniformData& uniforms = {}) {
  ab::CompileOptions options;
  options.file = "types.ab";
  options.entry = entry;
  auto module = ab::Module::compile(model + sampler_glue(layout, false), options);
  REQUIRE_MESSAGE(module.ok(), module.error());
  ab::Batch batch;
  batch.lanes = static_cast<uint32_t>(points.size());
  batch.uniforms = uniforms;
  batch.inputs.emplace_back();
  for (const auto& u : points)
    for (double x : u)
      batch.inputs[0].push_back(std::bit_cast<uint32_t>(static_cast<float>(x)));
  auto ran = (*module)->run_cpu(batch, ab::RunOptions{}, ab::CpuBackend::Interpreter);
  REQUIRE_MESSAGE(ran.ok(), ran.error());
  REQUIRE(ran->errors.empty());
  std::vector<float> out;
  for (uint32_t w : ran->outputs)
    out.push_back(std::bit_cast<float>(w));
  return out;
}

// `count` points of `dimension` coordinates uniform in [lo, hi), rounded to float32: exactly what
// the glue reads.
std::vector<std::vector<double>> random_points(uint32_t seed, double lo, double hi, size_t count,
                                               size_t dimension) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> coordinate(lo, hi);
  std::vector<std::vector<double>> points(count, std::vector<double>(dimension));
  for (auto& u : points)
    for (double& x : u)
      x = static_cast<float>(coordinate(rng));
  return points;
}

// log|det A| of a square matrix (row-major) by Gaussian elimination with partial pivoting.
double log_abs_det(std::vector<double> a, size_t n) {
  double out = 0;
  for (size_t c = 0; c < n; ++c) {
    size_t pivot = c;
    for (size_t r = c + 1; r < n; ++r)
      if (std::abs(a[r * n + c]) > std::abs(a[pivot * n + c])) pivot = r;
    for (size_t k = 0; k < n; ++k)
      std::swap(a[c * n + k], a[pivot * n + k]);
    out += std::log(std::abs(a[c * n + c]));
    for (size_t r = c + 1; r < n; ++r) {
      const double f = a[r * n + c] / a[c * n + c];
      for (size_t k = c; k < n; ++k)
        a[r * n + k] -= f * a[c * n + k];
    }
  }
  return out;
}

// The log-Jacobian the density needs: the constrained coordinates less each simplex's last
// (determined by the others, as Stan's density on a simplex is over its first K - 1) and a
// correlation factor's diagonal and upper triangle (its density is over the elements below the
// diagonal, as Stan's), by central differences of the double transform.
// `map` replaces the layout's double transform (a dependent bound's, which the model computes).
using Map = std::function<std::vector<double>(const std::vector<double>&)>;
double numeric_log_jacobian(const ParameterLayout& layout, const std::vector<double>& u,
                            const Map& map = {}) {
  std::vector<uint8_t> kept(layout.dimension(), 1);
  for (const ConstrainedVector& v : layout.vectors) {
    if (v.kind == ab::VectorConstraint::Simplex) kept[v.first + v.length - 1] = 0;
    if (v.kind == ab::VectorConstraint::CholeskyFactorCorr)
      for (uint32_t r = 0; r < v.side(); ++r)
        for (uint32_t c = r; c < v.side(); ++c)
          kept[v.first + r * v.side() + c] = 0;
  }
  const size_t n = u.size();
  std::vector<double> jacobian;
  std::vector<std::vector<double>> columns;
  for (size_t j = 0; j < n; ++j) {
    const double h = 1e-6;
    std::vector<double> up = u, down = u;
    up[j] += h;
    down[j] -= h;
    const std::vector<double> a = map ? map(up) : constrain(layout, up);
    const std::vector<double> b = map ? map(down) : constrain(layout, down);
    std::vector<double> column;
    for (size_t i = 0; i < a.size(); ++i)
      if (kept[i]) column.push_back((a[i] - b[i]) / (2 * h));
    REQUIRE(column.size() == n);
    columns.push_back(column);
  }
  std::vector<double> a(n * n);
  for (size_t i = 0; i < n; ++i)
    for (size_t j = 0; j < n; ++j)
      a[i * n + j] = columns[j][i];
  return log_abs_det(a, n);
}

TEST_CASE("constrained types: the layout counts each simplex one coordinate short") {
  const ParameterLayout layout = model_layout();
  // b, s[4], o[3], po[2], m[2][3], z: 1 + 4 + 3 + 2 + 6 + 1 constrained.
  CHECK(layout.dimension() == 17);
  CHECK(layout.unconstrained_dimension() == 17 - 3);
  REQUIRE(layout.vectors.size() == 5);
  CHECK(layout.vectors[0].first == 1);
  CHECK(layout.vectors[0].kind == ab::VectorConstraint::Simplex);
  CHECK(layout.vectors[3].first == 10);  // m[0]
  CHECK(layout.vectors[4].first == 13);  // m[1]
  CHECK(layout.vectors[4].length == 3);
  CHECK(layout.names[1] == "s[0]");
  CHECK(layout.names[15] == "m[1][2]");
}

TEST_CASE("constrained types: each log-Jacobian matches log|det| of a numeric Jacobian") {
  const ParameterLayout layout = model_layout();
  const uint32_t D = layout.unconstrained_dimension();
  std::vector<std::vector<double>> points = random_points(7, -2.0, 2.0, 16, D);
  const std::vector<float> jacobians = run_glue(layout, "nuts_log_jacobian", points);
  const std::vector<float> constrained = run_glue(layout, "nuts_constrain", points);
  for (size_t p = 0; p < points.size(); ++p) {
    CAPTURE(p);
    const double numeric = numeric_log_jacobian(layout, points[p]);
    CHECK(jacobians[p] == doctest::Approx(numeric).epsilon(1e-4).scale(1.0));
    const std::vector<double> x = constrain(layout, points[p]);
    for (size_t i = 0; i < x.size(); ++i)
      CHECK(constrained[p * x.size() + i] == doctest::Approx(x[i]).epsilon(1e-5));
    // The constrained point is in its set: a simplex sums to 1, ordered vectors increase.
    CHECK(x[1] + x[2] + x[3] + x[4] == doctest::Approx(1.0).epsilon(1e-12));
    CHECK((x[5] < x[6] && x[6] < x[7] && 0 < x[8] && x[8] < x[9]));
  }
}

TEST_CASE("constrained types: unconstrain inverts constrain, and refuses points off the set") {
  const ParameterLayout layout = model_layout();
  std::vector<double> u(layout.unconstrained_dimension());
  for (size_t i = 0; i < u.size(); ++i)
    u[i] = 0.3 * static_cast<double>(i) - 1.7;
  const std::vector<double> x = constrain(layout, u);
  auto back = unconstrain(layout, std::vector<float>(x.begin(), x.end()));
  REQUIRE_MESSAGE(back.ok(), back.error());
  for (size_t i = 0; i < u.size(); ++i)
    CHECK((*back)[i] == doctest::Approx(u[i]).epsilon(1e-4).scale(1.0));

  const auto refused = [&](size_t at, std::vector<float> values) {
    std::vector<float> point(x.begin(), x.end());
    std::copy(values.begin(), values.end(), point.begin() + static_cast<long>(at));
    auto r = unconstrain(layout, point);
    REQUIRE_FALSE(r.ok());
    return r.error();
  };
  CHECK(refused(1, {0.25f, 0.25f, 0.25f, 0.5f}) ==
        "s = [0.25, 0.25, 0.25, 0.5] is not a simplex (every element above 0, summing to 1)");
  CHECK(refused(1, {0.5f, 0.0f, 0.25f, 0.25f}) ==
        "s = [0.5, 0, 0.25, 0.25] is not a simplex (every element above 0, summing to 1)");
  CHECK(refused(5, {1.0f, 1.0f, 2.0f}) == "o = [1, 1, 2] is not strictly increasing (an ordered)");
  CHECK(refused(8, {-1.0f, 2.0f}) ==
        "po = [-1, 2] is not positive and strictly increasing (a positive_ordered)");
  CHECK(refused(13, {0.5f, 0.5f, NAN}) == "m[1] = [0.5, 0.5, nan] is not finite");
  CHECK(refused(0, {3.0f}) == "b = 3 is not inside (1, 3)");
}

TEST_CASE("constrained types: a cholesky_factor_corr's transform, log-Jacobian and inverse") {
  const ParameterLayout layout = model_layout(kCorrelationModel);
  CHECK(layout.dimension() == 1 + 16 + 1);
  CHECK(layout.unconstrained_dimension() == 1 + 6 + 1);
  REQUIRE(layout.vectors.size() == 1);
  CHECK(layout.vectors[0].first == 1);
  CHECK(layout.vectors[0].length == 16);
  CHECK(layout.names[1 + 2 * 4 + 1] == "c[2][1]");
  std::vector<std::vector<double>> points = random_points(11, -3.0, 3.0, 16, 8);
  points[0] = {0.5, 12.0, -11.0, 0.3, 9.5, 0.0, -10.0, 1.0};  // tanh rounds to +-1 in float32
  const std::vector<float> jacobians =
      run_glue(layout, "nuts_log_jacobian", points, kCorrelationModel);
  const std::vector<float> constrained =
      run_glue(layout, "nuts_constrain", points, kCorrelationModel);
  for (size_t p = 0; p < points.size(); ++p) {
    CAPTURE(p);
    CHECK(std::isfinite(jacobians[p]));
    if (p > 0)  // the numeric Jacobian of the double map is unreliable at the extremes
      CHECK(jacobians[p] ==
            doctest::Approx(numeric_log_jacobian(layout, points[p])).epsilon(1e-4).scale(1.0));
    const std::vector<double> x = constrain(layout, points[p]);
    for (size_t i = 0; i < x.size(); ++i)
      CHECK(constrained[p * x.size() + i] == doctest::Approx(x[i]).epsilon(1e-5).scale(1e-3));
    // Rows of unit length, a positive diagonal, +0 above it.
    for (uint32_t r = 0; r < 4; ++r) {
      double length = 0;
      for (uint32_t c = 0; c < 4; ++c) {
        const float v = constrained[p * x.size() + 1 + r * 4 + c];
        length += double{v} * v;
        if (c > r) CHECK(std::bit_cast<uint32_t>(v) == 0u);
      }
      CHECK(length == doctest::Approx(1.0).epsilon(1e-5));
      CHECK(constrained[p * x.size() + 1 + r * 5] > 0);
    }
  }
  // --init: the inverse, and a matrix that is not such a factor refused.
  const std::vector<double> x = constrain(layout, points[3]);
  auto back = unconstrain(layout, std::vector<float>(x.begin(), x.end()));
  REQUIRE_MESSAGE(back.ok(), back.error());
  for (size_t i = 0; i < points[3].size(); ++i)
    CHECK((*back)[i] == doctest::Approx(points[3][i]).epsilon(1e-3).scale(1.0));
  std::vector<float> bad(x.begin(), x.end());
  bad[1 + 4 + 1] *= 1.01f;  // row 1 longer than 1
  auto refused = unconstrain(layout, bad);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error().find("is not the Cholesky factor of a correlation matrix (lower "
                             "triangular, a positive diagonal, rows of length 1)") !=
        std::string::npos);
  CHECK(refused.error().rfind("c = [1, 0, 0, 0, ", 0) == 0);
}

// Bounds that depend on earlier fields, of each kind: both (b), lower (c), upper, on an array (d).
const std::string kDependentModel =
    "struct Params { a: float<lower=0, upper=1>, b: float<lower=0, upper=1 - a>, "
    "c: float<lower=a>, d: float<upper=2.0 * a - b>[2] }\n"
    "fn log_density(p: Params) -> float { return 0.0; }\n";

// kDependentModel's transform in double, written from Stan's definitions.
std::vector<double> dependent_map(const std::vector<double>& u) {
  const auto inv_logit = [](double v) { return 1 / (1 + std::exp(-v)); };
  const double a = inv_logit(u[0]), b = (1 - a) * inv_logit(u[1]);
  return {a, b, a + std::exp(u[2]), 2 * a - b - std::exp(u[3]), 2 * a - b - std::exp(u[4])};
}

TEST_CASE("dependent bounds: the transform runs in declaration order, its log-Jacobian is exact") {
  const ParameterLayout layout = model_layout(kDependentModel);
  REQUIRE(layout.dimension() == 5);
  CHECK(layout.bounds[1].upper_fn == "nuts_bound_Params_b_upper");
  CHECK(layout.bounds[1].lower == 0.0f);
  CHECK(layout.bounds[3].upper_fn == layout.bounds[4].upper_fn);  // one bound for the array
  std::vector<std::vector<double>> points = random_points(45, -2.5, 2.5, 16, 5);
  const std::vector<float> jacobians =
      run_glue(layout, "nuts_log_jacobian", points, kDependentModel);
  const std::vector<float> constrained =
      run_glue(layout, "nuts_constrain", points, kDependentModel);
  for (size_t p = 0; p < points.size(); ++p) {
    CAPTURE(p);
    CHECK(jacobians[p] == doctest::Approx(numeric_log_jacobian(layout, points[p], dependent_map))
                              .epsilon(1e-4)
                              .scale(1.0));
    const std::vector<double> x = dependent_map(points[p]);
    for (size_t i = 0; i < x.size(); ++i)
      CHECK(constrained[p * x.size() + i] == doctest::Approx(x[i]).epsilon(1e-5).scale(1e-6));
    const float* c = &constrained[p * x.size()];
    CHECK((0 < c[1] && c[1] < 1 - c[0] && c[2] > c[0] && c[3] < 2 * c[0] - c[1]));
  }
}

// --init as Stan's: the point is in the constrained space, each coordinate checked against its
// bound computed from the earlier fields' values, then unconstrained in declaration order.
TEST_CASE("dependent bounds: --init round-trips, and a value off its computed bound is named") {
  const ParameterLayout layout = model_layout(kDependentModel);
  auto model = ab::sample::Model::compile(kDependentModel, "dependent.ab");
  REQUIRE_MESSAGE(model.ok(), model.error());
  const std::vector<std::vector<double>> points = random_points(46, -2.5, 2.5, 16, 5);
  const std::vector<float> x = run_glue(layout, "nuts_constrain", points, kDependentModel);
  std::vector<std::vector<double>> back;
  for (size_t p = 0; p < points.size(); ++p) {
    auto u = (*model)->unconstrain(std::span(x).subspan(p * 5, 5));
    REQUIRE_MESSAGE(u.ok(), u.error());
    back.emplace_back(u->begin(), u->end());
  }
  const std::vector<float> again = run_glue(layout, "nuts_constrain", back, kDependentModel);
  for (size_t i = 0; i < x.size(); ++i) {
    CAPTURE(i);
    CHECK(again[i] == doctest::Approx(x[i]).epsilon(1e-5).scale(1e-6));
  }
  // b's upper bound is 1 - a = 0.5; d's is 2a - b = 0.75.
  const std::vector<std::pair<std::vector<float>, std::string>> off = {
      {{0.5f, 0.6f, 1.0f, 0.0f, 0.0f},
       "b = 0.6 is not inside (0, 0.5) (its bound computed from the data and the fields before "
       "it)"},
      {{0.5f, 0.25f, 1.0f, 0.0f, 1.0f},
       "d[1] = 1 is not below its upper bound 0.75 (its bound computed from the data and the "
       "fields before it)"},
      {{0.5f, 0.25f, 0.5f, 0.0f, 0.0f},
       "c = 0.5 is not above its lower bound 0.5 (its bound computed from the data and the fields "
       "before it)"}};
  for (const auto& [point, message] : off) {
    auto refused = (*model)->unconstrain(point);
    REQUIRE_FALSE(refused.ok());
    CHECK(refused.error() == message);
  }
}

TEST_CASE("dependent bounds: a bound may read the data") {
  const std::string model =
      "uniform scale: float[2];\n"
      "struct Params { a: float<lower=scale[0], upper=scale[0] + scale[1]> }\n"
      "fn log_density(p: Params) -> float { return 0.0; }\n";
  const ParameterLayout layout = model_layout(model);
  CHECK(layout.bounds[0].lower_fn == "nuts_bound_Params_a_lower");
  const ab::UniformData data = {{std::bit_cast<uint32_t>(2.0f), std::bit_cast<uint32_t>(4.0f)}};
  const std::vector<std::vector<double>> points = {{0.0}, {1.5}};
  const std::vector<float> x = run_glue(layout, "nuts_constrain", points, model, data);
  const std::vector<float> j = run_glue(layout, "nuts_log_jacobian", points, model, data);
  for (size_t p = 0; p < points.size(); ++p) {
    const double inv_logit = 1 / (1 + std::exp(-points[p][0]));
    CHECK(x[p] == doctest::Approx(2 + 4 * inv_logit).epsilon(1e-6));
    CHECK(j[p] == doctest::Approx(std::log(4 * inv_logit * (1 - inv_logit))).epsilon(1e-5));
  }
  auto m = ab::sample::Model::compile(model, "data_bound.ab");
  REQUIRE_MESSAGE(m.ok(), m.error());
  auto inside = (*m)->unconstrain(std::vector<float>{3.0f}, data);
  REQUIRE_MESSAGE(inside.ok(), inside.error());
  CHECK(inside->at(0) == doctest::Approx(std::log(0.25 / 0.75)).epsilon(1e-6));
  auto outside = (*m)->unconstrain(std::vector<float>{7.0f}, data);
  REQUIRE_FALSE(outside.ok());
  CHECK(outside.error().rfind("a = 7 is not inside (2, 6)", 0) == 0);
}

}  // namespace
