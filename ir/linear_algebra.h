// The triangular matrix ops' semantics over words: Cholesky (cholesky_decompose), TriSolve
// (mdivide_left_tri_low) and TriSolveT (its transpose, for the derivatives). Each element is one
// chain of rounded operations in a fixed order, the same on every backend (the GLSL emitter
// writes the same chains, codegen/glsl_linear_algebra.cpp); docs/language.md, "Linear algebra",
// is the user's page.
//
// - Cholesky of an N x N matrix A reads its lower triangle only (as LAPACK's potrf): for each
//   column j, for i = j..N-1, s = A[i][j], then s = s - L[i][k] * L[j][k] for k = 0..j-1 (a
//   rounded product, then a rounded subtraction); L[j][j] = sqrt(s), L[i][j] = s / L[j][j]. The
//   upper triangle is +0. A matrix that is not positive definite leaves a diagonal element NaN
//   or 0 (the front end's check faults the lane).
// - TriSolve, X = L \ B for the lower triangle of L: per column p, for i = 0..N-1, s = B[i][p],
//   then s = s - L[i][k] * X[k][p] for k = 0..i-1; X[i][p] = s / L[i][i].
// - TriSolveT, X = L^T \ B: per column p, for i = N-1 down to 0, s = B[i][p], then
//   s = s - L[k][i] * X[k][p] for k = i+1..N-1 in order; X[i][p] = s / L[i][i].
#pragma once

#include <cstdint>

#include "ir/ops.h"

namespace ab {

// out = the op on a (N x N) and b (N x P, unused for Cholesky); s as matrix_shape gives it.
// `out` must not overlap the operands.
void triangular_words(OpCode code, const MatrixShape& s, const uint32_t* a, const uint32_t* b,
                      uint32_t* out);

// Whether `code` is one of the ops above.
constexpr bool is_triangular(OpCode code) {
  return code == OpCode::Cholesky || code == OpCode::TriSolve || code == OpCode::TriSolveT;
}

}  // namespace ab
