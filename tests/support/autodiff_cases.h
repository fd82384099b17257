// Programs for the automatic differentiation tests (tests/ir/autodiff_test.cpp,
// tests/engine/autodiff_vulkan_test.cpp): each defines `fn f(x: float[K]) -> float` plus helpers,
// with the same function written in C++ over doubles, so derived gradients can be checked against
// central finite differences of a float64 reference. `program()` adds the entries:
// `main(x) -> float[K]` (grad), `value(x) -> float` (f itself) and `both(x) -> float[K + 1]`
// (value_and_grad's value, then its gradient).
#pragma once

#include <algorithm>
#include <cmath>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "autobatch/numerics.h"
#include "support/linear_algebra_reference.h"

namespace ab::testing {

struct AutodiffCase {
  const char* name;
  int k;  // x's length
  const char* source;
  std::function<double(const std::vector<double>&)> reference;
  double lo = -2.0, hi = 2.0;  // where the random points lie
};

inline std::string autodiff_program(const AutodiffCase& c) {
  const std::string k = std::to_string(c.k);
  return std::string(c.source) + "\nfn main(x: float[" + k + "]) -> float[" + k +
         "] { return grad(f, x); }\nfn value(x: float[" + k +
         "]) -> float { return f(x); }\nfn both(x: float[" + k + "]) -> float[" +
         std::to_string(c.k + 1) + "] {\n    let vg = value_and_grad(f, x);\n    var out: float[" +
         std::to_string(c.k + 1) + "];\n    out[0] = vg.value;\n    for i in 0.." + k +
         " { out[i + 1] = vg.grad[i]; }\n    return out;\n}\n";
}

inline double lgamma_d(double v) {
  return std::lgamma(v);
}

// The cases: every construct the language differentiates through.
inline const std::vector<AutodiffCase>& autodiff_cases() {
  static const std::vector<AutodiffCase> cases = {
      {"arithmetic and math builtins", 3, R"(
fn f(x: float[3]) -> float {
    let a = x[0] * x[1] - x[2] / (1.5 + x[0] * x[0]);
    let b = exp(0.3 * x[0]) + log(2.0 + sin(x[1])) * cos(x[2]) + tanh(x[0] - x[2]);
    let c = sqrt(4.0 + x[1] * x[1]) + pow(1.5 + abs(x[2]), 1.7) + pow(2.0, x[0]);
    let d = min(x[0], x[1]) * max(x[1], x[2]) + clamp(x[0] + x[2], -1.0, 1.0);
    return a + b - c * 0.25 + d - x[1];
}
)",
       [](const std::vector<double>& x) {
         const double a = x[0] * x[1] - x[2] / (1.5 + x[0] * x[0]);
         const double b = std::exp(0.3 * x[0]) + std::log(2.0 + std::sin(x[1])) * std::cos(x[2]) +
                          std::tanh(x[0] - x[2]);
         const double c = std::sqrt(4.0 + x[1] * x[1]) + std::pow(1.5 + std::fabs(x[2]), 1.7) +
                          std::pow(2.0, x[0]);
         const double d = std::min(x[0], x[1]) * std::max(x[1], x[2]) +
                          std::min(std::max(x[0] + x[2], -1.0), 1.0);
         return a + b - c * 0.25 + d - x[1];
       }},
      {"special functions", 3, R"(
fn f(x: float[3]) -> float {
    let p = 1.5 + x[0] * x[0];
    return lgamma(p) + digamma(2.0 + x[1] * x[1]) + log1p(x[1] * x[1]) + expm1(0.5 * x[2])
        + log1p_exp(3.0 * x[0]) + log_sum_exp(x[0], 2.0 * x[1]) + erf(x[2]) - erfc(x[1])
        + inv_logit(x[0] - x[2]);
}
)",
       [](const std::vector<double>& x) {
         const double p = 1.5 + x[0] * x[0];
         const double q = 2.0 + x[1] * x[1];
         // digamma by the recurrence and asymptotic series
         double acc = 0.0, y = q;
         while (y < 30.0)
           acc -= 1.0 / y, y += 1.0;
         const double r = 1.0 / y, z = r * r;
         const double psi = acc + std::log(y) - 0.5 * r -
                            z * (1.0 / 12 - z * (1.0 / 120 - z * (1.0 / 252 - z / 240)));
         const double a = x[0], b = 2.0 * x[1], m = std::max(a, b);
         return std::lgamma(p) + psi + std::log1p(x[1] * x[1]) + std::expm1(0.5 * x[2]) +
                std::log1p(std::exp(3.0 * x[0])) + m + std::log(std::exp(a - m) + std::exp(b - m)) +
                std::erf(x[2]) - std::erfc(x[1]) + 1.0 / (1.0 + std::exp(-(x[0] - x[2])));
       }},
      {"let, var, arrays and structs", 4, R"(
struct Pair { u: float, v: float[2], n: int }
fn f(x: float[4]) -> float {
    var a: float[4] = x * 2.0 - 1.0;
    a[1] = a[0] * a[3];
    var s = Pair { u: x[2], v: [x[0], x[1] * x[1]], n: 3 };
    s.v[1] = s.v[1] + s.u * float(s.n);
    let w = [1.0, -2.0, 0.5, 3.0];
    var m: float[2][2];
    m[0][1] = x[3];
    m[1][0] = dot(a, w);
    return dot(a, x) + sum(a * a) * 0.1 + s.v[1] * s.v[0] + m[1][0] * m[0][1] - m[0][0];
}
)",
       [](const std::vector<double>& x) {
         double a[4];
         for (int i = 0; i < 4; ++i)
           a[i] = x[i] * 2.0 - 1.0;
         a[1] = a[0] * a[3];
         const double u = x[2], v0 = x[0];
         const double v1 = x[1] * x[1] + u * 3.0;
         const double w[4] = {1.0, -2.0, 0.5, 3.0};
         double da = 0, dx = 0, sa = 0;
         for (int i = 0; i < 4; ++i)
           da += a[i] * w[i], dx += a[i] * x[i], sa += a[i] * a[i];
         return dx + sa * 0.1 + v1 * v0 + da * x[3];
       }},
      {"if and else take the branch", 2, R"(
fn f(x: float[2]) -> float {
    var y = 0.0;
    if x[0] > 0.3 {
        y = x[0] * x[1];
    } else if x[1] < -0.5 {
        y = exp(x[0]) - x[1];
        y = y * y;
    } else {
        y = sin(x[1]) * 3.0;
    }
    if x[0] * x[1] > 0.0 { y = y + x[0]; }
    return y + float(x[1] > 0.0) * 2.0 + floor(x[0]);
}
)",
       [](const std::vector<double>& x) {
         double y = 0;
         if (x[0] > 0.3)
           y = x[0] * x[1];
         else if (x[1] < -0.5)
           y = (std::exp(x[0]) - x[1]) * (std::exp(x[0]) - x[1]);
         else
           y = std::sin(x[1]) * 3.0;
         if (x[0] * x[1] > 0.0) y += x[0];
         return y + (x[1] > 0.0 ? 2.0 : 0.0) + std::floor(x[0]);
       }},
      {"loops whose trip count depends on the parameter", 3, R"(
fn f(x: float[3]) -> float {
    let n = int(abs(x[0]) * 4.0) + 1;
    var acc = 0.5;
    for i in 0..n {
        acc = acc * 0.9 + sin(acc + x[i % 3]) * x[1];
    }
    var t = 1.0 + x[2] * x[2];
    var s = 0.0;
    while t < 9.0 {
        t = t * 1.5 + 0.25;
        s += log(t) * x[0];
    }
    return acc + s;
}
)",
       [](const std::vector<double>& x) {
         const int n = static_cast<int>(static_cast<float>(std::fabs(x[0])) * 4.0f) + 1;
         double acc = 0.5;
         for (int i = 0; i < n; ++i)
           acc = acc * 0.9 + std::sin(acc + x[i % 3]) * x[1];
         double t = 1.0 + x[2] * x[2], s = 0.0;
         while (t < 9.0)
           t = t * 1.5 + 0.25, s += std::log(t) * x[0];
         return acc + s;
       }},
      {"calls, calls in loops, recursion and nested loops", 2, R"(
fn sq(a: float) -> float { return a * a; }
fn scaled(v: float[2], k: float) -> float[2] { return v * k; }
fn pw(a: float, n: int) -> float {
    if n == 0 { return 1.0; }
    return a * pw(a, n - 1);
}
fn f(x: float[2]) -> float {
    var s = 0.0;
    for i in 0..3 {
        for j in 0..i + 1 {
            s = s + sq(x[0] - float(j)) * 0.1 + pw(x[1], i);
        }
    }
    let v = scaled(x, x[0]);
    return s + v[1] + sq(v[0]);
}
)",
       [](const std::vector<double>& x) {
         double s = 0.0;
         for (int i = 0; i < 3; ++i)
           for (int j = 0; j <= i; ++j)
             s = s + (x[0] - j) * (x[0] - j) * 0.1 + std::pow(x[1], i);
         return s + x[1] * x[0] + x[0] * x[0] * x[0] * x[0];
       }},
      {"sums over rows, preaccumulated", 3, R"(
fn f(x: float[3]) -> float {
    let rows = [[0.5, -1.0, 0.25], [1.5, 0.5, -0.5], [-0.75, 0.25, 1.0], [0.1, 0.2, 0.3]];
    let ys = [1.0, 0.0, 1.0, 1.0];
    var total = -0.5 * dot(x, x);
    for b in 0..2 {
        var part = 0.0;
        for i in b * 2..b * 2 + 2 {
            let z = dot(rows[i], x);
            part += ys[i] * z - log1p_exp(z);
        }
        total += part;
    }
    var t = 0.0;
    var k = 0;
    while k < 3 {
        t -= sin(x[k]) * x[0];
        k += 1;
    }
    return total + t;
}
)",
       [](const std::vector<double>& x) {
         const double rows[4][3] = {
             {0.5, -1.0, 0.25}, {1.5, 0.5, -0.5}, {-0.75, 0.25, 1.0}, {0.1, 0.2, 0.3}};
         const double ys[4] = {1.0, 0.0, 1.0, 1.0};
         double total = -0.5 * (x[0] * x[0] + x[1] * x[1] + x[2] * x[2]);
         for (int i = 0; i < 4; ++i) {
           const double z = rows[i][0] * x[0] + rows[i][1] * x[1] + rows[i][2] * x[2];
           total += ys[i] * z - std::log1p(std::exp(z));
         }
         double t = 0.0;
         for (int k = 0; k < 3; ++k)
           t -= std::sin(x[k]) * x[0];
         return total + t;
       }},
      // A struct parameter read inside a preaccumulated sum: the loop's partial is a struct, its
      // adjoint scaled field by field (a Poisson regression once got a garbage gradient here).
      {"sums over rows that read a struct's fields", 4, R"(
struct Coef { a: float, b: float[2] }
struct Model { c: Coef, s: float, n: int }
fn g(m: Model) -> float {
    let xs = [0.5, -1.0, 0.25, 1.5];
    var lp = -0.5 * m.s * m.s;
    for i in 0..4 {
        let eta = m.c.a + m.c.b[0] * xs[i] + m.c.b[1] * xs[i] * xs[i];
        lp += xs[i] * eta - exp(eta) * m.s;
    }
    return lp;
}
fn f(x: float[4]) -> float {
    return g(Model { c: Coef { a: x[0], b: [x[1], x[2]] }, s: x[3], n: 3 });
}
)",
       [](const std::vector<double>& x) {
         const double xs[4] = {0.5, -1.0, 0.25, 1.5};
         double lp = -0.5 * x[3] * x[3];
         for (double v : xs) {
           const double eta = x[0] + x[1] * v + x[2] * v * v;
           lp += v * eta - std::exp(eta) * x[3];
         }
         return lp;
       },
       -1.0, 1.0},
      {"matrix products, transpose and one-array reductions", 6, R"(
fn f(x: float[6]) -> float {
    let a = [[x[0], x[1], 0.5], [x[2], -1.0, x[3]]];
    let v = [x[4], x[5], 1.5];
    let z = a @ v;
    let u = z @ a;
    let b = a @ transpose(a);
    let c = transpose(a) @ b;
    return 0.1 * sum(z * z) + 0.05 * dot(u, v) + log_sum_exp(u) + max(v) - min(z) + mean(c)
        + b[0][1];
}
)",
       [](const std::vector<double>& x) {
         const double a[2][3] = {{x[0], x[1], 0.5}, {x[2], -1.0, x[3]}};
         const double v[3] = {x[4], x[5], 1.5};
         double z[2] = {}, u[3] = {}, b[2][2] = {}, c[3][2] = {};
         for (int i = 0; i < 2; ++i)
           for (int k = 0; k < 3; ++k)
             z[i] += a[i][k] * v[k];
         for (int k = 0; k < 3; ++k)
           for (int i = 0; i < 2; ++i)
             u[k] += z[i] * a[i][k];
         for (int i = 0; i < 2; ++i)
           for (int j = 0; j < 2; ++j)
             for (int k = 0; k < 3; ++k)
               b[i][j] += a[i][k] * a[j][k];
         for (int k = 0; k < 3; ++k)
           for (int j = 0; j < 2; ++j)
             for (int i = 0; i < 2; ++i)
               c[k][j] += a[i][k] * b[i][j];
         const double m = std::max({u[0], u[1], u[2]});
         const double lse =
             m + std::log(std::exp(u[0] - m) + std::exp(u[1] - m) + std::exp(u[2] - m));
         double mean_c = 0.0;
         for (const auto& row : c)
           mean_c += (row[0] + row[1]) / 6.0;
         return 0.1 * (z[0] * z[0] + z[1] * z[1]) +
                0.05 * (u[0] * v[0] + u[1] * v[1] + u[2] * v[2]) + lse +
                std::max({v[0], v[1], v[2]}) - std::min(z[0], z[1]) + mean_c + b[0][1];
       }},
      {"a product past one summation block", 70, R"(
fn f(x: float[70]) -> float {
    var a: float[2][70];
    for i in 0..70 {
        a[0][i] = x[i];
        a[1][i] = sin(x[i]);
    }
    let z = a @ x;
    return log_sum_exp(z) + 0.01 * sum(transpose(a) @ z);
}
)",
       [](const std::vector<double>& x) {
         double z[2] = {};
         for (int i = 0; i < 70; ++i) {
           z[0] += x[i] * x[i];
           z[1] += std::sin(x[i]) * x[i];
         }
         const double m = std::max(z[0], z[1]);
         double rest = 0.0;
         for (int i = 0; i < 70; ++i)
           rest += x[i] * z[0] + std::sin(x[i]) * z[1];
         return m + std::log(std::exp(z[0] - m) + std::exp(z[1] - m)) + 0.01 * rest;
       },
       -0.5, 0.5},
      // Sums that read the parameter at the loop index and call a user function per row
      // (issue 40): preaccumulated like any other sum.
      {"sums over rows that index the parameter and call a function", 4, R"(
fn row_lpdf(y: float, mu: float, log_sigma: float) -> float {
    let z = (y - mu) / exp(log_sigma);
    return -0.5 * z * z - log_sigma;
}
fn f(x: float[4]) -> float {
    let ys = [0.5, -1.0, 0.25, 1.5];
    var lp = 0.0;
    for i in 0..4 {
        lp += -0.5 * (ys[i] - x[i]) * (ys[i] - x[i]);
    }
    for i in 0..4 {
        lp += row_lpdf(ys[i], x[0], 0.5 * x[3]);
    }
    for t in 2..4 {
        var mu = x[2];
        for k in 0..2 {
            mu += x[k] * ys[t - k - 1];
        }
        lp += -0.5 * (ys[t] - mu) * (ys[t] - mu);
    }
    return lp;
}
)",
       [](const std::vector<double>& x) {
         const double ys[4] = {0.5, -1.0, 0.25, 1.5};
         double lp = 0.0;
         for (int i = 0; i < 4; ++i)
           lp += -0.5 * (ys[i] - x[i]) * (ys[i] - x[i]);
         for (double y : ys) {
           const double z = (y - x[0]) / std::exp(0.5 * x[3]);
           lp += -0.5 * z * z - 0.5 * x[3];
         }
         for (int t = 2; t < 4; ++t) {
           double mu = x[2];
           for (int k = 0; k < 2; ++k)
             mu += x[k] * ys[t - k - 1];
           lp += -0.5 * (ys[t] - mu) * (ys[t] - mu);
         }
         return lp;
       }},
      // log_sum_exp of log densities the size of a million rows' (issue 40): its weights come
      // from a - b, which is exact, not from a - log_sum_exp(a, b), which keeps no low bits.
      {"log_sum_exp at large magnitudes", 2, R"(
fn f(x: float[2]) -> float {
    return log_sum_exp(x[0], x[0] - 1.0) + sum(log_sum_exp(x, x - 2.0))
           + 0.5 * log_sum_exp(x[1] - 3.0, x[1]) + log_sum_exp([x[0], x[0] - 1.0, x[1]]);
}
)",
       [](const std::vector<double>& x) {
         const auto lse = [](double a, double b) {
           return std::max(a, b) + std::log1p(std::exp(-std::fabs(a - b)));
         };
         return lse(x[0], x[0] - 1.0) + lse(x[0], x[0] - 2.0) + lse(x[1], x[1] - 2.0) +
                0.5 * lse(x[1] - 3.0, x[1]) + lse(lse(x[0], x[0] - 1.0), x[1]);
       },
       -2e7, -1e5},
      // log1m(x) = ln(1 - x), elementwise too; its derivative is -1 / (1 - x).
      {"log1m", 2, R"(
fn f(x: float[2]) -> float {
    return log1m(x[0]) + 2.0 * log1m(x[1] * x[1]) + sum(log1m(x * 0.5));
}
)",
       [](const std::vector<double>& x) {
         return std::log1p(-x[0]) + 2.0 * std::log1p(-x[1] * x[1]) + std::log1p(-0.5 * x[0]) +
                std::log1p(-0.5 * x[1]);
       },
       -0.9, 0.9},
      // Stan's distributions (lang/distributions.h), vectorised and scalar: their gradients
      // derive through the ops they are composed of.
      {"continuous densities", 3, R"(
fn f(x: float[3]) -> float {
    let ys = [0.5, -1.0, 2.0];
    let pos = [0.5, 1.5, 3.0];
    let sigma = exp(x[1]);
    let a = exp(x[2]);
    return normal_lpdf(ys | x[0], sigma) + std_normal_lpdf(x)
        + student_t_lpdf(ys | 3.0 + a, x[0], sigma) + cauchy_lpdf(x[2] | x[0], sigma)
        + double_exponential_lpdf(3.0 | x[0], sigma) + logistic_lpdf(ys | x[0], sigma)
        + lognormal_lpdf(pos | x[0], sigma) + exponential_lpdf(pos | a)
        + gamma_lpdf(pos | a, sigma) + inv_gamma_lpdf(pos | a, sigma)
        + weibull_lpdf(pos | a, sigma) + beta_lpdf(inv_logit(x[0]) | sigma, a)
        + uniform_lpdf(0.1 | -1.0 - a, 2.0) + chi_square_lpdf(pos | 1.0 + a)
        + dirichlet_lpdf([[exp(x[0]) / (exp(x[0]) + 1.0 + a), 1.0 / (exp(x[0]) + 1.0 + a),
                           a / (exp(x[0]) + 1.0 + a)], [0.2, 0.3, 0.5]] | [sigma, a, 2.0]);
}
)",
       [](const std::vector<double>& x) {
         const double ln2pi = std::log(2 * M_PI);
         const double ys[3] = {0.5, -1.0, 2.0}, pos[3] = {0.5, 1.5, 3.0};
         const double mu = x[0], sigma = std::exp(x[1]), a = std::exp(x[2]), nu = 3.0 + a;
         double lp = 0;
         for (double xi : x)
           lp += -0.5 * xi * xi - 0.5 * ln2pi;
         for (double y : ys) {
           const double z = (y - mu) / sigma;
           lp += -0.5 * z * z - std::log(sigma) - 0.5 * ln2pi;
           lp += std::lgamma((nu + 1) / 2) - std::lgamma(nu / 2) - 0.5 * std::log(nu * M_PI) -
                 std::log(sigma) - (nu + 1) / 2 * std::log1p(z * z / nu);
           lp += -z - std::log(sigma) - 2 * std::log1p(std::exp(-z));
         }
         const double zc = (x[2] - mu) / sigma;
         lp += -std::log(M_PI * sigma * (1 + zc * zc));
         lp += -std::log(2 * sigma) - std::fabs(3.0 - mu) / sigma;
         for (double y : pos) {
           const double zl = (std::log(y) - mu) / sigma;
           lp += -0.5 * zl * zl - std::log(y * sigma) - 0.5 * ln2pi;
           lp += std::log(a) - a * y;
           lp += a * std::log(sigma) - std::lgamma(a) + (a - 1) * std::log(y) - sigma * y;
           lp += a * std::log(sigma) - std::lgamma(a) - (a + 1) * std::log(y) - sigma / y;
           lp += std::log(a / sigma) + (a - 1) * std::log(y / sigma) - std::pow(y / sigma, a);
           const double k = (1.0 + a) / 2;
           lp += (k - 1) * std::log(y) - y / 2 - std::lgamma(k) - k * std::log(2.0);
         }
         const double theta = 1 / (1 + std::exp(-mu));
         lp += std::lgamma(sigma + a) - std::lgamma(sigma) - std::lgamma(a) +
               (sigma - 1) * std::log(theta) + (a - 1) * std::log1p(-theta);
         lp += -std::log(3.0 + a);
         const double total = std::exp(mu) + 1 + a, alpha[3] = {sigma, a, 2.0};
         const double simplex[2][3] = {{std::exp(mu) / total, 1 / total, a / total},
                                       {0.2, 0.3, 0.5}};
         for (const auto& row : simplex) {
           lp += std::lgamma(sigma + a + 2.0);
           for (int i = 0; i < 3; ++i)
             lp += (alpha[i] - 1) * std::log(row[i]) - std::lgamma(alpha[i]);
         }
         return lp;
       },
       -1.0, 1.0},
      {"discrete mass functions", 3, R"(
fn f(x: float[3]) -> float {
    let p = inv_logit(x[1]);
    let lambda = exp(x[2]);
    return bernoulli_lpmf([0, 1, 1] | p) + bernoulli_logit_lpmf([1, 0, 1] | x)
        + binomial_lpmf([2, 5] | 7, p) + binomial_logit_lpmf(3 | [4, 9], x[0])
        + poisson_lpmf([0, 3, 7] | lambda) + poisson_log_lpmf(4 | x)
        + neg_binomial_2_lpmf([0, 4] | lambda, exp(x[0]))
        + neg_binomial_2_log_lpmf(6 | x[2], 2.0 + p)
        + categorical_logit_lpmf([1, 3, 2] | x) + categorical_logit_lpmf(2 | x);
}
)",
       [](const std::vector<double>& x) {
         auto lchoose = [](double n, double k) {
           return std::lgamma(n + 1) - std::lgamma(k + 1) - std::lgamma(n - k + 1);
         };
         auto nb2 = [&](double n, double mu, double phi) {
           return lchoose(n + phi - 1, n) + n * std::log(mu / (mu + phi)) +
                  phi * std::log(phi / (mu + phi));
         };
         auto log_inv_logit = [](double a) { return -std::log1p(std::exp(-a)); };
         const double p = 1 / (1 + std::exp(-x[1])), lambda = std::exp(x[2]);
         double lp = std::log(1 - p) + 2 * std::log(p);
         lp += log_inv_logit(x[0]) + log_inv_logit(-x[1]) + log_inv_logit(x[2]);
         for (double n : {2.0, 5.0})
           lp += lchoose(7, n) + n * std::log(p) + (7 - n) * std::log(1 - p);
         for (double trials : {4.0, 9.0})
           lp += lchoose(trials, 3) + 3 * log_inv_logit(x[0]) + (trials - 3) * log_inv_logit(-x[0]);
         for (double n : {0.0, 3.0, 7.0})
           lp += n * std::log(lambda) - lambda - std::lgamma(n + 1);
         for (double a : x)
           lp += 4 * a - std::exp(a) - std::lgamma(5);
         lp += nb2(0, lambda, std::exp(x[0])) + nb2(4, lambda, std::exp(x[0]));
         lp += nb2(6, std::exp(x[2]), 2.0 + p);
         const double lse = std::log(std::exp(x[0]) + std::exp(x[1]) + std::exp(x[2]));
         lp += x[0] + x[2] + x[1] - 3 * lse + x[1] - lse;
         return lp;
       },
       -1.0, 1.0},
      {"linear algebra", 6, R"(
fn f(x: float[6]) -> float {
    let m = [[1.0 + 0.3 * x[0], 0.0, 0.0], [x[1], 1.2 + 0.2 * x[2], 0.0], [x[3], 0.5 * x[4], 0.9]];
    let l = cholesky_decompose(add_diag(m @ transpose(m), 0.5));
    let y = [x[5], 1.0 - x[0], 0.5 * x[2]];
    let z = mdivide_left_tri_low(l, y);
    let w = mdivide_left_tri_low(l, [[x[1], 1.0], [0.5, x[4]], [x[3], x[5]]]);
    let k = gp_exp_quad_cov([x[0], 0.5, -x[2], 1.0], 1.0 + 0.2 * x[3] * x[3], 1.5 + 0.1 * x[4]);
    let lk = cholesky_decompose(add_diag(k, [0.3, 0.4, 0.5, 0.6]));
    return dot(z, z) + 0.3 * (w[0][1] + w[2][0] - w[1][1])
        + multi_normal_cholesky_lpdf(y | [0.1, x[4], 0.0], l)
        + multi_normal_cholesky_lpdf([[1.0, x[5], 0.2, -0.5], [x[1], 0.0, 0.0, 1.0]] | [0.0; 4], lk)
        + 0.7 * log_determinant(l) + 0.2 * log_determinant_spd(add_diag(k, 0.3))
        + log_determinant([[x[2] - 2.5, 0.0], [x[0], 0.5 + x[1] * x[1]]]);
}
)",
       [](const std::vector<double>& x) {
         const Matrix m = {1 + 0.3 * x[0], 0, 0, x[1], 1.2 + 0.2 * x[2], 0, x[3], 0.5 * x[4], 0.9};
         Matrix a(9);
         for (int i = 0; i < 3; ++i)
           for (int j = 0; j < 3; ++j) {
             a[i * 3 + j] = i == j ? 0.5 : 0.0;
             for (int k = 0; k < 3; ++k)
               a[i * 3 + j] += m[i * 3 + k] * m[j * 3 + k];
           }
         const Matrix l = cholesky_d(a, 3);
         const std::vector<double> y = {x[5], 1 - x[0], 0.5 * x[2]};
         const std::vector<double> z = tri_solve_d(l, y, 3);
         const std::vector<double> w = tri_solve_d(l, {x[1], 1, 0.5, x[4], x[3], x[5]}, 3, 2);
         const Matrix k0 =
             exp_quad_cov_d({x[0], 0.5, -x[2], 1.0}, 1 + 0.2 * x[3] * x[3], 1.5 + 0.1 * x[4]);
         Matrix k = k0;
         for (int i = 0; i < 4; ++i)
           k[i * 5] += 0.3 + 0.1 * i;
         const Matrix lk = cholesky_d(k, 4);
         const std::vector<double> zero(4, 0.0);
         return z[0] * z[0] + z[1] * z[1] + z[2] * z[2] + 0.3 * (w[1] + w[4] - w[3]) +
                multi_normal_cholesky_d(y, {0.1, x[4], 0}, l) +
                multi_normal_cholesky_d({1, x[5], 0.2, -0.5}, zero, lk) +
                multi_normal_cholesky_d({x[1], 0, 0, 1}, zero, lk) + 0.7 * log_determinant_d(l, 3) +
                0.2 * 2 * log_determinant_d(cholesky_d(add_diag_d(k0, 0.3, 4), 4), 4) +
                std::log(std::fabs(x[2] - 2.5)) + std::log(0.5 + x[1] * x[1]);
       }},
  };
  return cases;
}

}  // namespace ab::testing
