#include "cpu/vm_kernels.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstring>
#include <utility>

#include "cpu/vm_rows.h"
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

// sum or dot of one lane, in exec_op's order (dot: a product's element, sum_start in ir/ops.h).
template <OpCode C, Scalar S>
uint32_t accumulate_lane(const Rows& r) {
  Fault fault = Fault::None;
  const auto add = [&](uint32_t& acc, uint32_t term) {
    const uint32_t sum[2] = {acc, term};
    scalar_rule(OpCode::Add, S, sum, acc, fault);
  };
  const auto add_terms = [&](uint32_t first, uint32_t end, uint32_t& acc) {
    for (uint32_t w = first; w < end; ++w) {
      uint32_t term = r.src[0][w * r.stride[0]];
      if constexpr (C == OpCode::Dot) {
        const uint32_t pair[2] = {term, r.src[1][w * r.stride[1]]};
        scalar_rule(OpCode::Mul, S, pair, term, fault);
      }
      add(acc, term);
    }
  };
  uint32_t acc = sum_start(C, S);
  if constexpr (C == OpCode::Dot) {
    for_each_product_block(r.words, [&](uint32_t first, uint32_t end) {
      uint32_t partial = sum_start(C, S);
      add_terms(first, end, partial);
      add(acc, partial);
    });
  } else {
    add_terms(0, r.words, acc);
  }
  return acc;
}

// The rows of words [first, end) of r's operands.
Rows words_of(const Rows& r, uint32_t first, uint32_t end) {
  Rows part = r;
  for (int k = 0; k < 3; ++k)
    if (part.src[k]) part.src[k] += first * r.stride[k];
  part.words = end - first;
  return part;
}

// op_rows (or transcendental_rows) for the constant operands' bits `konst`.
template <OpCode C, Scalar S>
void run_rows(const Rows& r, unsigned konst) {
  constexpr int arity = arity_of(C);
  if constexpr (S == Scalar::Float && inlined_transcendental(C)) {
    konst ? transcendental_rows<C, 1>(r) : transcendental_rows<C, 0>(r);
  } else if constexpr (arity == 1) {
    konst ? op_rows<C, S, 1>(r) : op_rows<C, S, 0>(r);
  } else if constexpr (arity == 2) {
    switch (konst) {
      case 0:
        return op_rows<C, S, 0>(r);
      case 1:
        return op_rows<C, S, 1>(r);
      case 2:
        return op_rows<C, S, 2>(r);
      default:
        return op_rows<C, S, 3>(r);
    }
  } else {
    op_rows<C, S, 0>(r);
  }
}

// The op in a frame of one lane (f.lanes == 1: a run of one lane, or a block run a lane at a
// time, vm_lane_alone.h): each operand's words lie side by side, so the loop runs across the
// words (vectorised over the rows of an array, not the lanes), a one-word operand broadcast as a
// constant. Each word is computed by the same rule as across lanes. False, having written
// nothing, for a ternary op with a one-word operand (op_rows has no constant third operand).
// Binds operand k of op b in a frame of one lane to r.src[slot]; true when it is one word for
// all the op's words (a broadcast or a constant's one value).
bool bind_row_operand(Rows& r, int slot, const BatchOp& b, int k, const BatchFrames& f,
                      const LaneSet& s, const UniformData& uniforms) {
  if (const BatchOp* source = k < 2 ? b.in_place[k] : nullptr) {
    if (source->op->code == OpCode::Const) {  // all its words one value: that word, broadcast
      r.src[slot] = source->op->imm.data();
      return true;
    }
    r.src[slot] = f.word(source->src[0] + source->path_offset);  // a static slice, in place
    return false;
  }
  uint32_t offset = 0;
  const bool view = b.view[k] && shared_offset(*b.view[k], f, s, offset);
  r.src[slot] = view ? uniforms[b.view[k]->op->index].data() + offset : f.word(b.src[k]);
  return b.broadcast[k] && b.words > 1;
}

template <OpCode C, Scalar S>
bool row_loop(const BatchOp& b, const BatchFrames& f, const LaneSet& s,
              const UniformData& uniforms) {
  constexpr int arity = arity_of(C);
  Rows r;
  unsigned konst = 0;
  for (int k = 0; k < arity; ++k)
    if (bind_row_operand(r, k, b, k, f, s, uniforms)) konst |= 1u << k;
  if (arity == 3 && konst) return false;
  r.dst = f.word(b.dst);
  r.words = 1;
  r.n = b.words;
  run_rows<C, S>(r, konst);
  return true;
}

