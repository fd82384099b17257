// The linear algebra builtins (lang/linear_algebra.cpp, ir/linear_algebra.h; docs/language.md,
// "Linear algebra"): values against float64 references (support/linear_algebra_reference.h),
// the interpreter and the vm bit for bit, the upper triangle never read, a matrix that is not
// positive definite faulting its lane with the function named, and compile errors. Gradients
// against central differences are autodiff_cases.h's ("linear algebra"), and Vulkan's bits
// tests/engine/autodiff_vulkan_test.cpp's.
#include <doctest/doctest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "support/cpu_runs.h"
#include "support/linear_algebra_reference.h"

namespace ab::testing {
namespace {

// A symmetric positive definite n x n float matrix per lane: B B^T + n/4 I, B's elements in
// [-1, 1].
std::vector<float> spd_matrices(int n, int lanes, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  std::vector<float> out;
  for (int lane = 0; lane < lanes; ++lane) {
    std::vector<double> b(n * n);
    for (double& x : b)
      x = d(rng);
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < n; ++j) {
        double s = i == j ? n / 4.0 : 0.0;
        for (int k = 0; k < n; ++k)
          s += b[i * n + k] * b[j * n + k];
        out.push_back(static_cast<float>(s));
      }
  }
  return out;
}

std::vector<double> lane_matrix(const std::vector<float>& all, int n, int lane) {
  return std::vector<double>(all.begin() + lane * n * n, all.begin() + (lane + 1) * n * n);
}

// |got - want| within `relative` of the largest |want| (the matrices' scale).
void check_close(const std::vector<float>& got, const std::vector<double>& want, double relative) {
  REQUIRE(got.size() == want.size());
  double scale = 1.0;
  for (double w : want)
    scale = std::max(scale, std::fabs(w));
  for (size_t i = 0; i < got.size(); ++i) {
    CAPTURE(i);
    CHECK_MESSAGE(std::fabs(got[i] - want[i]) <= relative * scale, got[i], " against ", want[i]);
  }
}

std::vector<float> lane_slice(const std::vector<float>& all, size_t words, int lane) {
  return std::vector<float>(all.begin() + lane * words, all.begin() + (lane + 1) * words);
}

TEST_CASE("linear algebra: cholesky_decompose and mdivide_left_tri_low match float64") {
  for (const int n : {1, 3, 11, 20}) {
    CAPTURE(n);
    const std::string N = std::to_string(n);
    const int lanes = 6;
    const std::vector<float> a = spd_matrices(n, lanes, 7 + n);
    std::vector<float> b, c;
    std::mt19937 rng(n);
    std::uniform_real_distribution<float> d(-2.0f, 2.0f);
    for (int i = 0; i < lanes * n; ++i)
      b.push_back(d(rng));
    for (int i = 0; i < lanes * n * 2; ++i)
      c.push_back(d(rng));
    const RunResult r =
        run_both("fn main(a: float[" + N + "][" + N + "], b: float[" + N + "], c: float[" + N +
                     "][2]) -> float[" + std::to_string(n * n + 3 * n) +
                     "] {\n"
                     "    let l = cholesky_decompose(a);\n"
                     "    let x = mdivide_left_tri_low(l, b);\n"
                     "    let y = mdivide_left_tri_low(l, c);\n"
                     "    var out: float[" +
                     std::to_string(n * n + 3 * n) +
                     "];\n"
                     "    for i in 0.." +
                     N +
                     " {\n"
                     "        for j in 0.." +
                     N + " { out[i * " + N +
                     " + j] = l[i][j]; }\n"
                     "        out[" +
                     std::to_string(n * n) +
                     " + i] = x[i];\n"
                     "        out[" +
                     std::to_string(n * n + n) +
                     " + 2 * i] = y[i][0];\n"
                     "        out[" +
                     std::to_string(n * n + n) +
                     " + 2 * i + 1] = y[i][1];\n"
                     "    }\n"
                     "    return out;\n}\n",
                 float_batch({a, b, c}, lanes));
    REQUIRE_MESSAGE(r.errors.empty(), describe_error(r.errors.at(0)));
    const std::vector<float> out = float_outputs(r);
    const size_t words = n * n + 3 * n;
    for (int lane = 0; lane < lanes; ++lane) {
      CAPTURE(lane);
      const std::vector<float> got = lane_slice(out, words, lane);
      const Matrix l = cholesky_d(lane_matrix(a, n, lane), n);
      check_close({got.begin(), got.begin() + n * n}, l, 1e-5);
      for (int i = 0; i < n; ++i)
        for (int j = i + 1; j < n; ++j)
          CHECK(float_bits(got[i * n + j]) == 0u);  // +0 above the diagonal
      const std::vector<double> lb(b.begin() + lane * n, b.begin() + (lane + 1) * n);
      const std::vector<double> lc(c.begin() + lane * 2 * n, c.begin() + (lane + 1) * 2 * n);
      check_close({got.begin() + n * n, got.begin() + n * n + n}, tri_solve_d(l, lb, n), 1e-4);
      check_close({got.begin() + n * n + n, got.end()}, tri_solve_d(l, lc, n, 2), 1e-4);
    }
  }
}

TEST_CASE("linear algebra: the upper triangle is not read") {
  const std::vector<float> a = spd_matrices(4, 2, 3);
  std::vector<float> scribbled = a;
  for (int lane = 0; lane < 2; ++lane)
    for (int i = 0; i < 4; ++i)
      for (int j = i + 1; j < 4; ++j)
        scribbled[lane * 16 + i * 4 + j] = lane ? NAN : 1e30f;
  const char* source = R"(
fn main(a: float[4][4]) -> float[4][4] {
    return mdivide_left_tri_low(cholesky_decompose(a), [[1.0, 2.0, 3.0, 4.0], [0.5; 4], [-1.0; 4], a[3]]);
}
)";
  const RunResult clean = run_both(source, float_batch({a}, 2));
  const RunResult dirty = run_both(source, float_batch({scribbled}, 2));
  REQUIRE_MESSAGE(clean.errors.empty(), describe_error(clean.errors.at(0)));
  CHECK(clean.outputs == dirty.outputs);
}

