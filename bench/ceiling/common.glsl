// Shared by every ceiling kernel (bench/ceiling/*.glsl); bench/ceiling.cpp puts `#version 450`,
// STACK_DEPTH (frames per lane), MAX_ITERATIONS (loop iterations per lane per dispatch),
// STATE_WORDS (saved words per lane), FIRST_UNIFORM_BINDING, STATE_BINDING and FLAG_BINDING in
// front of it and the engine's op prelude (autobatch/compute.h, op_prelude_glsl) after it. One invocation runs one
// lane's whole program, across as many dispatches as it needs.
//
// Bindings: 0 = one status word per lane, 1 = the lane's result words, 2.. = the program's
// parameters in the Batch layout (ir/run.h), one buffer each; from FIRST_UNIFORM_BINDING the
// program's uniforms, one buffer each (raytrace); then STATE_BINDING, STATE_WORDS
// per lane where a lane that stops at MAX_ITERATIONS saves its state (its stack and its
// variables; the device keeps them between dispatches), and FLAG_BINDING, one word the host
// zeroes before each dispatch: a lane that suspends sets it, and the host dispatches again.
//
// The host fills the status words with CEILING_NOT_STARTED. A lane starts from its inputs when it
// reads CEILING_NOT_STARTED, from its saved state when it reads CEILING_SUSPENDED, and returns at
// once otherwise. Inside a dispatch the status is CEILING_NOT_FINISHED until the loop ends
// normally, so a loop the driver cut short (lavapipe stops any loop after 65,535 iterations
// without a word) can never pass for a finished or suspended lane.

layout(local_size_x = 64) in;

layout(push_constant) uniform Params {
  uint lanes;
  uint seed_lo;  // the random seed, read by the prelude's ab_rand_* (nuts_tree)
  uint seed_hi;
} P;

layout(set = 0, binding = 0, std430) buffer LaneStatus { uint w[]; } lane_status;
layout(set = 0, binding = 1, std430) buffer Results { uint w[]; } results;
layout(set = 0, binding = STATE_BINDING, std430) buffer SavedState { uint w[]; } saved;
layout(set = 0, binding = FLAG_BINDING, std430) buffer NotFinished { uint w[]; } not_finished;

const uint CEILING_DONE = 0u;
const uint CEILING_STACK_OVERFLOW = 1u;       // a call chain deeper than STACK_DEPTH frames
const uint CEILING_TOO_MANY_ITERATIONS = 2u;  // one indivisible step needs > MAX_ITERATIONS
const uint CEILING_SUSPENDED = 3u;            // state saved; runs on in the next dispatch
const uint CEILING_NOT_STARTED = 0xfffffffeu;
const uint CEILING_NOT_FINISHED = 0xffffffffu;

// Whether this invocation has a lane with work left (not started or suspended).
bool ceiling_lane_runs(uint lane) {
  if (lane >= P.lanes) return false;
  const uint status = lane_status.w[lane];
  return status == CEILING_NOT_STARTED || status == CEILING_SUSPENDED;
}

bool ceiling_resuming(uint lane) { return lane_status.w[lane] == CEILING_SUSPENDED; }

// Where word `i` of the lane's saved state lives.
uint saved_at(uint lane, uint i) { return lane * STATE_WORDS + i; }

// Call after saving the state: marks the lane and asks the host for another dispatch.
void ceiling_suspend(uint lane) {
  lane_status.w[lane] = CEILING_SUSPENDED;
  not_finished.w[0] = 1u;
}

// The head of every kernel's loop: leave it done once `finished` holds, or suspended once the
// lane has used up this dispatch's MAX_ITERATIONS.
#define CEILING_LOOP_EXIT(finished, iteration, status) \
  if (finished) {                                      \
    status = CEILING_DONE;                             \
    break;                                             \
  }                                                    \
  if ((iteration) == MAX_ITERATIONS) {                 \
    status = CEILING_SUSPENDED;                        \
    break;                                             \
  }
