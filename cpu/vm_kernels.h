// The VM's batched op kernels. Algorithm 2 runs a block for every lane waiting there, so the VM
// runs the block op by op, each op over all those lanes at once (op-major), instead of lane by
// lane: an op is decoded once per step, not once per lane. The VM's state is laid out lanes
// innermost (word w of every lane side by side, as the Vulkan engine's state buffer is), so a
// kernel's inner loop runs across lanes: one loop per word of the destination, each the bare
// operation on consecutive lanes, which the compiler turns into SIMD instructions serving
// several lanes at once (scalar_rule with a constant op and kind, folded). SIMD across lanes
// does not change any lane's arithmetic: every lane computes the words exec_op would, with the
// same float operations in the same order (which of two NaNs an add passes on may differ: the
// language leaves NaN payloads open). A uniform row every lane reads at the same index (a row
// of data, when the chains meet at a gradient) is read once per word for all of them. Gets,
// sets and uniform gets decline a step where some lane's index is out of range, and ops
// without a kernel (integer division, random draws, emit, asserts)
// run exec_op lane by lane on the op's operands gathered into a small frame, so faults are
// exec_op's.
#pragma once

#include <cstdint>
#include <vector>

#include "autobatch/batch.h"  // UniformData
#include "ir/ir.h"

namespace ab {

// Every lane's variables, lanes innermost: word w (of the layout_words order) of lane l is at
// words[w * lanes + l].
struct BatchFrames {
  uint32_t* words = nullptr;
  uint32_t lanes = 0;  // the lane stride
  uint32_t* word(uint32_t w) const { return words + size_t{w} * lanes; }
  uint32_t& at(uint32_t w, uint32_t lane) const { return words[size_t{w} * lanes + lane]; }
};

// The lanes an op runs for: list[0 .. count), distinct. `dense` when they are the consecutive
// lanes first, first + 1, ... (in that order): the kernels' loops then have unit stride.
// `mask` (span words, ~0 for a lane of the set, else 0, from lane `first` on) when the lanes
// are in order and fill at least a sixteenth of the span from the first to the last: the
// kernels then run their loops across the whole span and blend the results in.
struct LaneSet {
  const uint32_t* list = nullptr;
  size_t count = 0;
  uint32_t first = 0;
  bool dense = false;
  const uint32_t* mask = nullptr;
  size_t span = 0;
};
// `mask_storage` holds the mask while the set is in use.
LaneSet lane_set(const uint32_t* lanes, size_t count, std::vector<uint32_t>& mask_storage);

struct BatchOp;
// Runs the op for the lanes and returns true, or returns false having written nothing when
// some lane would fault (an index out of range): exec_op then runs it lane by lane.
using LaneKernel = bool (*)(const BatchOp& op, const BatchFrames& frames, const LaneSet& lanes,
                            const UniformData& uniforms);

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
  struct Part {
    uint32_t offset = 0, words = 0;
  };
  std::vector<Part> parts;  // Make: its operands, in order
  MatrixShape shape;        // MatMul: the product's M, K, P
  // The destination is a Temp (dead outside the block): a loop across a span of lanes may
  // write it for the lanes outside the set too, instead of blending.
  bool dst_temp = false;
  // Operands read straight from a uniform: the UniformGet that defined the operand, which
  // then only checks its indices (see prepare_block_ops).
  const BatchOp* view[3] = {};
  // The op before this one when the two are fused (prepare_block_ops): it defines one of this
  // op's operands, a Temp no other op reads, and this op's kernel computes its words on the fly
  // instead of reading them back (that op's own kernel then does nothing).
  const BatchOp* fused = nullptr;
  // Words read where they come from in a frame of one lane (row_loop, sum_in_frames; see
  // prepare_block_ops). Operand k of a binary op, `in_place[k]`: a Const whose words are all one
  // value (an adjoint's zero fill), no op between touching it and this op overwriting it, read
  // as that one immediate; or a Get of a static slice that only this op reads, its source not
  // written in between, read in the source. A float sum's operand, `made`: the Make just before
  // it, read as the Make's parts. Across lanes the operands are read from the frame, which the
  // Const, Get or Make wrote.
  const BatchOp* in_place[2] = {};
  const BatchOp* made = nullptr;
  // A Const, Get or Make whose only reader reads it so: run_lanes_alone skips it.
  bool read_in_place = false;
  // For exec_op lane by lane: the variables the op reads or writes (its operands and its
  // destination), each gathered into a small frame of their own.
  std::vector<VarId> touched;
};

// A block's ops bound to the frame layout. A matrix product's uniform operand (X in `X @ w`) is
// such a reader too: the product then reads X where it lies, once for all the lanes. A
// UniformGet into a Temp variable (a row of data,
// say) whose only readers are later kernels of the block is not copied when every lane reads
// the same row: those readers read the uniform where it lies, at the row the same indices pick
// (they are not written in between), once for all the lanes. Where the lanes' rows differ, the
// UniformGet copies them as usual and the readers read the copies. A float add, sub or mul
// whose result is a Temp that only the next op (an add, sub or mul of the same size) reads is
// fused into it: BatchOp::fused.
// The VM's threads split a matrix product with one uniform operand (X @ w, g @ X) themselves,
// not by chunks of lanes running the whole block: the lanes' register tiles
// (cpu/vm_product_tiles.h) by the rows of X @ w or the columns of g @ X, so that a few lanes'
// product splits as evenly as many lanes' and no part holds a tile's slots empty. Every output
// element is computed alone in its own order, so the parts give the whole product's bits.
struct ProductSplit {
  uint32_t lane_parts = 1, slice_parts = 1;  // part i: lanes i / slice_parts, slice i % slice_parts
  uint32_t parts() const { return lane_parts * slice_parts; }
};
// The multiply-adds of the op per lane (M * K * P), 0 for an op that is no product with a kernel.
uint64_t product_terms(const BatchOp& b);
// At most `wanted` parts of the op for the lanes; one (parts() == 1) when it is no product with
// one uniform operand.
ProductSplit split_product(const BatchOp& b, const BatchFrames& frames, const LaneSet& lanes,
                           const UniformData& uniforms, unsigned wanted);
// Runs part `part` of the split; the parts write disjoint words and may run side by side.
void matmul_kernel_part(const BatchOp& b, const BatchFrames& frames, const LaneSet& lanes,
                        const UniformData& uniforms, const ProductSplit& split, unsigned part);

// A float sum (the op's kernel is the float sum's) for each of `count` frames of one lane
// (at most 8; vm_lane_alone.h), their chains of adds interleaved, each in exec_op's order; false,
// having done nothing, for any other op or more frames.
bool sum_in_frames(const BatchOp& b, uint32_t* const* frames, size_t count,
                   const UniformData& uniforms);

std::vector<BatchOp> prepare_block_ops(const LoweredBlock& block, const LoweredProgram& program,
                                       const TypeId* var_type, const uint32_t* offset);

}  // namespace ab
