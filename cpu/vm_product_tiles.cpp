// The register-tiled products with a uniform operand (vm_product_tiles.h), built once per
// instruction set from the same templates.
//
// A tile is T = W * V lanes (V registers of W floats). X @ w: R = 4 rows of X by T lanes hold
// their partial sums in R * V registers across a block of terms; each term loads the tile's w
// once for the R rows and broadcasts each X value once for the T lanes. g @ X: T lanes by C = 4
// columns of X, the same way round. Eight independent chains of adds per term cover the add's
// latency, so the multiplies and adds keep both vector ports busy. The packed lane operand (a
// block of 64 words of T lanes for g @ X, all K words for X @ w) and the rows of X a tile reads
// stay in the L1 cache, whatever the lanes' stride in the frames: with a frame of 256 lanes a
// word's row of lanes is 1 KiB on from the last, so 64 words of 16 lanes read in place fell into
// 4 of the cache's 64 sets and were evicted before the next 4 columns read them again.
#include "cpu/vm_product_tiles.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

namespace ab {
namespace {

using AliasFloat = float __attribute__((may_alias));  // frame words are uint32_t elsewhere

// W floats (GCC drops a vector_size that depends on a parameter of an alias template, so one
// specialisation per width).
template <int W>
struct VecOf;
template <>
struct VecOf<8> {
  using type = float __attribute__((vector_size(32)));
};
template <>
struct VecOf<16> {
  using type = float __attribute__((vector_size(64)));
};
template <int W>
using Vec = typename VecOf<W>::type;
template <int W>
struct DoublesOf;
template <>
struct DoublesOf<8> {
  using type = double __attribute__((vector_size(64)));
};
template <>
struct DoublesOf<16> {
  using type = double __attribute__((vector_size(128)));
};

#define AB_TILE_INLINE [[gnu::always_inline]] inline

// (By reference: a vector returned by value would change the ABI between the builds.)
template <class V>
AB_TILE_INLINE void load(V& v, const float* p) {
  std::memcpy(&v, p, sizeof v);
}
template <class V>
AB_TILE_INLINE void store(float* p, const V& v) {
  std::memcpy(p, &v, sizeof v);
}

thread_local std::vector<float> t_packed, t_tile;
thread_local std::vector<uint8_t> t_flags;

float* scratch(std::vector<float>& v, size_t n) {
  if (v.size() < n) v.resize(n);
  return v.data();
}

// Words [word0 + i * step for i < count] of the n lanes of `lanes`, tile by tile: tile t's
// word i at packed[(t * count + i) * T ...], zero past the last lane. Each word's row of lanes
// is read in order (from the frames' rows one after another, not a tile's strided column).
template <int T>
AB_TILE_INLINE void pack(const ProductLanes& lanes, size_t n, size_t word0, size_t step,
                         uint32_t count, float* packed) {
  const size_t tiles = (n + T - 1) / T;
  for (uint32_t i = 0; i < count; ++i) {
    const AliasFloat* row = lanes.base + (word0 + i * step) * lanes.stride;
    for (size_t t = 0; t < tiles; ++t) {
      float* to = packed + (t * count + i) * T;
      const size_t j0 = t * T, cnt = std::min<size_t>(T, n - j0);
      if (lanes.list) {
        for (size_t j = 0; j < cnt; ++j)
          to[j] = row[lanes.list[j0 + j]];
      } else {
        std::memcpy(to, row + lanes.first + j0, cnt * sizeof(float));
      }
      std::fill(to + cnt, to + T, 0.0f);
    }
  }
}

// `rows` rows of T floats, `stride` apart in `tile`, to the words [word0 + r * step] of the
// tile's lanes [j0, j0 + cnt) of `out`.
template <int T>
void scatter(const float* tile, size_t stride, uint32_t rows, const ProductLanes& out, size_t j0,
             size_t cnt, size_t word0, size_t step) {
  for (uint32_t r = 0; r < rows; ++r) {
    AliasFloat* row = out.base + (word0 + r * step) * out.stride;
    for (size_t j = 0; j < cnt; ++j)
      row[out.lane(j0 + j)] = tile[r * stride + j];
  }
}

// R rows of X (x, K words each) times the packed w (K words of T lanes): the rows' sums for
// the T lanes, row r at dst + r * dst_stride.
template <int W, int V, int R>
AB_TILE_INLINE void matvec_tile(const float* x, uint32_t K, const float* wp, float* dst,
                                size_t dst_stride) {
  constexpr int T = W * V;
  Vec<W> total[R][V] = {};
  for (uint32_t first = 0; first < K; first += kProductBlock) {
    const uint32_t end = std::min(first + kProductBlock, K);
    Vec<W> partial[R][V] = {};
    for (uint32_t k = first; k < end; ++k) {
      Vec<W> wv[V];
      for (int v = 0; v < V; ++v)
        load(wv[v], wp + size_t{k} * T + v * W);
      for (int r = 0; r < R; ++r) {
        const float xr = x[static_cast<size_t>(r) * K + k];
        for (int v = 0; v < V; ++v)
          partial[r][v] = partial[r][v] + xr * wv[v];
      }
    }
    for (int r = 0; r < R; ++r)
      for (int v = 0; v < V; ++v)
        total[r][v] = total[r][v] + partial[r][v];
  }
  for (int r = 0; r < R; ++r)
    for (int v = 0; v < V; ++v)
      store(dst + r * dst_stride + v * W, total[r][v]);
}

// Rows of X a tile of lanes runs before the next tile: 64 rows (25 KiB at K = 100) stay in the
// L1 cache for all the tiles, so X comes from memory once, not once per tile.
constexpr uint32_t kRowBlock = 64;

template <int W, int V>
AB_TILE_INLINE void uniform_times_lanes_tiled(const UniformProduct& p) {
  constexpr int T = W * V, R = 4;
  const MatrixShape& s = p.shape;
  const size_t tiles = (p.lanes + T - 1) / T;
  float* packed = scratch(t_packed, tiles * s.k * T);
  float* tile = scratch(t_tile, size_t{R} * T);
  const uint32_t row_end = std::min(s.m, p.slice_end);
  for (uint32_t col = 0; col < s.p; ++col) {
    pack<T>(p.operand, p.lanes, col, s.p, s.k, packed);
    for (uint32_t block = p.slice_begin; block < row_end; block += kRowBlock)
      for (size_t t = 0; t < tiles; ++t) {
        const size_t j0 = t * T, cnt = std::min<size_t>(T, p.lanes - j0);
        const bool direct = !p.out.list && cnt == T;
        const float* wp = packed + t * s.k * T;
        for (uint32_t m0 = block; m0 < std::min(block + kRowBlock, row_end); m0 += R) {
          const uint32_t rows = std::min<uint32_t>(R, row_end - m0);
          const size_t word0 = size_t{m0} * s.p + col;
          float* dst = direct ? p.out.base + word0 * p.out.stride + p.out.first + j0 : tile;
          const size_t dst_stride = direct ? size_t{s.p} * p.out.stride : T;
          const float* x = p.uniform + size_t{m0} * s.k;
          if (rows == R) {
            matvec_tile<W, V, R>(x, s.k, wp, dst, dst_stride);
          } else {
            for (uint32_t r = 0; r < rows; ++r)
              matvec_tile<W, V, 1>(x + size_t{r} * s.k, s.k, wp, dst + r * dst_stride, 0);
          }
          if (!direct) scatter<T>(tile, T, rows, p.out, j0, cnt, word0, s.p);
        }
      }
  }
}

// A product whose operand or result is subnormal costs this CPU a microcode assist, ~130
// cycles for the whole vector instruction (measured: 61 ns against 1.6 ns a multiply; adds and
// conversions take subnormals at full speed). The gradient's g in g @ X has them: y - inv_logit(z)
// is subnormal for z in (-103, -87) where y = 0, and such rows ran the model's g @ X at a quarter
// of its rate. Rows of a packed block that may give one (risky_rows) multiply in double instead:
// the product of two floats is exact in double, and its one rounding to float is the float
// product, subnormal or not, with no assist.
template <int W>
AB_TILE_INLINE void exact_product(const Vec<W>& g, float y, Vec<W>& product) {
  using Doubles = typename DoublesOf<W>::type;
  product =
      __builtin_convertvector(__builtin_convertvector(g, Doubles) * static_cast<double>(y), Vec<W>);
}

// The packed g (len words of T lanes) times C columns of X's rows (y: the first row's first
// column, rows P words apart): each column's partial sums over the block added to its totals
// (tot, C rows of T lanes). With `risky`, the rows it marks take exact_product.
template <int W, int V, int C, bool Careful>
AB_TILE_INLINE void vecmat_tile(const float* gp, uint32_t len, const float* y, uint32_t P,
                                const uint8_t* risky, float* tot) {
  constexpr int T = W * V;
  Vec<W> partial[C][V] = {};
  for (uint32_t i = 0; i < len; ++i) {
    Vec<W> gv[V];
    for (int v = 0; v < V; ++v)
      load(gv[v], gp + size_t{i} * T + v * W);
    if (Careful && risky[i]) {
      for (int c = 0; c < C; ++c)
        for (int v = 0; v < V; ++v) {
          Vec<W> product;
          exact_product<W>(gv[v], y[size_t{i} * P + c], product);
          partial[c][v] = partial[c][v] + product;
        }
      continue;
    }
    for (int c = 0; c < C; ++c) {
      const float yc = y[size_t{i} * P + c];
      for (int v = 0; v < V; ++v)
        partial[c][v] = partial[c][v] + gv[v] * yc;
    }
  }
  for (int c = 0; c < C; ++c)
    for (int v = 0; v < V; ++v) {
      float* t = tot + c * T + v * W;
      Vec<W> sum;
      load(sum, t);
      store(t, sum + partial[c][v]);
    }
}

// The magnitude (as bits) below which a nonzero g may give a subnormal product with the block's
// rows of X (`rows` rows of `width` words, `stride` apart): 2^-126 over the least nonzero |x|,
// at least 2^-126 (a subnormal g is an assist whatever it multiplies).
uint32_t risky_below(const float* x, uint32_t rows, uint32_t width, uint32_t stride) {
  float least = std::numeric_limits<float>::infinity();
  for (uint32_t r = 0; r < rows; ++r)
    for (uint32_t c = 0; c < width; ++c) {
      const float a = std::fabs(x[size_t{r} * stride + c]);
      if (a != 0 && a < least) least = a;
    }
  const double bound =
      std::max(0x1p-126, least == std::numeric_limits<float>::infinity() ? 0.0 : 0x1p-126 / least);
  const float capped =
      static_cast<float>(std::min<double>(bound, std::numeric_limits<float>::max()));
  uint32_t bits;
  std::memcpy(&bits, &capped, sizeof bits);
  return bits;
}

// Marks each packed row (tiles x len rows of T lanes) holding a nonzero |g| below `below`;
// returns whether any is marked.
template <int T>
bool risky_rows(const float* packed, size_t rows, uint32_t below, uint8_t* risky) {
  bool any = false;
  for (size_t r = 0; r < rows; ++r) {
    uint32_t hit = 0;
    for (int j = 0; j < T; ++j) {
      uint32_t bits;
      std::memcpy(&bits, packed + r * T + j, sizeof bits);
      bits &= 0x7fffffffu;
      hit |= static_cast<uint32_t>(bits - 1 < below - 1);  // 0 < |g| < below
    }
    risky[r] = static_cast<uint8_t>(hit);
    any |= hit != 0;
  }
  return any;
}

// Per block of terms, every tile of lanes in turn: the block's rows of X (64 of P words) stay
// in the cache for all the tiles, and the tiles' totals (P words of every lane) in L2.
template <int W, int V>
AB_TILE_INLINE void lanes_times_uniform_tiled(const UniformProduct& p) {
  constexpr int T = W * V, C = 4;
  const MatrixShape& s = p.shape;
  const size_t tiles = (p.lanes + T - 1) / T;
  // The slice's columns [c0, c0 + width); the totals hold those of every tile.
  const uint32_t c0 = p.slice_begin, width = std::min(s.p, p.slice_end) - c0;
  float* packed = scratch(t_packed, tiles * kProductBlock * T);
  float* tot = scratch(t_tile, tiles * width * T);
  if (t_flags.size() < tiles * kProductBlock) t_flags.resize(tiles * kProductBlock);
  uint8_t* flags = t_flags.data();
  const uint32_t cols = width / C * C;
  for (uint32_t m = 0; m < s.m; ++m) {
    std::fill_n(tot, tiles * width * T, 0.0f);  // the totals start at +0
    for (uint32_t first = 0; first < s.k; first += kProductBlock) {
      const uint32_t len = std::min(kProductBlock, s.k - first);
      pack<T>(p.operand, p.lanes, size_t{m} * s.k + first, 1, len, packed);
      const float* y = p.uniform + size_t{first} * s.p + c0;
      const uint32_t below = risky_below(y, len, width, s.p);
      for (size_t t = 0; t < tiles; ++t) {
        const float* gp = packed + t * len * T;
        float* tt = tot + t * width * T;
        const uint8_t* risky = flags + t * len;
        if (risky_rows<T>(gp, len, below, flags + t * len)) {
          for (uint32_t c = 0; c < cols; c += C)
            vecmat_tile<W, V, C, true>(gp, len, y + c, s.p, risky, tt + size_t{c} * T);
          for (uint32_t c = cols; c < width; ++c)
            vecmat_tile<W, V, 1, true>(gp, len, y + c, s.p, risky, tt + size_t{c} * T);
        } else {
          for (uint32_t c = 0; c < cols; c += C)
            vecmat_tile<W, V, C, false>(gp, len, y + c, s.p, risky, tt + size_t{c} * T);
          for (uint32_t c = cols; c < width; ++c)
            vecmat_tile<W, V, 1, false>(gp, len, y + c, s.p, risky, tt + size_t{c} * T);
        }
      }
    }
    const size_t word0 = size_t{m} * s.p + c0;
    for (size_t t = 0; t < tiles; ++t) {
      const size_t j0 = t * T, cnt = std::min<size_t>(T, p.lanes - j0);
      const float* tt = tot + t * width * T;
      if (!p.out.list && cnt == T) {
        for (uint32_t c = 0; c < width; ++c)
          std::memcpy(p.out.base + (word0 + c) * p.out.stride + p.out.first + j0,
                      tt + size_t{c} * T, T * sizeof(float));
      } else {
        scatter<T>(tt, T, width, p.out, j0, cnt, word0, 1);
      }
    }
  }
}

// One build per instruction set. The portable one keeps one 8-float vector (two SSE registers)
// per tile row: SSE's 16 registers hold no more.
using ProductFn = void (*)(const UniformProduct&);
struct ProductBuild {
  ProductFn left, right;  // uniform_times_lanes, lanes_times_uniform
  size_t tile_lanes;      // W * V of the build's templates
};

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define AB_TARGET(isa) __attribute__((target(isa)))
#define AB_HAS_TARGETS 1
#else
#define AB_TARGET(isa)
#define AB_HAS_TARGETS 0
#endif

void left_portable(const UniformProduct& p) {
  uniform_times_lanes_tiled<8, 1>(p);
}
void right_portable(const UniformProduct& p) {
  lanes_times_uniform_tiled<8, 1>(p);
}
#if AB_HAS_TARGETS
AB_TARGET("avx2") void left_avx2(const UniformProduct& p) {
  uniform_times_lanes_tiled<8, 2>(p);
}
AB_TARGET("avx2") void right_avx2(const UniformProduct& p) {
  lanes_times_uniform_tiled<8, 2>(p);
}
AB_TARGET("avx512f") void left_avx512(const UniformProduct& p) {
  uniform_times_lanes_tiled<16, 2>(p);
}
AB_TARGET("avx512f") void right_avx512(const UniformProduct& p) {
  lanes_times_uniform_tiled<16, 2>(p);
}
#endif

ProductBuild build_of(VectorIsa isa) {
#if AB_HAS_TARGETS
  if (isa == VectorIsa::Avx512) return {left_avx512, right_avx512, 16 * 2};
  if (isa == VectorIsa::Avx2) return {left_avx2, right_avx2, 8 * 2};
#endif
  return {left_portable, right_portable, 8 * 1};
}

VectorIsa widest_isa() {
  if (host_has(VectorIsa::Avx512)) return VectorIsa::Avx512;
  if (host_has(VectorIsa::Avx2)) return VectorIsa::Avx2;
  return VectorIsa::Portable;
}

std::atomic<VectorIsa> g_isa{widest_isa()};

}  // namespace

const char* vector_isa_name(VectorIsa isa) {
  switch (isa) {
    case VectorIsa::Avx512:
      return "avx512";
    case VectorIsa::Avx2:
      return "avx2";
    default:
      return "portable";
  }
}

bool host_has(VectorIsa isa) {
#if AB_HAS_TARGETS
  __builtin_cpu_init();  // may run before libgcc's constructor has (g_isa's initializer)
  if (isa == VectorIsa::Avx512) return __builtin_cpu_supports("avx512f");
  if (isa == VectorIsa::Avx2) return __builtin_cpu_supports("avx2");
#else
  if (isa != VectorIsa::Portable) return false;
#endif
  return true;
}

VectorIsa product_isa() {
  return g_isa.load(std::memory_order_relaxed);
}

void use_product_isa(VectorIsa isa) {
  g_isa.store(host_has(isa) ? isa : VectorIsa::Portable, std::memory_order_relaxed);
}

size_t product_tile_lanes() {
  return build_of(product_isa()).tile_lanes;
}

void uniform_times_lanes(const UniformProduct& p) {
  build_of(product_isa()).left(p);
}

void lanes_times_uniform(const UniformProduct& p) {
  build_of(product_isa()).right(p);
}

}  // namespace ab
