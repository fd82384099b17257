// The VM's register-tiled matrix products with one uniform operand (vm_products.cpp binds the
// op to them): `X @ w` (the uniform on the left) and `g @ X` (on the right) for a set of lanes,
// each lane's words those of matrix_words (ir/ops.h): per output element a total from +0 of
// partial sums from +0 over blocks of kProductBlock terms, each term a rounded product then a
// rounded add. The lanes run side by side in SIMD slots, each lane's chain its own, so every
// lane gets the interpreter's bits on every instruction set. The lane operand is packed (a
// tile of lanes' words copied side by side, zero beyond the set, gathered for a set with gaps),
// so a tile of the product reads contiguous memory whatever the lane stride, and the results go
// straight to the destination (a full tile of a dense set) or through a small tile (scattered).
// Each instruction set has its own build of the same templates, chosen at run time: AVX-512
// (16 lanes a register), AVX2 (8) or the portable x86-64 baseline (SSE2, 8 lanes in two
// registers).
#pragma once

#include <cstddef>
#include <cstdint>

#include "ir/ops.h"  // MatrixShape

namespace ab {

// A lane operand or result of a product: word w of the set's j-th lane at
// base[w * stride + lane(j)].
struct ProductLanes {
  float* base = nullptr;
  size_t stride = 0;
  const uint32_t* list = nullptr;  // the lanes; null: first, first + 1, ...
  size_t first = 0;
  size_t lane(size_t j) const { return list ? list[j] : first + j; }
};

// `a @ b` for `lanes` lanes where one operand is a uniform matrix read in place (its words at
// `uniform`, row-major) and the other is each lane's (`operand`); `out` must not overlap either.
struct UniformProduct {
  MatrixShape shape;  // a: M x K, b: K x P, out: M x P
  const float* uniform = nullptr;
  ProductLanes operand, out;
  size_t lanes = 0;
  // The slice of the output this call computes, [slice_begin, slice_end) of X's free dimension:
  // the output's rows for X @ w, its columns for g @ X (the other words of `out` are left alone).
  // Each output element is computed alone, in its own order, so a product cut into slices (the
  // VM's threads: vm_kernels.h, split_product) gives the whole product's bits.
  uint32_t slice_begin = 0, slice_end = UINT32_MAX;
};

enum class VectorIsa : uint8_t { Portable, Avx2, Avx512 };
const char* vector_isa_name(VectorIsa isa);  // "portable", "avx2", "avx512"
bool host_has(VectorIsa isa);
// The instruction set the products run on: the host's widest, unless a test chose another.
VectorIsa product_isa();
// Test hook: the products run on `isa` (which the host must have) from now on.
void use_product_isa(VectorIsa isa);

// The lanes a register tile holds on product_isa(): a set cut between tiles wastes no slots.
size_t product_tile_lanes();

// X @ w for the lanes (X uniform: M x K; w: K x P).
void uniform_times_lanes(const UniformProduct& p);
// g @ X for the lanes (g: M x K; X uniform: K x P).
void lanes_times_uniform(const UniformProduct& p);

}  // namespace ab
