#include "ir/exec.h"

#include <cstring>

#include "ir/float_math.h"
#include "ir/random.h"

namespace ab {
namespace {

uint32_t* at(const FrameView& f, VarId v) {
  return f.words + f.offset[v];
}

// Resolves an access path to a word offset; on a dynamic index out of range, false with `bad`
// naming it.
bool resolve_path(const Op& op, size_t first_index_arg, const Types& types, const FrameView& f,
                  uint32_t& offset, IndexFault* bad = nullptr) {
  offset = 0;
  size_t next = first_index_arg;
  for (const PathStep& step : op.path) {
    if (!step.dynamic) {
      offset += step.offset;
      continue;
    }
    const VarId index_var = op.args[next++];
    const uint32_t raw = *at(f, index_var);
    const bool is_signed = types[f.type[index_var]].scalar == Scalar::Int;
    if ((is_signed && static_cast<int32_t>(raw) < 0) || raw >= step.count) {
      if (bad) *bad = {static_cast<uint32_t>(next - 1 - first_index_arg), raw};
      return false;
    }
    offset += raw * step.stride;
  }
  return true;
}

Fault elementwise(const Op& op, const Types& types, const FrameView& f) {
  const uint32_t n = types.words(f.type[op.dst]);
  const size_t arity = op.args.size();
  // Select's operand kind is that of its value operands; other ops take the first operand's.
  const VarId kind_var = op.code == OpCode::Select ? op.args[1] : op.args[0];
  const Scalar in = types[types.leaf(f.type[kind_var])].scalar;
  const uint32_t* src[3] = {};
  bool broadcast[3] = {};
  for (size_t k = 0; k < arity; ++k) {
    src[k] = at(f, op.args[k]);
    broadcast[k] = types.words(f.type[op.args[k]]) == 1;
  }
  uint32_t* dst = at(f, op.dst);
  // Compute into a scratch first when n > 1 so a destination that aliases an operand is safe.
  uint32_t small[16];
  std::vector<uint32_t> big;
  uint32_t* result = small;
  if (n > 16) {
    big.resize(n);
    result = big.data();
  }
  Fault fault = Fault::None;
  for (uint32_t i = 0; i < n; ++i) {
    uint32_t x[3];
    for (size_t k = 0; k < arity; ++k)
      x[k] = src[k][broadcast[k] ? 0 : i];
    if (!eval_scalar(op.code, in, x, result[i], fault)) return fault;
  }
  std::memcpy(dst, result, n * sizeof(uint32_t));
  return Fault::None;
}

// max(v), min(v): the chain of the binary rule from v[0]; log_sum_exp(v): ab_lse_shift's sum.
uint32_t reduce_extreme(OpCode code, Scalar in, const uint32_t* xs, uint32_t n) {
  Fault fault = Fault::None;
  const OpCode rule = code == OpCode::ReduceMin ? OpCode::Min : OpCode::Max;
  uint32_t acc = xs[0];
  for (uint32_t i = 1; i < n; ++i) {
    const uint32_t pair[2] = {acc, xs[i]};
    eval_scalar(rule, in, pair, acc, fault);
  }
  if (code != OpCode::ReduceLogSumExp) return acc;
  const float shift = ab_lse_shift(bits_float(acc));
  float s = 0.0f;
  for (uint32_t i = 0; i < n; ++i)
    s = s + ab_exp(bits_float(xs[i]) - shift);
  return float_bits(shift + ab_log(s));
}

Fault reduce(const Op& op, const Types& types, const FrameView& f) {
  const VarId a = op.args[0];
  const uint32_t n = types.words(f.type[a]);
  const Scalar in = types[types.leaf(f.type[a])].scalar;
  const uint32_t* xs = at(f, a);
  if (op.code != OpCode::Dot && op.code != OpCode::Sum) {
    *at(f, op.dst) = reduce_extreme(op.code, in, xs, n);
    return Fault::None;
  }
  Fault fault = Fault::None;
  const auto add = [&](uint32_t& acc, uint32_t term) {
    const uint32_t sum[2] = {acc, term};
    eval_scalar(OpCode::Add, in, sum, acc, fault);
  };
  uint32_t acc = sum_start(op.code, in);
  if (op.code == OpCode::Sum) {
    for (uint32_t i = 0; i < n; ++i)
      add(acc, xs[i]);
  } else {  // dot: a product's element (product_element, autobatch/numerics.h)
    const uint32_t* ys = at(f, op.args[1]);
    for_each_product_block(n, [&](uint32_t first, uint32_t end) {
      uint32_t partial = sum_start(op.code, in);
      for (uint32_t i = first; i < end; ++i) {
        const uint32_t pair[2] = {xs[i], ys[i]};
        uint32_t term = 0;
        eval_scalar(OpCode::Mul, in, pair, term, fault);
        add(partial, term);
      }
      add(acc, partial);
    });
  }
  *at(f, op.dst) = acc;
  return Fault::None;
}

}  // namespace

size_t first_index_arg(OpCode code) {
  return code == OpCode::Get ? 1 : code == OpCode::Set ? 2 : 0;
}

std::optional<IndexFault> find_index_fault(const Op& op, const Types& types, const FrameView& f) {
  if (op.code != OpCode::Get && op.code != OpCode::Set && op.code != OpCode::UniformGet)
    return std::nullopt;
  uint32_t offset = 0;
  IndexFault bad;
  if (resolve_path(op, first_index_arg(op.code), types, f, offset, &bad)) return std::nullopt;
  return bad;
}

Fault exec_op(const Op& op, const Types& types, const FrameView& f, LaneRandom& rng,
              const UniformData& uniforms, std::vector<uint32_t>& emitted) {
  switch (op.code) {
    case OpCode::Const:
      std::memcpy(at(f, op.dst), op.imm.data(), op.imm.size() * sizeof(uint32_t));
      return Fault::None;
    case OpCode::Copy:
      std::memmove(at(f, op.dst), at(f, op.args[0]),
                   types.words(f.type[op.dst]) * sizeof(uint32_t));
      return Fault::None;
    case OpCode::Make: {
      std::vector<uint32_t> value;
      value.reserve(types.words(f.type[op.dst]));
      for (VarId a : op.args) {
        const uint32_t* w = at(f, a);
        value.insert(value.end(), w, w + types.words(f.type[a]));
      }
      std::memcpy(at(f, op.dst), value.data(), value.size() * sizeof(uint32_t));
      return Fault::None;
    }
    case OpCode::Get: {
      uint32_t offset = 0;
      if (!resolve_path(op, 1, types, f, offset)) return Fault::IndexOutOfRange;
      std::memmove(at(f, op.dst), at(f, op.args[0]) + offset,
                   types.words(f.type[op.dst]) * sizeof(uint32_t));
      return Fault::None;
    }
    case OpCode::Set: {
      uint32_t offset = 0;
      if (!resolve_path(op, 2, types, f, offset)) return Fault::IndexOutOfRange;
      const uint32_t value_words = types.words(f.type[op.args[1]]);
      std::vector<uint32_t> value(at(f, op.args[1]), at(f, op.args[1]) + value_words);
      std::memmove(at(f, op.dst), at(f, op.args[0]),
                   types.words(f.type[op.dst]) * sizeof(uint32_t));
      std::memcpy(at(f, op.dst) + offset, value.data(), value_words * sizeof(uint32_t));
      return Fault::None;
    }
    case OpCode::UniformGet: {
      uint32_t offset = 0;
      if (!resolve_path(op, 0, types, f, offset)) return Fault::IndexOutOfRange;
      std::memcpy(at(f, op.dst), uniforms.at(op.index).data() + offset,
                  types.words(f.type[op.dst]) * sizeof(uint32_t));
      return Fault::None;
    }
    case OpCode::Dot:
    case OpCode::Sum:
    case OpCode::ReduceMax:
    case OpCode::ReduceMin:
    case OpCode::ReduceLogSumExp:
      return reduce(op, types, f);
    case OpCode::MatMul:
    case OpCode::Outer:
    case OpCode::Transpose:
    case OpCode::Cholesky:
    case OpCode::TriSolve:
    case OpCode::TriSolveT: {
      const TypeId b = op.args.size() > 1 ? f.type[op.args[1]] : Types::kVoid;
      const MatrixShape shape = matrix_shape(types, op.code, f.type[op.args[0]], b);
      // Into a scratch first: the destination may alias an operand.
      std::vector<uint32_t> result(types.words(f.type[op.dst]));
      matrix_words(op.code, shape, at(f, op.args[0]),
                   op.args.size() > 1 ? at(f, op.args[1]) : nullptr, result.data());
      std::memcpy(at(f, op.dst), result.data(), result.size() * sizeof(uint32_t));
      return Fault::None;
    }
    case OpCode::RandUniform:
      *at(f, op.dst) = float_bits(random_uniform(rng.seed, rng.lane, rng.draws++));
      return Fault::None;
    case OpCode::RandNormal:
      *at(f, op.dst) = float_bits(random_normal(rng.seed, rng.lane, rng.draws++));
      return Fault::None;
    case OpCode::Assert:
      return *at(f, op.args[0]) ? Fault::None : Fault::AssertFailed;
    case OpCode::Emit: {
      const uint32_t* w = at(f, op.args[0]);
      emitted.insert(emitted.end(), w, w + types.words(f.type[op.args[0]]));
      return Fault::None;
    }
    case OpCode::Call:
    case OpCode::Push:
    case OpCode::Pop:
    case OpCode::Update:
    case OpCode::Count_:
      return Fault::None;  // control and stack ops belong to the backends
    default:
      return elementwise(op, types, f);
  }
}

}  // namespace ab