TEST_CASE("linear algebra: gp_exp_quad_cov, add_diag and multi_normal_cholesky_lpdf") {
  // float64 from the float32 arguments the program gets
  const std::vector<double> x = {-10, -8, -6, -4, -2, 0, 2, 4, 6, 8, 10};
  const double alpha = 2.4f, rho = 6.9f, sigma = 1.8f;
  const std::vector<double> y = {4.76f, 1.59f, 3.0f,  5.28f, 1.66f, 2.24f,
                                 2.89f, 4.09f, 4.61f, 0.8f,  3.92f};
  Matrix k = exp_quad_cov_d(x, alpha, rho);
  for (int i = 0; i < 11; ++i)
    k[i * 11 + i] += sigma;
  const Matrix l = cholesky_d(k, 11);
  const std::vector<double> zero(11, 0.0), mu = {0.5, -1, 0, 0, 1, 2, 0, 0, 0, 0, -0.25};  // exact
  const RunResult r = run_both(R"(
uniform x: float[11];
uniform y: float[11];
fn main(alpha: float, rho: float, sigma: float) -> float[8] {
    let k = gp_exp_quad_cov(x, alpha, rho);
    let l = cholesky_decompose(add_diag(k, sigma));
    let mu = [0.5, -1.0, 0.0, 0.0, 1.0, 2.0, 0.0, 0.0, 0.0, 0.0, -0.25];
    let twice = [y, mu];
    let diag = add_diag(k, [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0]);
    return [k[0][0], k[2][5], cov_exp_quad(x, alpha, rho)[2][5], diag[3][3] - k[3][3],
            diag[3][4] - k[3][4], multi_normal_cholesky_lpdf(y | [0.0; 11], l),
            multi_normal_cholesky_lpdf(twice | mu, l), multi_normal_cholesky_lpdf(mu | twice, l)];
}
)",
                               [&] {
                                 Batch b = float_batch({{2.4f}, {6.9f}, {1.8f}});
                                 for (const auto* u : {&x, &y}) {
                                   std::vector<uint32_t> words;
                                   for (double v : *u)
                                     words.push_back(float_bits(static_cast<float>(v)));
                                   b.uniforms.push_back(words);
                                 }
                                 return b;
                               }());
  REQUIRE_MESSAGE(r.errors.empty(), describe_error(r.errors.at(0)));
  const std::vector<float> out = float_outputs(r);
  CHECK(out[0] == 2.4f * 2.4f);  // alpha^2 on the diagonal, exactly
  CHECK(out[1] == doctest::Approx(k[2 * 11 + 5]).epsilon(1e-6));
  CHECK(float_bits(out[2]) == float_bits(out[1]));  // cov_exp_quad is the same function
  CHECK(out[3] == 4.0f);
  CHECK(out[4] == 0.0f);
  const double want_zero = multi_normal_cholesky_d(y, zero, l);
  CHECK(out[5] == doctest::Approx(want_zero).epsilon(1e-5));
  // rows: y and mu's own density, and mu against itself (0 apart); the vector is every row's.
  const double rows = multi_normal_cholesky_d(y, mu, l) + multi_normal_cholesky_d(mu, mu, l);
  CHECK(out[6] == doctest::Approx(rows).epsilon(1e-5));
  CHECK(float_bits(out[7]) == float_bits(out[6]));
}