// The elementwise rule of op C on kind S for every lane.
template <OpCode C, Scalar S>
bool elementwise(const BatchOp& b, const BatchFrames& f, const LaneSet& s,
                 const UniformData& uniforms) {
  constexpr int arity = arity_of(C);
  if (s.count == 0) return true;
  const Visit visit = visit_of(s);
  Rows r;
  if (f.lanes == 1 && row_loop<C, S>(b, f, s, uniforms)) return true;
  if (visit == Visit::Listed) {
    each_listed_lane<arity>(b, f, s, uniforms, false,
                            [](const Rows& one, unsigned) { op_lane<C, S>(one); });
    return true;
  }
  unsigned konst = bind_operands<arity>(r, b, f, s, uniforms, s.first, false);
  bind_result(r, f, s, visit, b.dst, b.words, b.dst_temp);
  if (arity == 3) konst = 0;  // a ternary op takes no views (reads_only_as_view)
  run_rows<C, S>(r, konst);
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
  t_acc.assign(r.n, sum_start(C, S));  // the accumulators
  uint32_t* acc = t_acc.data();
  // Adds the terms of `rows` into `into`, lane by lane.
  const auto accumulate = [konst](const Rows& rows, uint32_t* into) {
    if constexpr (C == OpCode::Dot && S == Scalar::Float) {
      if (konst == 1 || konst == 2)
        return konst == 1 ? dot_with_row<true>(rows, into) : dot_with_row<false>(rows, into);
    }
    switch (konst) {
      case 0:
        return accumulate_rows<C, S, 0>(rows, into);
      case 1:
        return accumulate_rows<C, S, 1>(rows, into);
      case 2:
        return accumulate_rows<C, S, 2>(rows, into);
      default:
        return accumulate_rows<C, S, 3>(rows, into);
    }
  };
  if (C == OpCode::Dot && S == Scalar::Float && r.words > kProductBlock) {
    // a product's element (product_element, autobatch/numerics.h): a partial per block, added to
    // the total from +0
    t_dot_partial.resize(r.n);
    uint32_t* partial = t_dot_partial.data();
    for_each_product_block(r.words, [&](uint32_t first, uint32_t end) {
      std::fill_n(partial, r.n, sum_start(C, S));
      accumulate(words_of(r, first, end), partial);
      for (size_t j = 0; j < r.n; ++j)
        acc[j] = std::bit_cast<uint32_t>(std::bit_cast<float>(acc[j]) +
                                         std::bit_cast<float>(partial[j]));
    });
  } else {
    accumulate(r, acc);
  }
  std::memcpy(out.dst, acc, r.n * sizeof(uint32_t));
  store_result(out, f, s, visit, b.dst, b.dst_temp);
  return true;
}

