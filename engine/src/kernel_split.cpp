#include "engine/src/kernel_split.h"

#include <algorithm>
#include <set>

#include "ir/analysis/sweep_order.h"

namespace ab {
namespace {

// Weights of block_cost, in rough GLSL statements.
constexpr uint32_t kBlockOverhead = 8;  // step count, budget check, the sweep's test, PC update
constexpr uint32_t kBufferAccess = 8;   // a storage-buffer load or store (a loop over SIMD lanes)
constexpr uint32_t kFaultCheck = 4;     // a fault test and its record
constexpr uint32_t kWordsUnrolled = 8;  // glsl_codegen's kUnrollWords: longer values loop

uint32_t words_cost(uint32_t words) {
  return std::min(words, kWordsUnrolled + 2);
}

}  // namespace

uint32_t block_cost(const LoweredProgram& program, int32_t b, Residency residency,
                    uint32_t register_words) {
  const LoweredBlock& block = program.blocks[b];
  const Types& types = program.types();
  auto words = [&](VarId v) { return types.words(program.vars[v].type); };
  uint32_t cost = kBlockOverhead;
  std::set<VarId> kept, written;  // Register and Stacked variables
  auto note = [&](VarId v) {
    if (program.vars[v].storage != Storage::Temp) kept.insert(v);
  };
  for (const Op& op : block.ops) {
    for (VarId a : op.args)
      note(a);
    if (op.dst >= 0) {
      note(op.dst);
      written.insert(op.dst);
    }
    const uint32_t n = op.dst >= 0 ? words(op.dst) : 1;
    switch (op.code) {
      case OpCode::Push:
      case OpCode::Pop:
      case OpCode::Update:
        cost += kBufferAccess * words_cost(words(op.args[0])) + kFaultCheck;
        break;
      case OpCode::UniformGet:
        cost += kBufferAccess * words_cost(n) + kFaultCheck * static_cast<uint32_t>(op.path.size());
        break;
      case OpCode::Get:
      case OpCode::Set:
        cost += words_cost(n) + kFaultCheck * static_cast<uint32_t>(op.path.size());
        break;
      case OpCode::Div:
      case OpCode::Rem:
      case OpCode::Emit:
        cost += kBufferAccess * words_cost(words(op.args[0])) + kFaultCheck;
        break;
      case OpCode::Assert:
        cost += words_cost(n) + kFaultCheck;
        break;
      default:
        cost += words_cost(n);
        break;
    }
  }
  switch (block.term.kind) {
    case Terminator::Kind::PushJump:
      cost += kBufferAccess + kFaultCheck + 4;
      break;
    case Terminator::Kind::Return:
      cost += kBufferAccess + 2;
      break;
    case Terminator::Kind::Branch:
      note(block.term.cond);
      cost += 1;
      break;
    case Terminator::Kind::Jump:
      cost += 1;
      break;
    case Terminator::Kind::TailJump:  // the call count; parameters were copied by the block's ops
      cost += 2;
      break;
  }
  for (VarId v : kept) {
    const uint32_t n = words(v), moves = written.count(v) ? 2 : 1;
    if (residency == Residency::Memory) {
      cost += kBufferAccess * words_cost(n) * moves;
    } else if (n <= register_words) {
      cost += 4 * words_cost(n);  // a case of ab_load's and ab_store's switches
    } else {
      // Left in the state buffer: a load (and a store) per use, one access in a loop past
      // kWordsUnrolled words, so the code does not grow with the value.
      cost += (n <= kWordsUnrolled ? kBufferAccess * n : kBufferAccess + 2) * moves;
    }
  }
  return cost;
}

namespace {

std::vector<BlockRange> split(const std::vector<uint32_t>& cost, uint32_t max_cost) {
  const auto blocks = static_cast<int32_t>(cost.size());
  uint64_t total = 0;
  for (uint32_t c : cost)
    total += c;
  if (max_cost == 0 || total <= uint64_t{kSplitAbove} * max_cost) return {{0, blocks}};
  std::vector<BlockRange> parts;
  BlockRange part{0, 0};
  uint64_t sum = 0;
  for (int32_t b = 0; b < blocks; ++b) {
    if (part.end > part.first && sum + cost[b] > max_cost) {
      parts.push_back(part);
      part = {b, b};
      sum = 0;
    }
    part.end = b + 1;
    sum += cost[b];
  }
  parts.push_back(part);
  return parts;
}

}  // namespace

KernelSplit split_kernels(const LoweredProgram& program, uint32_t max_cost,
                          uint32_t register_words) {
  std::vector<uint32_t> memory(program.blocks.size()), registers(program.blocks.size());
  for (size_t b = 0; b < program.blocks.size(); ++b) {
    memory[b] = block_cost(program, static_cast<int32_t>(b), Residency::Memory);
    registers[b] =
        block_cost(program, static_cast<int32_t>(b), Residency::Registers, register_words);
  }
  KernelSplit result;
  result.memory_parts = split(memory, max_cost);
  result.register_parts = split(registers, max_cost);
  if (max_cost == 0) return result;
  if (result.register_parts.size() > 1) {
    result.copy_callees = false;
    return result;
  }
  // The copies repeat blocks in the lane kernel (up to kMaxSweepNodesPerBlock times).
  uint64_t with_copies = 0;
  for (int32_t b : sweep_graph(program).block)
    with_copies += registers[b];
  result.copy_callees = with_copies <= uint64_t{kSplitAbove} * max_cost;
  return result;
}

uint32_t automatic_register_words(const LoweredProgram& program, uint32_t max_cost) {
  return split_kernels(program, max_cost, kRegisterWords).register_parts.size() > 1
             ? kLargeProgramRegisterWords
             : kRegisterWords;
}

}  // namespace ab
