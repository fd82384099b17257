// Running a block of array code one lane at a time. The VM's state is laid out lanes innermost
// (vm_kernels.h), so an op over an array of N words is N loops across the step's lanes: with
// many lanes each loop is a few SIMD instructions, but with few lanes (NUTS chains spread over
// the sampler's blocks: a gradient step of 3 of 16 chains) each is a short loop that costs as
// much as a full one, and the step costs nearly what all the lanes would. A block whose arrays
// are Temps (dead outside it, as a vectorised loop's are: docs/language.md) can instead run for
// each lane alone in a frame of one lane, where each array's words lie side by side: its
// variables that live across blocks are copied in, the ops run across the words (vectorised over
// the rows, vm_kernels.cpp's one-lane paths), and what the block writes is copied back. Every
// word is computed by the same rule in the same order as across lanes (a sum is the same chain of
// adds), so results, faults and steps are the same; only the cost differs.
#pragma once

#include <cstdint>
#include <vector>

#include "cpu/vm_kernels.h"

namespace ab {

// A block's plan: whether it may run a lane at a time, and the word ranges of a lane's frame
// to copy in (every variable its ops touch that is not a Temp) and out (those its ops write,
// and the terminator's condition).
struct LaneAlonePlan {
  bool eligible = false;
  size_t array_words = 0;  // the words its ops write per lane
  std::vector<BatchOp::Part> in, out;
};

// Eligible: every op has a kernel (no stack op, draw, assert or emit) and none is a matrix
// product (its register tiles read the matrix once for all the lanes), some op writes an array
// of at least kLaneAloneMinWords words, and the words copied in and out are few beside those the
// ops write. The VM then runs every step of the block a lane at a time on one thread (a step
// its pool runs in parallel still runs in chunks of lanes): on the earnings model's gradient
// (1,192 rows, docs/performance.md, "A lane at a time") that cost 0.2-0.3x of the lanes side by
// side for 1 to 8 lanes, 0.83x for 16 and 0.73x for 64.
constexpr uint32_t kLaneAloneMinWords = 256;
LaneAlonePlan plan_lane_alone(const LoweredBlock& block, const LoweredProgram& program,
                              const std::vector<BatchOp>& ops, const uint32_t* offset);

// Runs the block's ops for each of `lanes` alone in a frame of one lane: copies plan.in in,
// runs the kernels (not those whose reader reads their words in place: BatchOp::read_in_place),
// copies plan.out back into `frames`. The lanes run kLaneAloneGroup at a time,
// op by op, each in its own frame of `scratch` (kLaneAloneGroup frames of a lane's words), so
// that their float sums run at once (sum_in_frames: one lane's chain of adds waits on each add).
// A lane whose kernel declines (an index out of range) has nothing written to `frames`: it is
// taken out of `lanes` and returned, for the caller to run as usual.
constexpr size_t kLaneAloneGroup = 8;
std::vector<uint32_t> run_lanes_alone(const LaneAlonePlan& plan, const std::vector<BatchOp>& ops,
                                      const BatchFrames& frames, std::vector<uint32_t>& lanes,
                                      std::vector<uint32_t>& scratch, const UniformData& uniforms);

}  // namespace ab