TEST_CASE("linear algebra: log_determinant of a Cholesky factor and log_determinant_spd") {
  for (const int n : {1, 4, 11}) {
    CAPTURE(n);
    const std::string N = std::to_string(n);
    const int lanes = 5;
    const std::vector<float> a = spd_matrices(n, lanes, 31 + n);
    const RunResult r = run_both("fn main(a: float[" + N + "][" + N +
                                     "]) -> float[3] {\n"
                                     "    let l = cholesky_decompose(a);\n"
                                     "    return [log_determinant(l), log_determinant_spd(a), "
                                     "log_determinant(-1.0 * l)];\n}\n",
                                 float_batch({a}, lanes));
    REQUIRE_MESSAGE(r.errors.empty(), describe_error(r.errors.at(0)));
    const std::vector<float> out = float_outputs(r);
    for (int lane = 0; lane < lanes; ++lane) {
      CAPTURE(lane);
      const Matrix l = cholesky_d(lane_matrix(a, n, lane), n);
      const double want = log_determinant_d(l, n);  // log det A = 2 want
      CHECK(out[3 * lane] == doctest::Approx(want).epsilon(1e-5).scale(1.0));
      CHECK(out[3 * lane + 1] == doctest::Approx(2 * want).epsilon(1e-5).scale(1.0));
      CHECK(float_bits(out[3 * lane + 2]) == float_bits(out[3 * lane]));  // |det|: signs drop
    }
  }
  // Above the diagonal a non-zero faults the lane (a general matrix's determinant needs LU); a
  // zero on the diagonal is log 0 = -inf, as Stan's.
  const RunResult r = run_both(R"(
fn main(u: float, d: float) -> float {
    return log_determinant([[2.0, u, 0.0], [1.0, d, 0.0], [-3.0, 0.5, 0.25]]);
}
)",
                               float_batch({{0.0f, -0.0f, 1e-30f, NAN}, {4.0f, 4.0f, 4.0f, 0.0f}}));
  CHECK(bits_float(r.outputs[0]) == doctest::Approx(std::log(2.0)).epsilon(1e-6));  // 2 4 / 4
  CHECK(bits_float(r.outputs[1]) == bits_float(r.outputs[0]));
  REQUIRE(r.errors.size() == 2);
  for (const LaneError& e : r.errors) {
    CHECK(e.code == Fault::AssertFailed);
    CHECK(e.line == 3);
    CHECK(e.detail ==
          "log_determinant: A must be lower triangular (a Cholesky factor; a general "
          "matrix's determinant is not there yet)");
  }
  const RunResult singular =
      run_both("fn main(d: float) -> float { return log_determinant([[1.0, 0.0], [5.0, d]]); }",
               float_batch({{0.0f}}));
  REQUIRE(singular.errors.empty());
  CHECK(bits_float(singular.outputs[0]) == -INFINITY);
  const RunResult not_spd =
      run_both("fn main(d: float) -> float { return log_determinant_spd([[1.0, 0.0], [2.0, d]]); }",
               float_batch({{5.0f, 3.0f}}));
  CHECK(bits_float(not_spd.outputs[0]) == 0.0f);  // det [[1, 2], [2, 5]] = 1
  REQUIRE(not_spd.errors.size() == 1);
  CHECK(not_spd.errors[0].detail ==
        "log_determinant_spd: A must be symmetric positive definite (its factor's diagonal "
        "positive and finite)");
}

