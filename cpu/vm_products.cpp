// The VM's matrix product kernel (vm_kernels.h): `a @ b` for a step's lanes side by side. With
// one uniform operand (X @ w, g @ X: a model's pass over its data) the register tiles of
// vm_product_tiles.h run it, reading the uniform in place once per tile of lanes; with both
// operands a lane's own, or both uniform, the general loop below.
#include <algorithm>
#include <cstring>

#include "cpu/vm_product_tiles.h"
#include "cpu/vm_rows.h"

namespace ab {
namespace {

// a @ b for every lane, in matrix_words' order (ops.h): each element of each lane a total from +0
// of partial sums from +0 over blocks of kProductBlock terms, each term a rounded product added
// with one rounding. Lanes run side by side, each lane's chain its own, so SIMD across lanes
// keeps every lane's bits. Operand k's word w of lane j is src[k][w * stride[k] + j]. The lanes'
// totals accumulate in the destination's rows (which no operand overlaps), the partials of one
// output row of P elements in a scratch row per element. The frames' words read and written as
// floats (may_alias: they are uint32_t elsewhere).
using AliasFloat = float __attribute__((may_alias));
thread_local std::vector<float> t_partial;

// Output columns [p_begin, p_end) of every output row.
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
          const AliasFloat* x = a + wa * r.stride[0];
          const AliasFloat* y = b + wb * r.stride[1];
          for (size_t j = 0; j < n; ++j)
            acc[j] = acc[j] + x[j] * y[j];
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

// Runs the product for the rows r binds (n lanes from its pointers), both operands a lane's or
// both uniform: the general loop.
void matmul_lanes(const Rows& r, unsigned konst, const MatrixShape& s) {
  t_partial.resize(size_t{s.p} * r.n);
  float* partial = t_partial.data();
  switch (konst) {
    case 0:
      matmul_rows(r, s, partial, 0, s.p);
      break;
    default:  // both uniform: every lane computes the same words; one lane's loop per lane
      for (size_t j = 0; j < r.n; ++j) {
        Rows one = r;
        one.n = 1;
        one.dst += j;
        matmul_rows(one, s, partial, 0, s.p);
      }
      break;
  }
}

// Lanes [begin, end) of the set and a slice of the output (all of both by default).
struct ProductPart {
  size_t begin = 0, end = SIZE_MAX;
  uint32_t slice_begin = 0, slice_end = UINT32_MAX;
};

// One uniform operand (X @ w or g @ X): the register tiles (vm_product_tiles.h) for the lanes
// of the set, dense or not (a set with gaps is gathered into the tiles: each lane's product is
// M * K * P multiply-adds, against the M * P words a lane's gather and scatter move).
void uniform_product(const BatchOp& b, const BatchFrames& f, const LaneSet& s, const Rows& r,
                     unsigned konst, const ProductPart& part = {}) {
  UniformProduct p;
  p.shape = b.shape;
  const size_t end = std::min(part.end, s.count);
  p.lanes = end - part.begin;
  p.slice_begin = part.slice_begin;
  p.slice_end = part.slice_end;
  const int lane_operand = konst == 1 ? 1 : 0;
  p.uniform = reinterpret_cast<const AliasFloat*>(r.src[1 - lane_operand]);
  const ProductLanes lanes{nullptr, f.lanes, s.dense ? nullptr : s.list + part.begin,
                           s.dense ? s.first + part.begin : 0};
  p.operand = lanes;
  p.operand.base = reinterpret_cast<AliasFloat*>(const_cast<uint32_t*>(r.src[lane_operand]));
  p.out = lanes;
  p.out.base = reinterpret_cast<AliasFloat*>(f.word(b.dst));
  if (konst == 1)
    uniform_times_lanes(p);
  else
    lanes_times_uniform(p);
}

// The uniform operand's side (1: X @ w, 2: g @ X), or 0 when the product has none.
unsigned uniform_side(const BatchOp& b, const BatchFrames& f, const LaneSet& s,
                      const UniformData& uniforms, Rows& r) {
  if (b.run != matmul_kernel || s.count == 0) return 0;
  const unsigned konst = bind_operands<2>(r, b, f, s, uniforms, 0, true);
  return konst == 1 || konst == 2 ? konst : 0;
}

}  // namespace

uint64_t product_terms(const BatchOp& b) {
  return b.run == matmul_kernel ? uint64_t{b.shape.m} * b.shape.k * b.shape.p : 0;
}

ProductSplit split_product(const BatchOp& b, const BatchFrames& f, const LaneSet& s,
                           const UniformData& uniforms, unsigned wanted) {
  Rows r;
  const unsigned side = uniform_side(b, f, s, uniforms, r);
  if (side == 0 || wanted < 2) return {};
  const size_t tile = product_tile_lanes();
  const auto tiles = static_cast<uint32_t>((s.count + tile - 1) / tile);
  // The slices: groups of 4 rows (X @ w) or columns (g @ X), the tiles' register blocks.
  const uint32_t slice_words = side == 1 ? b.shape.m : b.shape.p;
  const uint32_t groups = (slice_words + 3) / 4;
  ProductSplit split;
  split.lane_parts = std::min(tiles, wanted);
  split.slice_parts = std::max(1u, std::min(groups, wanted / split.lane_parts));
  return split;
}

void matmul_kernel_part(const BatchOp& b, const BatchFrames& f, const LaneSet& s,
                        const UniformData& uniforms, const ProductSplit& split, unsigned part) {
  Rows r;
  const unsigned side = uniform_side(b, f, s, uniforms, r);
  const size_t tile = product_tile_lanes(), tiles = (s.count + tile - 1) / tile;
  const size_t lane_part = part / split.slice_parts, slice_part = part % split.slice_parts;
  ProductPart p;
  p.begin = lane_part * tiles / split.lane_parts * tile;
  p.end = std::min(s.count, (lane_part + 1) * tiles / split.lane_parts * tile);
  const uint32_t slice_words = side == 1 ? b.shape.m : b.shape.p;
  const uint32_t groups = (slice_words + 3) / 4;
  p.slice_begin = static_cast<uint32_t>(slice_part * groups / split.slice_parts * 4);
  p.slice_end = std::min(slice_words,
                         static_cast<uint32_t>((slice_part + 1) * groups / split.slice_parts * 4));
  if (p.begin < p.end && p.slice_begin < p.slice_end) uniform_product(b, f, s, r, side, p);
}

// a @ b for every lane (the operands apart from the destination: prepare_batch_op).
bool matmul_kernel(const BatchOp& b, const BatchFrames& f, const LaneSet& s,
                   const UniformData& uniforms) {
  if (s.count == 0) return true;
  Rows r;
  // Lane operands bound at lane 0 (the tiles index the frames by lane).
  if (const unsigned konst = bind_operands<2>(r, b, f, s, uniforms, 0, true);
      konst == 1 || konst == 2) {
    uniform_product(b, f, s, r, konst);
    return true;
  }
  const Visit visit = visit_of(s);
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
