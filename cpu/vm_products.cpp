// The VM's matrix product kernel (vm_kernels.h): `a @ b` for a step's lanes side by side, a
// uniform matrix read in place and shared by the lanes.
#include <algorithm>
#include <cstring>

#include "cpu/vm_rows.h"

namespace ab {
namespace {

// a @ b for every lane, in matrix_words' order (ops.h): each element of each lane a total from +0
// of partial sums from +0 over blocks of kProductBlock terms, each term a rounded product added
// with one rounding. Lanes run side by side, each lane's chain its own, so SIMD across lanes
// keeps every lane's bits. Operand k's word w of lane j is src[k][w * stride[k] + j], or
// src[k][w] for every lane when Konst has bit k (a uniform read in place). The lanes' totals
// accumulate in the destination's rows (which no operand overlaps), the partials of one output
// row of P elements in a scratch row per element.
// The frames' words read and written as floats (may_alias: they are uint32_t elsewhere).
using AliasFloat = float __attribute__((may_alias));
thread_local std::vector<float> t_partial;

// Output columns [p_begin, p_end) of every output row.
template <unsigned Konst>
AB_LANE_LOOP void matmul_rows(const Rows& r, const MatrixShape& s, float* partial, uint32_t p_begin,
                              uint32_t p_end) {
  const auto* a = reinterpret_cast<const AliasFloat*>(r.src[0]);
  const auto* b = reinterpret_cast<const AliasFloat*>(r.src[1]);
  auto* out = reinterpret_cast<AliasFloat*>(r.dst);
  const size_t n = r.n;
  for (uint32_t m = 0; m < s.m; ++m) {
    for (uint32_t p = p_begin; p < p_end; ++p)
      std::fill_n(out + (size_t{m} * s.p + p) * r.dst_stride, n, 0.0f);
    for (uint32_t first = 0; first < s.k; first += kProductBlock) {
      std::fill_n(partial, size_t{p_end - p_begin} * n, 0.0f);
      const uint32_t end = std::min(first + kProductBlock, s.k);
      for (uint32_t k = first; k < end; ++k) {
        const size_t wa = size_t{m} * s.k + k;
        for (uint32_t p = p_begin; p < p_end; ++p) {
          const size_t wb = size_t{k} * s.p + p;
          float* acc = partial + size_t{p - p_begin} * n;
          if constexpr (Konst == 1) {
            const float x = a[wa];
            const AliasFloat* y = b + wb * r.stride[1];
            for (size_t j = 0; j < n; ++j)
              acc[j] = acc[j] + x * y[j];
          } else if constexpr (Konst == 2) {
            const AliasFloat* x = a + wa * r.stride[0];
            const float y = b[wb];
            for (size_t j = 0; j < n; ++j)
              acc[j] = acc[j] + x[j] * y;
          } else {
            const AliasFloat* x = a + wa * r.stride[0];
            const AliasFloat* y = b + wb * r.stride[1];
            for (size_t j = 0; j < n; ++j)
              acc[j] = acc[j] + x[j] * y[j];
          }
        }
      }
      for (uint32_t p = p_begin; p < p_end; ++p) {
        AliasFloat* total = out + (size_t{m} * s.p + p) * r.dst_stride;
        const float* acc = partial + size_t{p - p_begin} * n;
        for (size_t j = 0; j < n; ++j)
          total[j] = total[j] + acc[j];
      }
    }
  }
}

// Each lane's rows times a uniform matrix (g @ X: the gradient's pass over the data), lanes
// [first, end) by output columns [0, cols) (multiples of 8 * V and 4): per block of terms,
// 8 * V lanes by 4 columns hold their partials in 4 * V vector registers across the block,
// each term's lane values loaded once for four columns and each value of X broadcast once for
// all those lanes; the totals in the destination add each block's partials. The same sums as
// matmul_rows.
template <int V>
AB_LANE_LOOP void rows_times_uniform(const Rows& r, const MatrixShape& s, size_t first_lane,
                                     size_t end_lane, uint32_t cols) {
  const auto* a = reinterpret_cast<const AliasFloat*>(r.src[0]);
  const auto* b = reinterpret_cast<const AliasFloat*>(r.src[1]);
  auto* out = reinterpret_cast<AliasFloat*>(r.dst);
  for (uint32_t m = 0; m < s.m; ++m) {
    for (uint32_t p = 0; p < cols; ++p)
      std::fill_n(out + (size_t{m} * s.p + p) * r.dst_stride + first_lane, end_lane - first_lane,
                  0.0f);
    for (uint32_t first = 0; first < s.k; first += kProductBlock) {
      const uint32_t end = std::min(first + kProductBlock, s.k);
      for (uint32_t p0 = 0; p0 < cols; p0 += 4)
        for (size_t lane = first_lane; lane < end_lane; lane += 8 * V) {
          Floats8 partial[V][4] = {};
          for (uint32_t k = first; k < end; ++k) {
            const AliasFloat* x = a + (size_t{m} * s.k + k) * r.stride[0] + lane;
            Floats8 xv[V];
            for (int h = 0; h < V; ++h)  // one load each: a copy of all as one block is slow
              std::memcpy(&xv[h], x + 8 * h, sizeof xv[h]);
            const AliasFloat* y = b + size_t{k} * s.p + p0;
            for (int q = 0; q < 4; ++q) {
              const float yq = y[q];
              for (int h = 0; h < V; ++h)
                partial[h][q] = partial[h][q] + xv[h] * yq;
            }
          }
          for (int q = 0; q < 4; ++q)
            for (int h = 0; h < V; ++h) {
              AliasFloat* total = out + (size_t{m} * s.p + p0 + q) * r.dst_stride + lane + 8 * h;
              Floats8 t;
              std::memcpy(&t, total, sizeof t);
              t = t + partial[h][q];
              std::memcpy(total, &t, sizeof t);
            }
        }
    }
  }
}

// A uniform matrix times each lane's vector (X @ w, P = 1), lanes [first, end) (a multiple of
// 8 * V): matmul_rows' sums, 8 * V lanes at a time held in vector registers across a block's
// terms, reading X's row once per 8 * V lanes (from the cache: the rows of X go by in order,
// each used for every lane before the next).
template <int V>
AB_LANE_LOOP void matvec_uniform_rows(const Rows& r, const MatrixShape& s, size_t first_lane,
                                      size_t end_lane) {
  const auto* a = reinterpret_cast<const AliasFloat*>(r.src[0]);
  const auto* b = reinterpret_cast<const AliasFloat*>(r.src[1]);
  auto* out = reinterpret_cast<AliasFloat*>(r.dst);
  for (uint32_t m = 0; m < s.m; ++m) {
    const AliasFloat* row = a + size_t{m} * s.k;
    for (size_t lane = first_lane; lane < end_lane; lane += 8 * V) {
      Floats8 total[V] = {};
      for (uint32_t first = 0; first < s.k; first += kProductBlock) {
        Floats8 partial[V] = {};
        const uint32_t end = std::min(first + kProductBlock, s.k);
        for (uint32_t k = first; k < end; ++k) {
          const float x = row[k];
          const AliasFloat* y = b + k * r.stride[1] + lane;
          for (int q = 0; q < V; ++q) {
            Floats8 v;
            std::memcpy(&v, y + 8 * q, sizeof v);
            partial[q] = partial[q] + x * v;
          }
        }
        for (int q = 0; q < V; ++q)
          total[q] = total[q] + partial[q];
      }
      std::memcpy(out + size_t{m} * r.dst_stride + lane, total, sizeof total);
    }
  }
}

// Runs the product for the rows r binds (n lanes from its pointers).
void matmul_lanes(const Rows& r, unsigned konst, const MatrixShape& s) {
  // The register kernels take the lanes in runs of 32 or 16, then 8, and the last 1-7 lanes as
  // the last 8 again: each call computes its lanes' words from scratch (operands and
  // destination apart), so lanes computed twice get the same words twice. Sets of fewer than 8
  // lanes take the general loop.
  const size_t wide = r.n / 32 * 32, narrow = r.n / 8 * 8, lanes16 = r.n / 16 * 16;
  const bool registers = r.n >= 8;
  if (konst == 1 && s.p == 1 && registers) {
    matvec_uniform_rows<4>(r, s, 0, wide);
    matvec_uniform_rows<1>(r, s, wide, narrow);
    if (narrow < r.n) matvec_uniform_rows<1>(r, s, r.n - 8, r.n);
    return;
  }
  t_partial.resize(size_t{s.p} * r.n);
  float* partial = t_partial.data();
  const uint32_t cols4 = s.p / 4 * 4;
  if (konst == 2 && cols4 > 0 && registers) {
    rows_times_uniform<2>(r, s, 0, lanes16, cols4);
    rows_times_uniform<1>(r, s, lanes16, narrow, cols4);
    if (narrow < r.n) rows_times_uniform<1>(r, s, r.n - 8, r.n, cols4);
    if (cols4 < s.p) matmul_rows<2>(r, s, partial, cols4, s.p);  // the last columns
    return;
  }
  switch (konst) {
    case 0:
      matmul_rows<0>(r, s, partial, 0, s.p);
      break;
    case 1:
      matmul_rows<1>(r, s, partial, 0, s.p);
      break;
    case 2:
      matmul_rows<2>(r, s, partial, 0, s.p);
      break;
    default:  // both uniform: every lane computes the same words; one lane's loop per lane
      for (size_t j = 0; j < r.n; ++j) {
        Rows one = r;
        one.n = 1;
        one.dst += j;
        matmul_rows<3>(one, s, partial, 0, s.p);
      }
      break;
  }
}

}  // namespace

// a @ b for every lane (the operands apart from the destination: prepare_batch_op).
bool matmul_kernel(const BatchOp& b, const BatchFrames& f, const LaneSet& s,
                   const UniformData& uniforms) {
  if (s.count == 0) return true;
  const Visit visit = visit_of(s);
  Rows r;
  if (visit == Visit::Listed) {
    each_listed_lane<2>(b, f, s, uniforms, true, [&](const Rows& one, unsigned konst) {
      matmul_lanes(one, konst, b.shape);
    });
    return true;
  }
  const unsigned konst = bind_operands<2>(r, b, f, s, uniforms, s.first, true);
  bind_result(r, f, s, visit, b.dst, b.words, b.dst_temp);
  matmul_lanes(r, konst, b.shape);
  store_result(r, f, s, visit, b.dst, b.dst_temp);
  return true;
}

}  // namespace ab
