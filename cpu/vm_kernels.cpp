#include "cpu/vm_kernels.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstring>
#include <utility>

#include "ir/exec.h"
#include "ir/glsl_compat.h"
#include "ir/scalar_rule.h"

// The language's exp and log (shaders/ab_math.glsl), compiled into this file as well as into
// float_math.cpp, so that the loops across lanes below inline them and the compiler vectorises
// them: they are a third of the logistic regression's time when called lane by lane. Each
// lane's result comes from the same float operations in the same order, so its words are
// float_math.cpp's: -fno-trapping-math (CMakeLists.txt) only lets the compiler compute both
// sides of their branches and select, which no float exception flag is read to tell apart.
// Internal (an unnamed namespace): in the shared library an exported copy could be interposed,
// and the compiler would not inline it.
namespace ab::lane_math {
namespace {
using namespace glsl_compat;
#define AB_PRECISE
#define AB_OUT(T) T&
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"  // only a few are used here
#include "shaders/ab_math.glsl"
#pragma GCC diagnostic pop
#undef AB_OUT
#undef AB_PRECISE
}  // namespace
}  // namespace ab::lane_math

namespace ab {

LaneSet lane_set(const uint32_t* lanes, size_t count, std::vector<uint32_t>& mask_storage) {
  LaneSet s{lanes, count, count ? lanes[0] : 0u, true};
  for (size_t j = 1; j < count && s.dense; ++j)
    s.dense = lanes[j] == s.first + j;
  if (s.dense || count <= 2) return s;
  bool sorted = true;
  for (size_t j = 1; j < count && sorted; ++j)
    sorted = lanes[j - 1] < lanes[j];
  const size_t span = size_t{lanes[count - 1]} - s.first + 1;
  if (!sorted || span > 16 * count) return s;
  mask_storage.assign(span, 0u);
  for (size_t j = 0; j < count; ++j)
    mask_storage[lanes[j] - s.first] = ~0u;
  s.mask = mask_storage.data();
  s.span = span;
  return s;
}

namespace {

constexpr int arity_of(OpCode c) {
  if (c == OpCode::Select || c == OpCode::Clamp) return 3;
  if (c >= OpCode::Add && c <= OpCode::Pow) return 2;
  return 1;  // Neg ... ToFloat
}

// The loops across lanes are built twice, for the baseline x86-64 (SSE2: 4 lanes per
// instruction) and for AVX2 (8 lanes), and the first call picks the host's (an ifunc): the
// binary runs on any x86-64 and uses the widest vectors it has. Neither has FMA, and
// -ffp-contract=off would not fuse anyway, so both compute each lane's words exactly.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define AB_LANE_LOOP __attribute__((target_clones("avx2", "default")))
#else
#define AB_LANE_LOOP
#endif

// A lane set's j-th lane, as an index into a word's row of lanes. The kernels offset their row
// pointers by `base` (the first lane of a dense set, 0 otherwise), so a dense set's loops run
// over 0 .. count with unit stride, which the compiler vectorises.
struct Dense {
  size_t operator()(size_t j) const { return j; }
};
struct Listed {
  const uint32_t* list;
  size_t operator()(size_t j) const { return list[j]; }
};
size_t base_of(const LaneSet& s) {
  return s.dense ? s.first : 0;
}
template <class F>
void with_index(const LaneSet& s, F&& f) {
  if (s.dense)
    f(Dense{});
  else
    f(Listed{s.list});
}

// The word offset the op's access path reaches for `lane`; false if a dynamic index is out of
// range: exec.cpp's resolve_path on the path as prepare_batch_op decoded it. (A uint index of
// 2^31 or more is out of range either way, so every index can be read as signed.)
bool lane_offset(const BatchOp& b, const BatchFrames& f, uint32_t lane, uint32_t& offset) {
  offset = b.path_offset;
  for (const BatchOp::DynamicStep& step : b.dynamic) {
    const uint32_t raw = f.at(step.index, lane);
    if (static_cast<int32_t>(raw) < 0 || raw >= step.count) return false;
    offset += raw * step.stride;
  }
  return true;
}

bool all_in_range(const BatchOp& b, const BatchFrames& f, const LaneSet& s) {
  uint32_t offset = 0;
  for (size_t j = 0; j < s.count; ++j)
    if (!lane_offset(b, f, s.list[j], offset)) return false;
  return true;
}

// Whether some lane of the set holds another value than `value` in `row`: an OR of differences,
// which vectorises, over the lanes (dense) or the span under its mask.
AB_LANE_LOOP bool differs(const uint32_t* row, uint32_t value, const LaneSet& s) {
  uint32_t diff = 0;
  if (s.dense) {
    const uint32_t* r = row + s.first;
    for (size_t j = 0; j < s.count; ++j)
      diff |= r[j] ^ value;
  } else if (s.mask) {
    const uint32_t* r = row + s.first;
    for (size_t j = 0; j < s.span; ++j)
      diff |= (r[j] ^ value) & s.mask[j];
  } else {
    for (size_t j = 0; j < s.count; ++j)
      diff |= row[s.list[j]] ^ value;
  }
  return diff != 0;
}

// Whether every lane's indices are the same (then `offset` is where the path reaches): true
// when the chains meet at the same row of data. The indices must be in range.
bool shared_offset(const BatchOp& b, const BatchFrames& f, const LaneSet& s, uint32_t& offset) {
  offset = b.path_offset;
  if (s.count == 0) return true;
  const uint32_t first = s.list[0];
  for (const BatchOp::DynamicStep& step : b.dynamic) {
    const uint32_t* row = f.word(step.index);
    const uint32_t index = row[first];
    if (differs(row, index, s)) return false;
    offset += index * step.stride;
  }
  return true;
}

// Where the op's path reaches for the lanes of the set: one offset for all of them (Shared, in
// `offset`), in range but not the same (PerLane), or out of range for some lane. Shared is
// checked first: lanes that meet at one row need one range check, not one per lane.
enum class Reach { Shared, PerLane, OutOfRange };
Reach reach(const BatchOp& b, const BatchFrames& f, const LaneSet& s, uint32_t& offset) {
  if (shared_offset(b, f, s, offset)) {
    uint32_t first = 0;
    return s.count == 0 || lane_offset(b, f, s.list[0], first) ? Reach::Shared : Reach::OutOfRange;
  }
  return all_in_range(b, f, s) ? Reach::PerLane : Reach::OutOfRange;
}

// Copies, for every lane of the set, words [from, from + n) of the lanes' frames (or, with
// `uniform`, of the uniform at each lane's path offset) to words [to, to + n), where the lanes'
// paths differ.
void copy_per_lane(const BatchOp& b, const BatchFrames& f, const LaneSet& s, const uint32_t* data,
                   uint32_t from, uint32_t to, uint32_t n) {
  for (size_t j = 0; j < s.count; ++j) {
    const uint32_t lane = s.list[j];
    uint32_t offset = 0;
    lane_offset(b, f, lane, offset);
    for (uint32_t w = 0; w < n; ++w)
      f.at(to + w, lane) = data ? data[offset + w] : f.at(from + offset + w, lane);
  }
}

// Word rows [from, from + n) to [to, to + n) for the lanes of the set (ranges apart or equal).
void copy_rows(const BatchFrames& f, const LaneSet& s, uint32_t from, uint32_t to, uint32_t n) {
  if (from == to) return;
  const size_t base = base_of(s);
  for (uint32_t w = 0; w < n; ++w) {
    const uint32_t* src = f.word(from + w) + base;
    uint32_t* dst = f.word(to + w) + base;
    if (s.dense) {
      std::memcpy(dst, src, s.count * sizeof(uint32_t));
    } else {
      for (size_t j = 0; j < s.count; ++j)
        dst[s.list[j]] = src[s.list[j]];
    }
  }
}

// Fills word row `to` with `value` for the lanes of the set.
void fill_row(const BatchFrames& f, const LaneSet& s, uint32_t to, uint32_t value) {
  uint32_t* dst = f.word(to) + base_of(s);
  with_index(s, [&](auto idx) {
    for (size_t j = 0; j < s.count; ++j)
      dst[idx(j)] = value;
  });
}

// The loops below run over compact rows: word w of operand k for the n lanes at
// src[k] + w * stride[k] (stride 0: one word for every w, a broadcast), lane j at [j], or, with
// bit k of Konst, one value for every lane at src[k][w * stride[k]] (a uniform row every lane
// reads at the same index). The destination's word w for lane j is at dst[w * dst_stride + j].
struct Rows {
  const uint32_t* src[3] = {};
  size_t stride[3] = {};
  uint32_t* dst = nullptr;
  size_t dst_stride = 0;
  uint32_t words = 0;
  size_t n = 0;
  // A kernel with a Masked loop writes a Span's rows in place: lane j's words only where
  // mask[j] is ~0 (bind_result_in_place).
  const uint32_t* mask = nullptr;
};

// The op's rule word by word, each across the lanes. Each lane's word is computed by
// scalar_rule alone, as exec_op computes it.
template <OpCode C, Scalar S, unsigned Konst>
AB_LANE_LOOP void op_rows(const Rows& r) {
  constexpr int arity = arity_of(C);
  Fault fault = Fault::None;  // never set: integer division and remainder have no kernel
  for (uint32_t w = 0; w < r.words; ++w) {
    const uint32_t* p0 = r.src[0] + w * r.stride[0];
    const uint32_t* p1 = arity > 1 ? r.src[1] + w * r.stride[1] : nullptr;
    const uint32_t* p2 = arity > 2 ? r.src[2] + w * r.stride[2] : nullptr;
    uint32_t* d = r.dst + w * r.dst_stride;
    const uint32_t k0 = Konst & 1 ? p0[0] : 0;
    uint32_t k1 = 0;
    if constexpr (arity > 1) k1 = Konst & 2 ? p1[0] : 0;
    for (size_t j = 0; j < r.n; ++j) {
      uint32_t x[3];
      x[0] = Konst & 1 ? k0 : p0[j];
      if constexpr (arity > 1) x[1] = Konst & 2 ? k1 : p1[j];
      if constexpr (arity > 2) x[2] = p2[j];
      scalar_rule(C, S, x, d[j], fault);
    }
  }
}

// exp, log, log1p_exp or inv_logit of floats across the lanes (op_rows' loop for them): flatten
// inlines the language's function (lane_math, above) into the loop, which the compiler then
// vectorises (log1p_exp and its derivative inv_logit are a model's pass over its data rows).
constexpr bool inlined_transcendental(OpCode c) {
  return c == OpCode::Exp || c == OpCode::Log || c == OpCode::Log1pExp || c == OpCode::InvLogit;
}
template <OpCode C>
float lane_transcendental(float x) {
  if constexpr (C == OpCode::Exp) return lane_math::ab_exp(x);
  if constexpr (C == OpCode::Log) return lane_math::ab_log(x);
  if constexpr (C == OpCode::Log1pExp) return lane_math::ab_log1p_exp(x);
  return lane_math::ab_inv_logit(x);
}
template <OpCode C, unsigned Konst>
AB_LANE_LOOP __attribute__((flatten)) void transcendental_rows(const Rows& r) {
  static_assert(inlined_transcendental(C));
  for (uint32_t w = 0; w < r.words; ++w) {
    const uint32_t* p0 = r.src[0] + w * r.stride[0];
    uint32_t* d = r.dst + w * r.dst_stride;
    for (size_t j = 0; j < r.n; ++j) {
      const float x = std::bit_cast<float>(Konst & 1 ? p0[0] : p0[j]);
      d[j] = std::bit_cast<uint32_t>(lane_transcendental<C>(x));
    }
  }
}

// acc[j] = acc[j] + x * y (dot) or acc[j] + x (sum), word by word, in exec_op's order: each
// lane's sum is its own chain of adds from word 0, and the lanes' chains run side by side, so
// SIMD across lanes keeps every lane's rounding.
template <OpCode C, Scalar S, unsigned Konst>
AB_LANE_LOOP void accumulate_rows(const Rows& r, uint32_t* acc) {
  Fault fault = Fault::None;
  for (uint32_t w = 0; w < r.words; ++w) {
    const uint32_t* x = r.src[0] + w * r.stride[0];
    const uint32_t* y = C == OpCode::Dot ? r.src[1] + w * r.stride[1] : nullptr;
    const uint32_t kx = Konst & 1 ? x[0] : 0;
    uint32_t ky = 0;
    if constexpr (C == OpCode::Dot) ky = Konst & 2 ? y[0] : 0;
    for (size_t j = 0; j < r.n; ++j) {
      uint32_t term = Konst & 1 ? kx : x[j];
      if constexpr (C == OpCode::Dot) {
        const uint32_t pair[2] = {term, Konst & 2 ? ky : y[j]};
        scalar_rule(OpCode::Mul, S, pair, term, fault);
      }
      const uint32_t sum[2] = {acc[j], term};
      scalar_rule(OpCode::Add, S, sum, acc[j], fault);
    }
  }
}

// dot(row, v) or dot(v, row) of floats, the row a uniform one every lane shares (X[i] when the
// chains meet at a data row): accumulate_rows' sums, but for 32 lanes at a time, held in vector
// registers across all the words instead of read from and written to acc at every word. Each
// lane's sum is the same chain of adds (word 0 first) of the same products. The last lanes (fewer
// than 32) run as one more block whose lanes' words are copied to a zero-padded row word by word:
// one at a time, each lane's chain of 100 dependent adds took as long as a block of 32 (a loop
// tile of 32 lanes with gaps has such a remainder at every data row).
using Floats8 = float __attribute__((vector_size(32)));
template <bool RowFirst>
AB_LANE_LOOP void dot_with_row(const Rows& r, uint32_t* acc) {
  constexpr int kRow = RowFirst ? 0 : 1, kLanes = 1 - kRow;
  constexpr size_t kBlock = 32;  // lanes; four vectors of eight sums
  Floats8 a[4];
  size_t first = 0;
  for (; first + kBlock <= r.n; first += kBlock) {
    std::memcpy(a, acc + first, sizeof a);
    for (uint32_t w = 0; w < r.words; ++w) {
      const float k = std::bit_cast<float>(r.src[kRow][w * r.stride[kRow]]);
      const uint32_t* v = r.src[kLanes] + w * r.stride[kLanes] + first;
      for (int q = 0; q < 4; ++q) {
        Floats8 y;
        std::memcpy(&y, v + 8 * q, sizeof y);
        a[q] = a[q] + (RowFirst ? k * y : y * k);
      }
    }
    std::memcpy(acc + first, a, sizeof a);
  }
  const size_t rest = r.n - first;
  if (rest == 0) return;
  Floats8 y[4] = {};  // the rest's words, zero past them
  std::memset(a, 0, sizeof a);
  std::memcpy(a, acc + first, rest * sizeof(uint32_t));
  for (uint32_t w = 0; w < r.words; ++w) {
    const float k = std::bit_cast<float>(r.src[kRow][w * r.stride[kRow]]);
    std::memcpy(y, r.src[kLanes] + w * r.stride[kLanes] + first, rest * sizeof(uint32_t));
    for (int q = 0; q < 4; ++q)
      a[q] = a[q] + (RowFirst ? k * y[q] : y[q] * k);
  }
  std::memcpy(acc + first, a, rest * sizeof(uint32_t));
}

// The op's rule for one lane, word by word: word w of operand k at src[k][w * stride[k]] (a
// register row's stride is the lane count; a uniform row's 1; a broadcast's 0), of the
// result at dst[w * dst_stride]. For sets too sparse or too small for loops across lanes.
template <OpCode C, Scalar S>
void op_lane(const Rows& r) {
  constexpr int arity = arity_of(C);
  Fault fault = Fault::None;
  for (uint32_t w = 0; w < r.words; ++w) {
    uint32_t x[3];
    for (int k = 0; k < arity; ++k)
      x[k] = r.src[k][w * r.stride[k]];
    scalar_rule(C, S, x, r.dst[w * r.dst_stride], fault);
  }
}

template <OpCode C, Scalar S>
uint32_t accumulate_lane(const Rows& r) {
  Fault fault = Fault::None;
  uint32_t acc = 0;
  for (uint32_t w = 0; w < r.words; ++w) {
    uint32_t term = r.src[0][w * r.stride[0]];
    if constexpr (C == OpCode::Dot) {
      const uint32_t pair[2] = {term, r.src[1][w * r.stride[1]]};
      scalar_rule(OpCode::Mul, S, pair, term, fault);
    }
    const uint32_t sum[2] = {acc, term};
    scalar_rule(OpCode::Add, S, sum, acc, fault);
  }
  return acc;
}

// Per-thread scratch rows (the workers run kernels side by side).
thread_local std::vector<uint32_t> t_result, t_acc;

// How a kernel's loops see a lane set. Dense (consecutive lanes): straight on the rows. Span
// (a set with a mask, as when chains that finished leave gaps): the loops run over the whole
// span, as a GPU's masked lanes do, reading the rows in place, into a scratch result that is
// then blended into the rows under the set's mask (a lane outside the set keeps its words: the
// extra lanes' results, from whatever their words hold, are dropped). Listed (sparser, or one
// or two lanes): lane by lane, each a loop over the words with the lane count as stride.
enum class Visit { Dense, Span, Listed };
Visit visit_of(const LaneSet& s) {
  if (s.count <= 2) return Visit::Listed;
  if (s.dense) return Visit::Dense;
  return s.mask ? Visit::Span : Visit::Listed;
}

// row[j] = mask[j] ? from[j] : row[j] over a span.
AB_LANE_LOOP void blend(uint32_t* row, const uint32_t* from, const uint32_t* mask, size_t n) {
  for (size_t j = 0; j < n; ++j)
    row[j] = (from[j] & mask[j]) | (row[j] & ~mask[j]);
}

// Sets r's register operand k (at frame offset `src`) for the rows starting at lane `base`.
void bind_operand(Rows& r, int k, const BatchFrames& f, uint32_t base, uint32_t src,
                  bool broadcast) {
  r.src[k] = f.word(src) + base;
  r.stride[k] = broadcast ? 0 : f.lanes;
}

// Where the loops write: the rows themselves (Dense, or Span into a Temp) or a scratch result
// (Span).
void bind_result(Rows& r, const BatchFrames& f, const LaneSet& s, Visit visit, uint32_t dst,
                 uint32_t words, bool temp) {
  r.words = words;
  if (visit == Visit::Dense || temp) {
    r.n = visit == Visit::Dense ? s.count : s.span;
    r.dst = f.word(dst) + s.first;
    r.dst_stride = f.lanes;
    return;
  }
  r.n = s.span;
  t_result.resize(size_t{words} * r.n);
  r.dst = t_result.data();
  r.dst_stride = r.n;
}

// For a kernel with a Masked loop: a Span (into a Temp or not) and Dense write the rows in
// place, a Span not into a Temp under the set's mask. This drops bind_result's scratch result
// and store_result's blend, a pass over the destination's words as long as the op's own (the
// blend was a sixth of the regression's time, mostly the 100 words of `block_grad +=`). Returns
// whether the loop must be the Masked one.
bool bind_result_in_place(Rows& r, const BatchFrames& f, const LaneSet& s, Visit visit,
                          uint32_t dst, uint32_t words, bool temp) {
  r.words = words;
  r.n = visit == Visit::Dense ? s.count : s.span;
  r.dst = f.word(dst) + s.first;
  r.dst_stride = f.lanes;
  r.mask = visit == Visit::Span && !temp ? s.mask : nullptr;
  return r.mask != nullptr;
}

// Blends a Span's scratch result (bind_result) into the set's lanes.
void store_result(const Rows& r, const BatchFrames& f, const LaneSet& s, Visit visit, uint32_t dst,
                  bool temp) {
  if (visit != Visit::Span || temp) return;
  for (uint32_t w = 0; w < r.words; ++w)
    blend(f.word(dst + w) + s.first, r.dst + w * r.dst_stride, s.mask, r.n);
}

// Binds the op's operands for rows starting at lane `base` (uniform rows that every lane of the
// set reads at one index as constants); returns the constant operands' bits.
template <int Arity>
unsigned bind_operands(Rows& r, const BatchOp& b, const BatchFrames& f, const LaneSet& s,
                       const UniformData& uniforms, uint32_t base, bool reduction) {
  unsigned konst = 0;
  for (int k = 0; k < Arity; ++k) {
    uint32_t offset = 0;
    const bool broadcast = !reduction && b.broadcast[k] && b.words > 1;
    if (b.view[k] && shared_offset(*b.view[k], f, s, offset)) {
      r.src[k] = uniforms[b.view[k]->op->index].data() + offset;
      r.stride[k] = broadcast ? 0 : 1;
      konst |= 1u << k;
    } else {
      bind_operand(r, k, f, base, b.src[k], broadcast);
    }
  }
  return konst;
}

// For a Listed set: binds the op's operands and destination for each lane alone (n = 1, the
// words' stride the lane count) and calls run(r, the constant operands' bits).
template <int Arity, class F>
void each_listed_lane(const BatchOp& b, const BatchFrames& f, const LaneSet& s,
                      const UniformData& uniforms, bool reduction, F run) {
  for (size_t j = 0; j < s.count; ++j) {
    const uint32_t lane = s.list[j];
    LaneSet one{s.list + j, 1, lane, true};
    Rows r;
    const unsigned konst = bind_operands<Arity>(r, b, f, one, uniforms, lane, reduction);
    r.dst = f.word(b.dst) + lane;
    r.dst_stride = f.lanes;
    r.words = b.words;
    r.n = 1;
    run(r, konst);
  }
}

// The elementwise rule of op C on kind S for every lane.
template <OpCode C, Scalar S>
bool elementwise(const BatchOp& b, const BatchFrames& f, const LaneSet& s,
                 const UniformData& uniforms) {
  constexpr int arity = arity_of(C);
  if (s.count == 0) return true;
  const Visit visit = visit_of(s);
  Rows r;
  if (visit == Visit::Listed) {
    each_listed_lane<arity>(b, f, s, uniforms, false,
                            [](const Rows& one, unsigned) { op_lane<C, S>(one); });
    return true;
  }
  const unsigned konst = bind_operands<arity>(r, b, f, s, uniforms, s.first, false);
  bind_result(r, f, s, visit, b.dst, b.words, b.dst_temp);
  if constexpr (S == Scalar::Float && inlined_transcendental(C)) {
    konst ? transcendental_rows<C, 1>(r) : transcendental_rows<C, 0>(r);
  } else if constexpr (arity == 1) {
    konst ? op_rows<C, S, 1>(r) : op_rows<C, S, 0>(r);
  } else if constexpr (arity == 2) {
    switch (konst) {
      case 0:
        op_rows<C, S, 0>(r);
        break;
      case 1:
        op_rows<C, S, 1>(r);
        break;
      case 2:
        op_rows<C, S, 2>(r);
        break;
      default:
        op_rows<C, S, 3>(r);
        break;
    }
  } else {
    op_rows<C, S, 0>(r);  // a ternary op takes no views (reads_only_as_view)
  }
  store_result(r, f, s, visit, b.dst, b.dst_temp);
  return true;
}

// dot and sum for every lane.
template <OpCode C, Scalar S>
bool reduction(const BatchOp& b, const BatchFrames& f, const LaneSet& s,
               const UniformData& uniforms) {
  constexpr int arity = C == OpCode::Dot ? 2 : 1;
  if (s.count == 0) return true;
  const Visit visit = visit_of(s);
  Rows r;
  r.words = b.words;
  if (visit == Visit::Listed) {
    for (size_t j = 0; j < s.count; ++j) {
      const uint32_t lane = s.list[j];
      LaneSet one{s.list + j, 1, lane, true};
      bind_operands<arity>(r, b, f, one, uniforms, lane, true);
      f.at(b.dst, lane) = accumulate_lane<C, S>(r);
    }
    return true;
  }
  const unsigned konst = bind_operands<arity>(r, b, f, s, uniforms, s.first, true);
  Rows out;
  bind_result(out, f, s, visit, b.dst, 1, b.dst_temp);
  r.n = out.n;
  t_acc.assign(r.n, 0u);  // the accumulators; the zero of int, uint and float alike
  uint32_t* acc = t_acc.data();
  if constexpr (C == OpCode::Dot && S == Scalar::Float) {
    if (konst == 1 || konst == 2) {
      konst == 1 ? dot_with_row<true>(r, acc) : dot_with_row<false>(r, acc);
      std::memcpy(out.dst, acc, r.n * sizeof(uint32_t));
      store_result(out, f, s, visit, b.dst, b.dst_temp);
      return true;
    }
  }
  switch (konst) {
    case 0:
      accumulate_rows<C, S, 0>(r, acc);
      break;
    case 1:
      accumulate_rows<C, S, 1>(r, acc);
      break;
    case 2:
      accumulate_rows<C, S, 2>(r, acc);
      break;
    default:
      accumulate_rows<C, S, 3>(r, acc);
      break;
  }
  std::memcpy(out.dst, acc, r.n * sizeof(uint32_t));
  store_result(out, f, s, visit, b.dst, b.dst_temp);
  return true;
}

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

// a @ b for every lane (the operands apart from the destination: prepare_batch_op).
bool matmul(const BatchOp& b, const BatchFrames& f, const LaneSet& s, const UniformData& uniforms) {
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

// An elementwise op fused with the op before it, which defines one of its operands, a Temp no
// other op reads (prepare_block_ops): dst = a1 C2 (x0 C1 x1), or (x0 C1 x1) C2 a1, word by word
// across the lanes, the first op's result kept in a register instead of written to the Temp and
// read back. Each lane's words are the two rules in exec_op's order, as unfused.
// r.src[0], r.src[1]: the first op's operands (Konst: views of a shared row); r.src[2]: the
// second op's other operand. Masked: the rows are written in place, a lane's words only where
// r.mask has it (the other lanes' results, from whatever their words hold, are dropped).
template <OpCode C1, OpCode C2, unsigned Konst, bool TempFirst, bool Masked>
AB_LANE_LOOP void fused_rows(const Rows& r) {
  Fault fault = Fault::None;
  for (uint32_t w = 0; w < r.words; ++w) {
    const uint32_t* p0 = r.src[0] + w * r.stride[0];
    const uint32_t* p1 = r.src[1] + w * r.stride[1];
    const uint32_t* p2 = r.src[2] + w * r.stride[2];
    uint32_t* d = r.dst + w * r.dst_stride;
    const uint32_t k0 = Konst & 1 ? p0[0] : 0, k1 = Konst & 2 ? p1[0] : 0;
    for (size_t j = 0; j < r.n; ++j) {
      const uint32_t x[2] = {Konst & 1 ? k0 : p0[j], Konst & 2 ? k1 : p1[j]};
      uint32_t t;
      scalar_rule(C1, Scalar::Float, x, t, fault);
      const uint32_t y[2] = {TempFirst ? t : p2[j], TempFirst ? p2[j] : t};
      uint32_t v;
      scalar_rule(C2, Scalar::Float, y, v, fault);
      d[j] = Masked ? (v & r.mask[j]) | (d[j] & ~r.mask[j]) : v;
    }
  }
}

template <OpCode C1, OpCode C2, bool TempFirst>
void fused_lane(const Rows& r) {
  Fault fault = Fault::None;
  for (uint32_t w = 0; w < r.words; ++w) {
    const uint32_t x[2] = {r.src[0][w * r.stride[0]], r.src[1][w * r.stride[1]]};
    uint32_t t;
    scalar_rule(C1, Scalar::Float, x, t, fault);
    const uint32_t other = r.src[2][w * r.stride[2]];
    const uint32_t y[2] = {TempFirst ? t : other, TempFirst ? other : t};
    scalar_rule(C2, Scalar::Float, y, r.dst[w * r.dst_stride], fault);
  }
}

template <OpCode C1, OpCode C2, bool TempFirst>
bool fused(const BatchOp& b, const BatchFrames& f, const LaneSet& s, const UniformData& uniforms) {
  const BatchOp& first = *b.fused;
  const int other = TempFirst ? 1 : 0;  // the second op's operand that is not the Temp
  const bool other_broadcast = b.broadcast[other] && b.words > 1;
  if (s.count == 0) return true;
  const Visit visit = visit_of(s);
  Rows r;
  if (visit == Visit::Listed) {
    for (size_t j = 0; j < s.count; ++j) {
      const uint32_t lane = s.list[j];
      LaneSet one{s.list + j, 1, lane, true};
      bind_operands<2>(r, first, f, one, uniforms, lane, false);
      bind_operand(r, 2, f, lane, b.src[other], other_broadcast);
      r.dst = f.word(b.dst) + lane;
      r.dst_stride = f.lanes;
      r.words = b.words;
      fused_lane<C1, C2, TempFirst>(r);
    }
    return true;
  }
  const unsigned konst = bind_operands<2>(r, first, f, s, uniforms, s.first, false);
  bind_operand(r, 2, f, s.first, b.src[other], other_broadcast);
  const bool masked = bind_result_in_place(r, f, s, visit, b.dst, b.words, b.dst_temp);
  using Loop = void (*)(const Rows&);
  static constexpr Loop kLoops[2][4] = {
      {fused_rows<C1, C2, 0, TempFirst, false>, fused_rows<C1, C2, 1, TempFirst, false>,
       fused_rows<C1, C2, 2, TempFirst, false>, fused_rows<C1, C2, 3, TempFirst, false>},
      {fused_rows<C1, C2, 0, TempFirst, true>, fused_rows<C1, C2, 1, TempFirst, true>,
       fused_rows<C1, C2, 2, TempFirst, true>, fused_rows<C1, C2, 3, TempFirst, true>}};
  kLoops[masked][konst](r);
  return true;
}

// The first op of a fused pair: its words are computed by the second (fused).
bool fused_away(const BatchOp&, const BatchFrames&, const LaneSet&, const UniformData&) {
  return true;
}

bool constant(const BatchOp& b, const BatchFrames& f, const LaneSet& s, const UniformData&) {
  const uint32_t* imm = b.op->imm.data();
  for (uint32_t w = 0; w < b.words; ++w)
    fill_row(f, s, b.dst + w, imm[w]);
  return true;
}

bool copy(const BatchOp& b, const BatchFrames& f, const LaneSet& s, const UniformData&) {
  copy_rows(f, s, b.src[0], b.dst, b.words);
  return true;
}

bool uniform_get(const BatchOp& b, const BatchFrames& f, const LaneSet& s,
                 const UniformData& uniforms) {
  uint32_t offset = 0;
  const Reach at = reach(b, f, s, offset);
  if (at == Reach::OutOfRange) return false;
  const uint32_t* data = uniforms[b.op->index].data();
  if (at == Reach::PerLane) {
    copy_per_lane(b, f, s, data, 0, b.dst, b.words);
    return true;
  }
  for (uint32_t w = 0; w < b.words; ++w)
    fill_row(f, s, b.dst + w, data[offset + w]);
  return true;
}

// A viewed UniformGet copies nothing when every lane reads the same row: its readers read the
// uniform (prepare_block_ops). Otherwise it copies, and they read the copies.
bool uniform_view(const BatchOp& b, const BatchFrames& f, const LaneSet& s,
                  const UniformData& uniforms) {
  uint32_t offset = 0;
  const Reach at = reach(b, f, s, offset);
  if (at == Reach::OutOfRange) return false;
  if (at == Reach::PerLane) copy_per_lane(b, f, s, uniforms[b.op->index].data(), 0, b.dst, b.words);
  return true;
}

// dst = a0[path]; dst and a0 are apart (prepare_batch_op).
bool get(const BatchOp& b, const BatchFrames& f, const LaneSet& s, const UniformData&) {
  uint32_t offset = 0;
  const Reach at = reach(b, f, s, offset);
  if (at == Reach::OutOfRange) return false;
  if (at == Reach::Shared)
    copy_rows(f, s, b.src[0] + offset, b.dst, b.words);
  else
    copy_per_lane(b, f, s, nullptr, b.src[0], b.dst, b.words);
  return true;
}

// dst = a0 with [path] = a1; the value lies apart from dst (prepare_batch_op), so copying a0
// first leaves it as exec_op read it.
bool set(const BatchOp& b, const BatchFrames& f, const LaneSet& s, const UniformData&) {
  uint32_t offset = 0;
  const Reach at = reach(b, f, s, offset);  // before the copy: dst holds no index (as exec_op)
  if (at == Reach::OutOfRange) return false;
  copy_rows(f, s, b.src[0], b.dst, b.words);  // `a[i] = v` sets a in place: nothing to copy
  if (at == Reach::Shared) {
    copy_rows(f, s, b.src[1], b.dst + offset, b.set_value_words);
    return true;
  }
  for (size_t j = 0; j < s.count; ++j) {
    const uint32_t lane = s.list[j];
    lane_offset(b, f, lane, offset);
    for (uint32_t w = 0; w < b.set_value_words; ++w)
      f.at(b.dst + offset + w, lane) = f.at(b.src[1] + w, lane);
  }
  return true;
}

// dst = its operands' words one after another; none of them overlaps dst (prepare_batch_op).
bool make(const BatchOp& b, const BatchFrames& f, const LaneSet& s, const UniformData&) {
  uint32_t at = b.dst;
  for (const BatchOp::Part& part : b.parts) {
    copy_rows(f, s, part.offset, at, part.words);
    at += part.words;
  }
  return true;
}

bool overlap(uint32_t a, uint32_t a_words, uint32_t b, uint32_t b_words) {
  return a < b + b_words && b < a + a_words;
}

constexpr auto kFirstElementwise = static_cast<size_t>(OpCode::Select);
constexpr auto kElementwiseOps = static_cast<size_t>(OpCode::Clamp) - kFirstElementwise + 1;

// Ops defined on floats only (the language's type rules): no kernels for the other kinds,
// which no program reaches.
constexpr bool float_only(OpCode c) {
  return (c >= OpCode::Sqrt && c <= OpCode::Ceil) || c == OpCode::Div || c == OpCode::Rem ||
         c == OpCode::LogSumExp || c == OpCode::Pow;
}
template <OpCode C, Scalar S>
constexpr LaneKernel elementwise_kernel() {
  if constexpr (float_only(C) && S != Scalar::Float)
    return nullptr;
  else
    return &elementwise<C, S>;
}
template <Scalar S, size_t... I>
constexpr std::array<LaneKernel, sizeof...(I)> elementwise_row(std::index_sequence<I...>) {
  return {elementwise_kernel<static_cast<OpCode>(kFirstElementwise + I), S>()...};
}
template <size_t... S>
constexpr std::array<std::array<LaneKernel, kElementwiseOps>, sizeof...(S)> elementwise_table(
    std::index_sequence<S...>) {
  return {elementwise_row<static_cast<Scalar>(S)>(std::make_index_sequence<kElementwiseOps>())...};
}
// [scalar kind][op - Select]
constexpr auto kElementwise = elementwise_table(std::make_index_sequence<4>());

template <size_t... S>
constexpr std::array<std::array<LaneKernel, 2>, sizeof...(S)> reduction_table(
    std::index_sequence<S...>) {
  return {std::array<LaneKernel, 2>{&reduction<OpCode::Dot, static_cast<Scalar>(S)>,
                                    &reduction<OpCode::Sum, static_cast<Scalar>(S)>}...};
}
// [scalar kind][dot, sum]
constexpr auto kReduction = reduction_table(std::make_index_sequence<4>());

// The float ops that fuse (fused): the sums and products of a gradient's terms.
constexpr std::array<OpCode, 3> kFusable = {OpCode::Add, OpCode::Sub, OpCode::Mul};
template <size_t... I>
constexpr std::array<std::array<LaneKernel, 2>, sizeof...(I)> fused_table(
    std::index_sequence<I...>) {
  return {std::array<LaneKernel, 2>{&fused<kFusable[I / 3], kFusable[I % 3], false>,
                                    &fused<kFusable[I / 3], kFusable[I % 3], true>}...};
}
// [first op * 3 + second op][the Temp is the second op's first operand]
constexpr auto kFused = fused_table(std::make_index_sequence<9>());
int fusable_index(OpCode c) {
  for (size_t i = 0; i < kFusable.size(); ++i)
    if (kFusable[i] == c) return static_cast<int>(i);
  return -1;
}

BatchOp prepare_batch_op(const Op& op, const Types& types, const TypeId* var_type,
                         const uint32_t* offset) {
  BatchOp b;
  b.op = &op;
  for (VarId v : op.args)
    if (std::find(b.touched.begin(), b.touched.end(), v) == b.touched.end()) b.touched.push_back(v);
  if (op.dst >= 0 && std::find(b.touched.begin(), b.touched.end(), op.dst) == b.touched.end())
    b.touched.push_back(op.dst);
  if (op.dst >= 0) {
    b.dst = offset[op.dst];
    b.words = types.words(var_type[op.dst]);
  }
  for (size_t k = 0; k < op.args.size() && k < 3; ++k) {
    b.src[k] = offset[op.args[k]];
    b.broadcast[k] = types.words(var_type[op.args[k]]) == 1;
  }
  switch (op.code) {
    case OpCode::Const:
      b.run = constant;
      return b;
    case OpCode::Copy:
      if (b.dst == b.src[0] || !overlap(b.dst, b.words, b.src[0], b.words)) b.run = copy;
      return b;
    case OpCode::Make: {
      bool apart = true;
      for (VarId a : op.args) {
        b.parts.push_back({offset[a], types.words(var_type[a])});
        apart = apart && !overlap(b.dst, b.words, b.parts.back().offset, b.parts.back().words);
      }
      if (apart) b.run = make;
      return b;
    }
    case OpCode::Get:
    case OpCode::Set:
    case OpCode::UniformGet: {
      const size_t first_index = first_index_arg(op.code);
      size_t next = first_index;
      for (const PathStep& step : op.path) {
        if (!step.dynamic) {
          b.path_offset += step.offset;
          continue;
        }
        b.dynamic.push_back({offset[op.args[next++]], step.count, step.stride});
      }
      if (op.code == OpCode::Set) b.set_value_words = types.words(var_type[op.args[1]]);
      b.run = op.code == OpCode::Get ? get : op.code == OpCode::Set ? set : uniform_get;
      // The kernels copy word rows forwards: a source that overlaps the destination without
      // being it runs exec_op (which copies a lane's words with memmove).
      if (op.code == OpCode::Get &&
          overlap(b.dst, b.words, b.src[0], types.words(var_type[op.args[0]])))
        b.run = nullptr;
      if (op.code == OpCode::Set &&
          (overlap(b.dst, b.words, b.src[1], b.set_value_words) ||
           (b.dst != b.src[0] && overlap(b.dst, b.words, b.src[0], b.words))))
        b.run = nullptr;
      return b;
    }
    default:
      break;
  }
  const OpClass cls = op_info(op.code).cls;
  if (op.code == OpCode::MatMul) {
    b.shape = matrix_shape(types, op.code, var_type[op.args[0]], var_type[op.args[1]]);
    const uint32_t a_words = types.words(var_type[op.args[0]]);
    const uint32_t b_words = types.words(var_type[op.args[1]]);
    if (!overlap(b.dst, b.words, b.src[0], a_words) && !overlap(b.dst, b.words, b.src[1], b_words))
      b.run = matmul;
    return b;
  }
  // max(v), min(v), log_sum_exp(v), outer and transpose run exec_op lane by lane.
  if (cls == OpClass::Reduction && (op.code == OpCode::Dot || op.code == OpCode::Sum)) {
    b.words = types.words(var_type[op.args[0]]);
    const Scalar s = types[types.leaf(var_type[op.args[0]])].scalar;
    b.run = kReduction[static_cast<size_t>(s)][op.code == OpCode::Dot ? 0 : 1];
    return b;
  }
  if (cls != OpClass::Unary && cls != OpClass::Binary && cls != OpClass::Ternary &&
      op.code != OpCode::Select)
    return b;
  const VarId kind_var = op.code == OpCode::Select ? op.args[1] : op.args[0];
  const Scalar s = types[types.leaf(var_type[kind_var])].scalar;
  if ((op.code == OpCode::Div || op.code == OpCode::Rem) && s != Scalar::Float) return b;
  b.run = kElementwise[static_cast<size_t>(s)][static_cast<size_t>(op.code) - kFirstElementwise];
  return b;
}

// Whether `op` writes `v`: its destination, or the variable a pop or an update restores.
bool writes(const Op& op, VarId v) {
  const bool restores = op.code == OpCode::Pop || op.code == OpCode::Update;
  return op.dst == v || (restores && op.args[0] == v);
}

// Whether `op` reads `v` only through a kernel that takes views (an elementwise op or a
// reduction with a kernel, never declining), or not at all; `reads` counts the reads.
bool reads_only_as_view(const BatchOp& b, VarId v, int& reads) {
  const Op& op = *b.op;
  const OpClass cls = op_info(op.code).cls;
  const bool takes_views =
      b.run && (cls == OpClass::Binary || cls == OpClass::Reduction || op.code == OpCode::MatMul);
  for (size_t k = 0; k < op.args.size(); ++k) {
    if (op.args[k] != v) continue;
    if (!takes_views || k >= 3) return false;
    ++reads;
  }
  return true;
}

}  // namespace

std::vector<BatchOp> prepare_block_ops(const LoweredBlock& block, const LoweredProgram& program,
                                       const TypeId* var_type, const uint32_t* offset) {
  std::vector<BatchOp> ops;
  for (const Op& op : block.ops) {
    ops.push_back(prepare_batch_op(op, program.types(), var_type, offset));
    ops.back().dst_temp = op.dst >= 0 && program.vars[op.dst].storage == Storage::Temp;
  }
  for (size_t d = 0; d < ops.size(); ++d) {
    const Op& def = block.ops[d];
    if (def.code != OpCode::UniformGet || program.vars[def.dst].storage != Storage::Temp) continue;
    // Every later op must read the temp only through view-taking kernels, the temp must not
    // be written again in the block, nor an index of the row up to the temp's last reader
    // (a loop's increment after the body, as merge_blocks leaves it, is fine).
    bool viewable = block.term.cond != def.dst;
    size_t last_read = d;
    for (size_t u = d + 1; u < ops.size(); ++u)
      for (VarId a : block.ops[u].args)
        if (a == def.dst) last_read = u;
    int reads = 0;
    for (size_t u = d + 1; u < ops.size() && viewable; ++u) {
      viewable = reads_only_as_view(ops[u], def.dst, reads) && !writes(block.ops[u], def.dst);
      for (VarId index : def.args)
        viewable = viewable && (u > last_read || !writes(block.ops[u], index));
    }
    if (!viewable || reads == 0) continue;
    ops[d].run = uniform_view;
    for (size_t u = d + 1; u < ops.size(); ++u)
      for (size_t k = 0; k < block.ops[u].args.size() && k < 3; ++k)
        if (block.ops[u].args[k] == def.dst) ops[u].view[k] = &ops[d];
  }
  // Fuses an elementwise float op into the next when its result is a Temp that only the next
  // reads, as one of its two operands, at full size (`grad += X[i] * (y[i] - s)`: the product
  // is a D-word Temp per lane and row otherwise written and read back).
  for (size_t d = 0; d + 1 < ops.size(); ++d) {
    const Op& def = block.ops[d];
    const Op& use = block.ops[d + 1];
    const int first = fusable_index(def.code), second = fusable_index(use.code);
    if (first < 0 || second < 0 || ops[d].fused || !ops[d].run || !ops[d + 1].run) continue;
    if (program.vars[def.dst].storage != Storage::Temp || use.dst == def.dst) continue;
    if (program.types()[program.types().leaf(var_type[def.args[0]])].scalar != Scalar::Float ||
        program.types()[program.types().leaf(var_type[use.args[0]])].scalar != Scalar::Float)
      continue;
    if (ops[d].words != ops[d + 1].words || (use.args[0] == def.dst) == (use.args[1] == def.dst))
      continue;
    const bool temp_first = use.args[0] == def.dst;
    const int other = temp_first ? 1 : 0;
    if (ops[d + 1].view[other] || block.term.cond == def.dst) continue;
    int reads = 0;
    for (size_t u = d + 1; u < ops.size(); ++u)
      for (VarId a : block.ops[u].args)
        reads += a == def.dst;
    if (reads != 1) continue;
    ops[d + 1].fused = &ops[d];
    ops[d + 1].run = kFused[static_cast<size_t>(first * 3 + second)][temp_first ? 1 : 0];
    ops[d].run = fused_away;
  }
  return ops;
}

}  // namespace ab
