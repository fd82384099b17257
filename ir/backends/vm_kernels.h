// The VM's batched op kernels. Algorithm 2 runs a block for every lane waiting there, so the VM
// runs the block op by op, each op over all those lanes at once (op-major), instead of lane by
// lane: an op is decoded once per step, not once per lane, and its loops are the bare operation
// (scalar_rule with a constant op and kind, which the compiler folds). A kernel computes the
// words exec_op would, with the same float operations in the same order (which of two NaNs an add
// passes on may differ: the language leaves NaN payloads open). Gets, sets and uniform gets
// decline a step where some lane's index is out of range, and ops without a kernel (integer
// division, random draws, emit, asserts, a clamp's one-word bounds) run exec_op lane by lane, so
// faults are exec_op's.
#pragma once

#include <cstdint>
#include <vector>

#include "autobatch/batch.h"  // UniformData
#include "ir/ir.h"

namespace ab {

// Every lane's variables, lane after lane, each in layout_words order.
struct BatchFrames {
  uint32_t* words = nullptr;
  uint32_t lane_words = 0;  // words per lane
  uint32_t* lane(uint32_t l) const { return words + size_t{l} * lane_words; }
};

struct BatchOp;
// Runs the op for lanes[0 .. count) and returns true, or returns false having written nothing
// when some lane would fault (an index out of range): exec_op then runs it lane by lane.
using LaneKernel = bool (*)(const BatchOp& op, const BatchFrames& frames, const uint32_t* lanes,
                            size_t count, const UniformData& uniforms);

// An op bound to the frame layout: its kernel and its operands' word offsets, decoded once.
struct BatchOp {
  const Op* op = nullptr;
  LaneKernel run = nullptr;  // null: run exec_op per lane
  uint32_t words = 0;        // the destination's words (the operands' for a reduction)
  uint32_t dst = 0;          // word offsets in a lane's frame
  uint32_t src[3] = {};
  bool broadcast[3] = {};  // a one-word operand applied to every word
  // Get, Set, UniformGet: the path's static offset and its dynamic steps
  uint32_t path_offset = 0;
  struct DynamicStep {
    uint32_t index = 0;  // the index variable's word offset
    uint32_t count = 0, stride = 0;
  };
  std::vector<DynamicStep> dynamic;
  uint32_t set_value_words = 0;  // Set: the value's words
  // Operands read straight from a uniform: the UniformGet that defined the operand, which
  // then only checks its indices (see prepare_block_ops).
  const BatchOp* view[3] = {};
};

// A block's ops bound to the frame layout. A UniformGet into a Temp variable (a row of data,
// say) whose only readers are later kernels of the block is not copied: those readers read
// the uniform where it lies, at the row the same indices pick (they are not written in
// between). It saves a copy of every row per lane, a fifth of a regression's gradient.
std::vector<BatchOp> prepare_block_ops(const LoweredBlock& block, const LoweredProgram& program,
                                       const TypeId* var_type, const uint32_t* offset);

}  // namespace ab
