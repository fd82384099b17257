// Shared by every ceiling kernel (bench/ceiling/*.glsl); bench/ceiling.cpp puts `#version 450`,
// STACK_DEPTH (frames per lane) and MAX_ITERATIONS in front of it and the engine's op prelude
// (autobatch/compute.h, op_prelude_glsl) after it. One invocation runs one lane's whole program.
//
// Bindings: 0 = one status word per lane, 1 = the lane's result words, 2.. = the program's
// parameters in the Batch layout (ir/run.h), one buffer each. The host fills the status words
// with CEILING_NOT_FINISHED; a lane writes CEILING_DONE only after its loop ends normally, so a
// loop the driver cut short (lavapipe stops any loop after 65,535 iterations without a word)
// can never pass for a finished lane.

layout(local_size_x = 64) in;

layout(push_constant) uniform Params {
  uint lanes;
  uint seed_lo;  // the random seed, read by the prelude's ab_rand_* (nuts_tree)
  uint seed_hi;
} P;

layout(set = 0, binding = 0, std430) buffer LaneStatus { uint w[]; } lane_status;
layout(set = 0, binding = 1, std430) buffer Results { uint w[]; } results;

const uint CEILING_DONE = 0u;
const uint CEILING_STACK_OVERFLOW = 1u;     // a call chain deeper than STACK_DEPTH frames
const uint CEILING_TOO_MANY_ITERATIONS = 2u;  // past MAX_ITERATIONS: below the driver's cap
const uint CEILING_NOT_FINISHED = 0xffffffffu;

// The head of every kernel's loop: leave it done once `finished` holds, or flagged once the lane
// has used up MAX_ITERATIONS.
#define CEILING_LOOP_EXIT(finished, iteration, status) \
  if (finished) {                                      \
    status = CEILING_DONE;                             \
    break;                                             \
  }                                                    \
  if ((iteration) == MAX_ITERATIONS) {                 \
    status = CEILING_TOO_MANY_ITERATIONS;              \
    break;                                             \
  }
