// The linear algebra builtins (lang/linear_algebra.cpp) in float64, for the tests to compare
// with: matrices as row-major vectors of N x N doubles.
#pragma once

#include <cmath>
#include <vector>

namespace ab::testing {

using Matrix = std::vector<double>;  // row-major, N x N

// The lower Cholesky factor of the lower triangle of a (positive definite) matrix.
inline Matrix cholesky_d(const Matrix& a, int n) {
  Matrix l(a.size(), 0.0);
  for (int j = 0; j < n; ++j)
    for (int i = j; i < n; ++i) {
      double s = a[i * n + j];
      for (int k = 0; k < j; ++k)
        s -= l[i * n + k] * l[j * n + k];
      l[i * n + j] = i == j ? std::sqrt(s) : s / l[j * n + j];
    }
  return l;
}

// L \ b for the lower triangle of L, b of n rows and p columns (row-major).
inline std::vector<double> tri_solve_d(const Matrix& l, const std::vector<double>& b, int n,
                                       int p = 1) {
  std::vector<double> x(b.size());
  for (int c = 0; c < p; ++c)
    for (int i = 0; i < n; ++i) {
      double s = b[i * p + c];
      for (int k = 0; k < i; ++k)
        s -= l[i * n + k] * x[k * p + c];
      x[i * p + c] = s / l[i * n + i];
    }
  return x;
}

inline Matrix exp_quad_cov_d(const std::vector<double>& x, double alpha, double rho) {
  const int n = static_cast<int>(x.size());
  Matrix k(n * n);
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j)
      k[i * n + j] = alpha * alpha * std::exp(-(x[i] - x[j]) * (x[i] - x[j]) / (2 * rho * rho));
  return k;
}

// log |det L| of a triangular L: its diagonal's product.
inline double log_determinant_d(const Matrix& l, int n) {
  double s = 0.0;
  for (int i = 0; i < n; ++i)
    s += std::log(std::fabs(l[i * n + i]));
  return s;
}

// A + d I.
inline Matrix add_diag_d(Matrix a, double d, int n) {
  for (int i = 0; i < n; ++i)
    a[i * n + i] += d;
  return a;
}

// log N(y | mu, L L^T) for one vector y.
inline double multi_normal_cholesky_d(const std::vector<double>& y, const std::vector<double>& mu,
                                      const Matrix& l) {
  const int n = static_cast<int>(y.size());
  std::vector<double> d(n);
  for (int i = 0; i < n; ++i)
    d[i] = y[i] - mu[i];
  const std::vector<double> z = tri_solve_d(l, d, n);
  double lp = -0.5 * n * std::log(2 * M_PI);
  for (int i = 0; i < n; ++i)
    lp += -0.5 * z[i] * z[i] - std::log(l[i * n + i]);
  return lp;
}

}  // namespace ab::testing
