#include "ir/linear_algebra.h"

#include "ir/scalar_rule.h"

namespace ab {
namespace {

// One float operation through the scalar rules, so that it rounds as every other op does.
uint32_t apply(OpCode code, uint32_t x, uint32_t y = 0) {
  const uint32_t args[2] = {x, y};
  uint32_t r = 0;
  Fault fault = Fault::None;
  scalar_rule(code, Scalar::Float, args, r, fault);
  return r;
}

// s - x * y, a rounded product and a rounded subtraction.
uint32_t minus_product(uint32_t s, uint32_t x, uint32_t y) {
  return apply(OpCode::Sub, s, apply(OpCode::Mul, x, y));
}

void cholesky(uint32_t n, const uint32_t* a, uint32_t* l) {
  for (uint32_t i = 0; i < n * n; ++i)
    l[i] = 0;  // +0 above the diagonal
  for (uint32_t j = 0; j < n; ++j)
    for (uint32_t i = j; i < n; ++i) {
      uint32_t s = a[i * n + j];
      for (uint32_t k = 0; k < j; ++k)
        s = minus_product(s, l[i * n + k], l[j * n + k]);
      l[i * n + j] = i == j ? apply(OpCode::Sqrt, s) : apply(OpCode::Div, s, l[j * n + j]);
    }
}

// X = L \ B (forward) or L^T \ B (backward), B and X N x P.
void solve(bool transposed, uint32_t n, uint32_t p, const uint32_t* l, const uint32_t* b,
           uint32_t* x) {
  for (uint32_t c = 0; c < p; ++c)
    for (uint32_t step = 0; step < n; ++step) {
      const uint32_t i = transposed ? n - 1 - step : step;
      uint32_t s = b[i * p + c];
      if (transposed) {
        for (uint32_t k = i + 1; k < n; ++k)
          s = minus_product(s, l[k * n + i], x[k * p + c]);
      } else {
        for (uint32_t k = 0; k < i; ++k)
          s = minus_product(s, l[i * n + k], x[k * p + c]);
      }
      x[i * p + c] = apply(OpCode::Div, s, l[i * n + i]);
    }
}

}  // namespace

void triangular_words(OpCode code, const MatrixShape& s, const uint32_t* a, const uint32_t* b,
                      uint32_t* out) {
  if (code == OpCode::Cholesky) return cholesky(s.m, a, out);
  solve(code == OpCode::TriSolveT, s.m, s.p, a, b, out);
}

}  // namespace ab