TEST_CASE("linear algebra: a matrix that is not positive definite faults its lane") {
  const char* source = R"(
fn main(d: float) -> float {
    let l = cholesky_decompose([[1.0, 0.0], [2.0, d]]);
    return l[1][1];
}
)";
  // d = 5: L = [[1, 0], [2, 1]]; d = 4 leaves 0 on the diagonal, d = 3 a negative, NaN a NaN.
  const RunResult r = run_both(source, float_batch({{5.0f, 4.0f, 3.0f, NAN, INFINITY}}));
  CHECK(bits_float(r.outputs[0]) == 1.0f);
  REQUIRE(r.errors.size() == 4);
  for (const LaneError& e : r.errors) {
    CHECK(e.code == Fault::AssertFailed);
    CHECK(e.line == 3);
    CHECK(e.detail ==
          "cholesky_decompose: A must be symmetric positive definite (its factor's diagonal "
          "positive and finite)");
  }
  const RunResult bad_args = run_both(R"(
fn main(v: float) -> float[3] {
    return [gp_exp_quad_cov([0.0, v], 1.0, 1.0)[0][1], gp_exp_quad_cov([0.0, 1.0], v, 1.0)[0][1],
            multi_normal_cholesky_lpdf([v, 0.0] | [0.0, 0.0], [[1.0, 0.0], [0.0, 1.0]])];
}
)",
                                      float_batch({{1.0f, NAN}}));
  REQUIRE(bad_args.errors.size() == 1);
  CHECK(bad_args.errors[0].detail == "gp_exp_quad_cov: x must not be NaN");
}

// K = 2: the correlation r = L[1][0] has density (1 - r^2)^(eta - 1) / B(1/2, eta) on (-1, 1),
// and L[1][1] = sqrt(1 - r^2) is fixed by it, so the density of L is r's. K = 3: Stan's
// constant at eta = 1, log 2 - 2 log pi, and (3 - 1 - 1) log L[1][1] + 0 log L[2][2].
TEST_CASE("linear algebra: lkj_corr_cholesky_lpdf matches its closed forms") {
  const RunResult r = run_both(R"(
fn main(r: float, eta: float) -> float[2] {
    let l2 = [[1.0, 0.0], [r, sqrt(1.0 - r * r)]];
    let l3 = [[1.0, 0.0, 0.0], [0.6, 0.8, 0.0], [r, 0.0, sqrt(1.0 - r * r)]];
    return [lkj_corr_cholesky_lpdf(l2 | eta), lkj_corr_cholesky_lpdf(l3 | 1.0)];
}
)",
                               float_batch({{0.0f, 0.5f, -0.9f, 0.3f}, {1.0f, 2.5f, 0.7f, 40.0f}}));
  REQUIRE(r.errors.empty());
  const std::vector<float> out = float_outputs(r);
  const double rs[] = {0.0, 0.5, -0.9, 0.3}, etas[] = {1.0, 2.5, 0.7, 40.0};
  for (int lane = 0; lane < 4; ++lane) {
    CAPTURE(lane);
    const double rr = static_cast<float>(rs[lane]), eta = static_cast<float>(etas[lane]);
    const double log_beta = std::lgamma(0.5) + std::lgamma(eta) - std::lgamma(eta + 0.5);
    const double want = (eta - 1) * std::log1p(-rr * rr) - log_beta;
    CHECK(out[2 * lane] == doctest::Approx(want).epsilon(2e-6).scale(1.0));
    CHECK(out[2 * lane + 1] ==
          doctest::Approx(std::log(2.0) - 2 * std::log(M_PI) + std::log(0.8)).epsilon(2e-6));
  }
  CHECK(run_both("fn main(eta: float) -> float { return lkj_corr_cholesky_lpdf([[1.0, 0.0], "
                 "[0.0, 1.0]] | eta); }",
                 float_batch({{1.0f, 0.0f}}))
            .errors.at(0)
            .detail == "lkj_corr_cholesky_lpdf: eta must be finite and > 0");
}

