// Internal to the VM's kernels (vm_kernels.cpp, vm_products.cpp): lane sets as rows of words
// across lanes, and binding an op's operands and destination to them. In an unnamed namespace,
// as they were in one file: each kernel file has its own copy, which the compiler inlines and
// vectorises (the AB_LANE_LOOP loops are cloned per file for AVX2 and the baseline).
#pragma once

#include <cstring>
#include <vector>

#include "cpu/vm_kernels.h"

namespace ab {
namespace {

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"  // each kernel file uses some of them

// The loops across lanes are built three times, for the baseline x86-64 (SSE2: 4 lanes per
// instruction), AVX2 (8 lanes) and AVX-512F (16: log1p_exp and inv_logit over the regression's
// 10,000 rows went from 41% to 27% of its time at 256 chains), and the first call picks the
// host's (an ifunc): the binary runs on any x86-64 and uses the widest vectors it has. None
// fuses a multiply and an add (-ffp-contract=off), so each computes each lane's words exactly.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define AB_LANE_LOOP __attribute__((target_clones("avx512f", "avx2", "default")))
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
  if (from == to || s.count == 0) return;
  if (f.lanes == 1) {  // a frame of one lane: the words side by side
    std::memmove(f.word(to), f.word(from), size_t{n} * sizeof(uint32_t));
    return;
  }
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

// Per-thread scratch rows (the workers run kernels side by side).
thread_local std::vector<uint32_t> t_result, t_acc, t_dot_partial;

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

// Eight floats, one AVX2 register (vector_size: the baseline clone splits it in two).
using Floats8 = float __attribute__((vector_size(32)));

#pragma GCC diagnostic pop

}  // namespace

// a @ b for every lane (the operands apart from the destination: prepare_batch_op), in
// vm_products.cpp.
bool matmul_kernel(const BatchOp& b, const BatchFrames& f, const LaneSet& s,
                   const UniformData& uniforms);

}  // namespace ab