// An elementwise op fused with the op before it, which defines one of its operands, a Temp no
// other op reads (prepare_block_ops): dst = a1 C2 (x0 C1 x1), or (x0 C1 x1) C2 a1, word by word
// across the lanes, the first op's result kept in a register instead of written to the Temp and
// read back. Each lane's words are the two rules in exec_op's order, as unfused.
// r.src[0], r.src[1]: the first op's operands (Konst bits 1, 2: views of a shared row); r.src[2]:
// the second op's other operand (Konst bit 4: one word, in a frame of one lane). Masked: the rows
// are written in place, a lane's words only where r.mask has it (the other lanes' results, from
// whatever their words hold, are dropped).
template <OpCode C1, OpCode C2, unsigned Konst, bool TempFirst, bool Masked>
AB_LANE_LOOP void fused_rows(const Rows& r) {
  Fault fault = Fault::None;
  for (uint32_t w = 0; w < r.words; ++w) {
    const uint32_t* p0 = r.src[0] + w * r.stride[0];
    const uint32_t* p1 = r.src[1] + w * r.stride[1];
    const uint32_t* p2 = r.src[2] + w * r.stride[2];
    uint32_t* d = r.dst + w * r.dst_stride;
    const uint32_t k0 = Konst & 1 ? p0[0] : 0, k1 = Konst & 2 ? p1[0] : 0;
    const uint32_t k2 = Konst & 4 ? p2[0] : 0;
    for (size_t j = 0; j < r.n; ++j) {
      const uint32_t x[2] = {Konst & 1 ? k0 : p0[j], Konst & 2 ? k1 : p1[j]};
      uint32_t t;
      scalar_rule(C1, Scalar::Float, x, t, fault);
      const uint32_t other = Konst & 4 ? k2 : p2[j];
      const uint32_t y[2] = {TempFirst ? t : other, TempFirst ? other : t};
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
  // In a frame of one lane: one loop across the words.
  if (f.lanes == 1) {
    Rows r;
    unsigned konst = 0;
    for (int k = 0; k < 2; ++k)
      if (bind_row_operand(r, k, first, k, f, s, uniforms)) konst |= 1u << k;
    if (bind_row_operand(r, 2, b, other, f, s, uniforms)) konst |= 4u;
    r.dst = f.word(b.dst);
    r.words = 1;
    r.n = b.words;
    using Loop = void (*)(const Rows&);
    static constexpr Loop kRowLoops[8] = {
        fused_rows<C1, C2, 0, TempFirst, false>, fused_rows<C1, C2, 1, TempFirst, false>,
        fused_rows<C1, C2, 2, TempFirst, false>, fused_rows<C1, C2, 3, TempFirst, false>,
        fused_rows<C1, C2, 4, TempFirst, false>, fused_rows<C1, C2, 5, TempFirst, false>,
        fused_rows<C1, C2, 6, TempFirst, false>, fused_rows<C1, C2, 7, TempFirst, false>};
    kRowLoops[konst](r);
    return true;
  }
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
  if (f.lanes == 1 && s.count == 1) {  // a frame of one lane: the words side by side
    std::memcpy(f.word(b.dst), imm, size_t{b.words} * sizeof(uint32_t));
    return true;
  }
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
  if (f.lanes == 1 && s.count == 1) {  // a frame of one lane: the words side by side
    std::memcpy(f.word(b.dst), data + offset, size_t{b.words} * sizeof(uint32_t));
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

// Float sums of `count` (at most 8) lanes' chains of adds at once, each the sum's own order:
// one lane's chain waits on each add, several interleaved fill the adder. Scalar adds: packing
// the lanes' words into a vector per word (SLP) cost more than the adds.
template <size_t G>
__attribute__((optimize("no-tree-slp-vectorize"))) void interleaved_sums(const uint32_t* const* src,
                                                                         uint32_t words,
                                                                         uint32_t* acc) {
  float a[G];
  for (size_t g = 0; g < G; ++g)
    a[g] = std::bit_cast<float>(acc[g]);
  for (uint32_t w = 0; w < words; ++w)
    for (size_t g = 0; g < G; ++g)
      a[g] = a[g] + std::bit_cast<float>(src[g][w]);
  for (size_t g = 0; g < G; ++g)
    acc[g] = std::bit_cast<uint32_t>(a[g]);
}

}  // namespace

bool sum_in_frames(const BatchOp& b, uint32_t* const* frames, size_t count,
                   const UniformData& uniforms) {
  if (b.run != kReduction[static_cast<size_t>(Scalar::Float)][1] || count > 8) return false;
  const uint32_t* src[8];
  uint32_t acc[8];
  const uint32_t first = 0;
  const LaneSet one{&first, 1, 0, true};
  for (size_t g = 0; g < count; ++g) {
    const BatchFrames frame{frames[g], 1};
    uint32_t offset = 0;
    const bool view = b.view[0] && shared_offset(*b.view[0], frame, one, offset);
    src[g] = view ? uniforms[b.view[0]->op->index].data() + offset : frame.word(b.src[0]);
    acc[g] = sum_start(OpCode::Sum, Scalar::Float);
  }
  using Sums = void (*)(const uint32_t* const*, uint32_t, uint32_t*);
  static constexpr Sums kSums[8] = {interleaved_sums<1>, interleaved_sums<2>, interleaved_sums<3>,
                                    interleaved_sums<4>, interleaved_sums<5>, interleaved_sums<6>,
                                    interleaved_sums<7>, interleaved_sums<8>};
  if (count == 0) return true;
  if (!b.made) {
    kSums[count - 1](src, b.words, acc);
  } else {  // the Make's parts where they lie, one after another: the same chain of adds
    for (const BatchOp::Part& part : b.made->parts) {
      for (size_t g = 0; g < count; ++g)
        src[g] = frames[g] + part.offset;
      kSums[count - 1](src, part.words, acc);
    }
  }
  for (size_t g = 0; g < count; ++g)
    frames[g][b.dst] = acc[g];
  return true;
}

namespace {

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
      b.run = matmul_kernel;
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

// Whether `op` reads or writes `v`.
bool touches(const Op& op, VarId v) {
  return writes(op, v) || std::find(op.args.begin(), op.args.end(), v) != op.args.end();
}

// A Const of an array whose words are all one value (an adjoint's zero fill), a Temp whose next
// toucher is a binary op with a kernel that reads it and overwrites it whole (`a = add a, x`):
// in a frame of one lane that op reads the value as an immediate, and the fill is skipped.
void read_constants_in_place(const LoweredBlock& block, const LoweredProgram& program,
                             std::vector<BatchOp>& ops) {
  for (size_t d = 0; d < ops.size(); ++d) {
    const Op& def = block.ops[d];
    if (def.code != OpCode::Const || ops[d].words < 2 ||
        program.vars[def.dst].storage != Storage::Temp || block.term.cond == def.dst ||
        std::count(def.imm.begin(), def.imm.end(), def.imm[0]) != std::ssize(def.imm))
      continue;
    size_t u = d + 1;
    while (u < ops.size() && !touches(block.ops[u], def.dst))
      ++u;
    if (u == ops.size()) continue;
    const Op& use = block.ops[u];
    if (op_info(use.code).cls != OpClass::Binary || !ops[u].run || use.dst != def.dst) continue;
    for (size_t k = 0; k < 2; ++k)
      if (use.args[k] == def.dst) ops[u].in_place[k] = &ops[d];
    ops[d].read_in_place = true;
  }
}

// A Get of a static slice into a Temp that one binary op with a kernel reads, once, its source
// not written from the Get to that op: in a frame of one lane the op reads the slice in the
// source, and the Get's copy is skipped.
void read_gets_in_place(const LoweredBlock& block, const LoweredProgram& program,
                        std::vector<BatchOp>& ops) {
  for (size_t d = 0; d < ops.size(); ++d) {
    const Op& def = block.ops[d];
    if (def.code != OpCode::Get || ops[d].run != get || !ops[d].dynamic.empty() ||
        ops[d].words < 2 || program.vars[def.dst].storage != Storage::Temp ||
        block.term.cond == def.dst)
      continue;
    const VarId source = def.args[0];
    size_t u = d + 1;
    while (u < ops.size() && !touches(block.ops[u], def.dst) && !writes(block.ops[u], source))
      ++u;
    if (u == ops.size()) continue;
    const Op& use = block.ops[u];
    int reads = 0;
    for (size_t later = u; later < ops.size(); ++later)
      reads += static_cast<int>(
          std::count(block.ops[later].args.begin(), block.ops[later].args.end(), def.dst));
    const bool one_operand =
        use.args.size() == 2 && (use.args[0] == def.dst) != (use.args[1] == def.dst);
    if (op_info(use.code).cls != OpClass::Binary || !ops[u].run || reads != 1 || !one_operand ||
        use.dst == source || use.dst == def.dst)
      continue;
    ops[u].in_place[use.args[0] == def.dst ? 0 : 1] = &ops[d];
    ops[d].read_in_place = true;
  }
}

// A Make into a Temp that only the float sum right after it reads: in a frame of one lane the
// sum adds the Make's parts where they lie (`lp += ...` over a loop's rows: lp, then the rows),
// and the Make's copy is skipped.
void read_makes_in_place(const LoweredBlock& block, const LoweredProgram& program,
                         std::vector<BatchOp>& ops) {
  const LaneKernel float_sum = kReduction[static_cast<size_t>(Scalar::Float)][1];
  for (size_t d = 0; d + 1 < ops.size(); ++d) {
    const Op& def = block.ops[d];
    if (def.code != OpCode::Make || ops[d].run != make || ops[d + 1].run != float_sum ||
        block.ops[d + 1].args[0] != def.dst || program.vars[def.dst].storage != Storage::Temp ||
        block.term.cond == def.dst)
      continue;
    int reads = 0;
    for (size_t u = d + 1; u < ops.size(); ++u)
      reads +=
          static_cast<int>(std::count(block.ops[u].args.begin(), block.ops[u].args.end(), def.dst));
    if (reads != 1) continue;
    ops[d + 1].made = &ops[d];
    ops[d].read_in_place = true;
  }
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
  read_constants_in_place(block, program, ops);
  read_gets_in_place(block, program, ops);
  read_makes_in_place(block, program, ops);
  return ops;
}

}  // namespace ab