TEST_CASE("linear algebra: cholesky_factor_corr is a float[K][K] field of the parameters") {
  CHECK(compile_errors("struct P { l: cholesky_factor_corr[3] }\n"
                       "fn main(p: P) -> float { return lkj_corr_cholesky_lpdf(p.l | 2.0); }")
            .empty());
  CHECK(compile_errors("struct P { l: cholesky_factor_corr[1] }\nfn main(p: P) -> float { "
                       "return 0.0; }")
            .find("a cholesky_factor_corr needs K >= 2") != std::string::npos);
  CHECK(compile_errors("struct P { l: cholesky_factor_corr[2][3] }\nfn main(p: P) -> float { "
                       "return 0.0; }")
            .find("'cholesky_factor_corr' takes one length") != std::string::npos);
  CHECK(compile_errors("fn main(l: cholesky_factor_corr[2]) -> float { return 0.0; }")
            .find("'cholesky_factor_corr' is a constrained parameter type") != std::string::npos);
}

TEST_CASE("linear algebra: shapes and types are compile errors naming the function") {
  CHECK(compile_errors("fn main(a: float[2][3]) -> float { return cholesky_decompose(a)[0][0]; }")
            .find("argument 1 of 'cholesky_decompose' (A) must be a square float matrix "
                  "'float[N][N]', found 'float[2][3]'") != std::string::npos);
  CHECK(compile_errors("fn main(a: float[2][2]) -> float[3] { return mdivide_left_tri_low(a, "
                       "[1.0, 2.0, 3.0]); }")
            .find("'mdivide_left_tri_low' needs a square float matrix 'float[N][N]' and a float "
                  "vector 'float[N]' or matrix 'float[N][P]' of as many rows, found "
                  "'float[2][2]' and 'float[3]'") != std::string::npos);
  CHECK(compile_errors("fn main(a: float[2][2]) -> float { return multi_normal_cholesky_lpdf("
                       "[1.0, 2.0, 3.0] | [0.0, 0.0, 0.0], a); }")
            .find("'multi_normal_cholesky_lpdf' needs y and mu of L's 2 elements") !=
        std::string::npos);
  CHECK(compile_errors("fn main(a: float[2][2]) -> float[2][2] { return add_diag(a, [1.0, 2.0, "
                       "3.0]); }")
            .find("argument 2 of 'add_diag' (d) must have the matrix's 2 elements, found "
                  "'float[3]'") != std::string::npos);
  CHECK(compile_errors("fn main(x: float[3][2]) -> float { return gp_exp_quad_cov(x, 1.0, "
                       "1.0)[0][0]; }")
            .find("argument 1 of 'gp_exp_quad_cov' (x) must be a float array 'float[N]'") !=
        std::string::npos);
  CHECK(compile_errors("fn cholesky_decompose(x: float) -> float { return x; }\n"
                       "fn main(x: float) -> float { return x; }")
            .find("cholesky_decompose") != std::string::npos);
}

}  // namespace
}  // namespace ab::testing
