#include "ir/backends/vm_kernels.h"

#include <array>
#include <cstring>
#include <utility>

#include "ir/scalar_rule.h"

namespace ab {
namespace {

constexpr int arity_of(OpCode c) {
  if (c == OpCode::Select || c == OpCode::Clamp) return 3;
  if (c >= OpCode::Add && c <= OpCode::Pow) return 2;
  return 1;  // Neg ... ToFloat
}

// The word offset the op's access path reaches for the lane of `frame`; false if a dynamic
// index is out of range: exec.cpp's resolve_path on the path as prepare_batch_op decoded it. (A
// uint index of 2^31 or more is out of range either way, so every index can be read as signed.)
bool path_offset(const BatchOp& b, const uint32_t* frame, uint32_t& offset) {
  offset = b.path_offset;
  for (const BatchOp::DynamicStep& step : b.dynamic) {
    const uint32_t raw = frame[step.index];
    if (static_cast<int32_t>(raw) < 0 || raw >= step.count) return false;
    offset += raw * step.stride;
  }
  return true;
}

// Operand k of `b` for the lane of `frame`: its variable's words, or the uniform's words a
// viewed UniformGet would have copied.
const uint32_t* operand(const BatchOp& b, int k, const uint32_t* frame,
                        const UniformData& uniforms) {
  const BatchOp* view = b.view[k];
  if (!view) return frame + b.src[k];
  uint32_t offset = 0;
  path_offset(*view, frame, offset);  // in range: the view's own kernel checked it
  return uniforms[view->op->index].data() + offset;
}

// One loop per common broadcast pattern (a select's a0; a scalar against an array in a binary
// op), so each loop has fixed strides; other patterns (a clamp's one-word bounds) have no
// kernel and run exec_op.
unsigned broadcast_pattern(const BatchOp& b, int arity) {
  unsigned pattern = 0;
  for (int k = 0; k < arity; ++k)
    pattern |= b.broadcast[k] && b.words > 1 ? 1u << k : 0u;
  return pattern;
}
constexpr unsigned kMaxPattern = 2;

// Word i of the result from word i of each operand; a broadcast operand (bit k of Broadcast)
// gives its one word to every i. A destination is either one of the operands (read at i before
// i is written) or apart from them, so the words can be written in place.
template <OpCode C, Scalar S, unsigned Broadcast>
void words_of(uint32_t* dst, const uint32_t* const* src, uint32_t n) {
  constexpr int arity = arity_of(C);
  Fault fault = Fault::None;  // never set: integer division and remainder have no kernel
  for (uint32_t i = 0; i < n; ++i) {
    uint32_t x[3];
    for (int k = 0; k < arity; ++k)
      x[k] = src[k][(Broadcast >> k) & 1 ? 0 : i];
    scalar_rule(C, S, x, dst[i], fault);
  }
}

// The elementwise rule of op C on kind S for every lane.
template <OpCode C, Scalar S>
bool elementwise(const BatchOp& b, const BatchFrames& f, const uint32_t* lanes, size_t count,
                 const UniformData& uniforms) {
  const unsigned pattern = broadcast_pattern(b, arity_of(C));
  auto loop = [&](auto words) {
    for (size_t j = 0; j < count; ++j) {
      uint32_t* frame = f.lane(lanes[j]);
      const uint32_t* src[3] = {operand(b, 0, frame, uniforms), operand(b, 1, frame, uniforms),
                                operand(b, 2, frame, uniforms)};
      words(frame + b.dst, src, b.words);
    }
  };
  switch (pattern) {
    case 0:
      loop(words_of<C, S, 0>);
      break;
    case 1:
      loop(words_of<C, S, 1>);
      break;
    case 2:
      loop(words_of<C, S, 2>);
      break;
    default:
      return false;  // never reached: other patterns get no kernel (broadcast_pattern)
  }
  return true;
}

// dot and sum of G lanes, in exec_op's order (acc = acc + term, from word 0): G independent
// sums keep the adder busy where one lane's sum would wait on each add.
template <OpCode C, Scalar S, size_t G>
void reduce_lanes(const BatchOp& b, const BatchFrames& f, const uint32_t* lanes,
                  const UniformData& uniforms) {
  const uint32_t* xs[G];
  const uint32_t* ys[G];
  uint32_t acc[G];
  for (size_t j = 0; j < G; ++j) {
    const uint32_t* frame = f.lane(lanes[j]);
    xs[j] = operand(b, 0, frame, uniforms);
    ys[j] = C == OpCode::Dot ? operand(b, 1, frame, uniforms) : nullptr;
    acc[j] = 0;  // the zero of int, uint and float alike
  }
  Fault fault = Fault::None;
  for (uint32_t i = 0; i < b.words; ++i)
    for (size_t j = 0; j < G; ++j) {
      uint32_t term = xs[j][i];
      if constexpr (C == OpCode::Dot) {
        const uint32_t pair[2] = {xs[j][i], ys[j][i]};
        scalar_rule(OpCode::Mul, S, pair, term, fault);
      }
      const uint32_t sum[2] = {acc[j], term};
      scalar_rule(OpCode::Add, S, sum, acc[j], fault);
    }
  for (size_t j = 0; j < G; ++j)
    f.lane(lanes[j])[b.dst] = acc[j];
}

template <OpCode C, Scalar S>
bool reduction(const BatchOp& b, const BatchFrames& f, const uint32_t* lanes, size_t count,
               const UniformData& uniforms) {
  constexpr size_t kGroup = 8;
  size_t j = 0;
  for (; j + kGroup <= count; j += kGroup)
    reduce_lanes<C, S, kGroup>(b, f, lanes + j, uniforms);
  for (; j < count; ++j)
    reduce_lanes<C, S, 1>(b, f, lanes + j, uniforms);
  return true;
}

bool constant(const BatchOp& b, const BatchFrames& f, const uint32_t* lanes, size_t count,
              const UniformData&) {
  const uint32_t* imm = b.op->imm.data();
  for (size_t j = 0; j < count; ++j)
    std::memcpy(f.lane(lanes[j]) + b.dst, imm, b.words * sizeof(uint32_t));
  return true;
}

bool copy(const BatchOp& b, const BatchFrames& f, const uint32_t* lanes, size_t count,
          const UniformData&) {
  for (size_t j = 0; j < count; ++j) {
    uint32_t* frame = f.lane(lanes[j]);
    std::memmove(frame + b.dst, frame + b.src[0], b.words * sizeof(uint32_t));
  }
  return true;
}

bool all_in_range(const BatchOp& b, const BatchFrames& f, const uint32_t* lanes, size_t count) {
  uint32_t offset = 0;
  for (size_t j = 0; j < count; ++j)
    if (!path_offset(b, f.lane(lanes[j]), offset)) return false;
  return true;
}

bool uniform_get(const BatchOp& b, const BatchFrames& f, const uint32_t* lanes, size_t count,
                 const UniformData& uniforms) {
  if (!all_in_range(b, f, lanes, count)) return false;
  const uint32_t* data = uniforms[b.op->index].data();
  for (size_t j = 0; j < count; ++j) {
    uint32_t* frame = f.lane(lanes[j]);
    uint32_t offset = 0;
    path_offset(b, frame, offset);
    std::memcpy(frame + b.dst, data + offset, b.words * sizeof(uint32_t));
  }
  return true;
}

// A viewed UniformGet copies nothing; its readers read the uniform (prepare_block_ops).
bool uniform_view(const BatchOp& b, const BatchFrames& f, const uint32_t* lanes, size_t count,
                  const UniformData&) {
  return all_in_range(b, f, lanes, count);
}

bool get(const BatchOp& b, const BatchFrames& f, const uint32_t* lanes, size_t count,
         const UniformData&) {
  if (!all_in_range(b, f, lanes, count)) return false;
  for (size_t j = 0; j < count; ++j) {
    uint32_t* frame = f.lane(lanes[j]);
    uint32_t offset = 0;
    path_offset(b, frame, offset);
    std::memmove(frame + b.dst, frame + b.src[0] + offset, b.words * sizeof(uint32_t));
  }
  return true;
}

// dst = a0 with [path] = a1. The value is read before the copy, as exec_op does.
bool set(const BatchOp& b, const BatchFrames& f, const uint32_t* lanes, size_t count,
         const UniformData&) {
  constexpr uint32_t kMaxValueWords = 64;
  const uint32_t value_words = b.set_value_words;
  if (value_words > kMaxValueWords || !all_in_range(b, f, lanes, count)) return false;
  for (size_t j = 0; j < count; ++j) {
    uint32_t* frame = f.lane(lanes[j]);
    uint32_t offset = 0, value[kMaxValueWords];
    path_offset(b, frame, offset);
    std::memcpy(value, frame + b.src[1], value_words * sizeof(uint32_t));
    if (b.dst != b.src[0])  // `a[i] = v` sets a in place: nothing to copy
      std::memmove(frame + b.dst, frame + b.src[0], b.words * sizeof(uint32_t));
    std::memcpy(frame + b.dst + offset, value, value_words * sizeof(uint32_t));
  }
  return true;
}

constexpr auto kFirstElementwise = static_cast<size_t>(OpCode::Select);
constexpr auto kElementwiseOps = static_cast<size_t>(OpCode::Clamp) - kFirstElementwise + 1;

template <Scalar S, size_t... I>
constexpr std::array<LaneKernel, sizeof...(I)> elementwise_row(std::index_sequence<I...>) {
  return {&elementwise<static_cast<OpCode>(kFirstElementwise + I), S>...};
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

BatchOp prepare_batch_op(const Op& op, const Types& types, const TypeId* var_type,
                         const uint32_t* offset) {
  BatchOp b;
  b.op = &op;
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
      b.run = copy;
      return b;
    case OpCode::Get:
    case OpCode::Set:
    case OpCode::UniformGet: {
      const size_t first_index = op.code == OpCode::Get ? 1 : op.code == OpCode::Set ? 2 : 0;
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
      return b;
    }
    default:
      break;
  }
  const OpClass cls = op_info(op.code).cls;
  if (cls == OpClass::Reduction) {
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
  if (broadcast_pattern(b, arity_of(op.code)) > kMaxPattern) return b;
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
      b.run && (cls == OpClass::Unary || cls == OpClass::Binary || cls == OpClass::Ternary ||
                cls == OpClass::Reduction || op.code == OpCode::Select);
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
  for (const Op& op : block.ops)
    ops.push_back(prepare_batch_op(op, program.types(), var_type, offset));
  for (size_t d = 0; d < ops.size(); ++d) {
    const Op& def = block.ops[d];
    if (def.code != OpCode::UniformGet || program.vars[def.dst].storage != Storage::Temp) continue;
    // Every later op must read the temp only through view-taking kernels, and neither the
    // temp nor an index of the row may be written again in the block.
    bool viewable = block.term.cond != def.dst;
    int reads = 0;
    for (size_t u = d + 1; u < ops.size() && viewable; ++u) {
      viewable = reads_only_as_view(ops[u], def.dst, reads) && !writes(block.ops[u], def.dst);
      for (VarId index : def.args)
        viewable = viewable && !writes(block.ops[u], index);
    }
    if (!viewable || reads == 0) continue;
    ops[d].run = uniform_view;
    for (size_t u = d + 1; u < ops.size(); ++u)
      for (size_t k = 0; k < block.ops[u].args.size() && k < 3; ++k)
        if (block.ops[u].args[k] == def.dst) ops[u].view[k] = &ops[d];
  }
  return ops;
}

}  // namespace ab
