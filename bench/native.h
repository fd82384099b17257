// The native baseline: each benchmark program written by hand in plain C++ (ordinary recursion,
// no batching machinery), run over the lanes with one std::thread per core. It is the CPU's
// ceiling for that program. Each lane function reads lane `lane`'s inputs from the batch in the
// Batch layout (autobatch/batch.h) and writes its result words to `out`; results must equal the
// interpreter's bit for bit (same float operations in the same order, same random draws).
#pragma once

#include <cstdint>

#include "autobatch/batch.h"
#include "autobatch/numerics.h"

namespace ab::bench {

// A lane's (or chain's) random stream: draw k of lane L is the language's k-th uniform() or
// normal() call in program order (autobatch/numerics.h), so a native baseline draws what the
// program does.
struct LaneStream {
  uint64_t seed = 0;
  uint32_t lane = 0;
  uint64_t draws = 0;
  float uniform() { return random_uniform(seed, lane, draws++); }
  float normal() { return random_normal(seed, lane, draws++); }
};

using NativeLaneFn = void (*)(const Batch& batch, uint64_t seed, uint32_t lane, uint32_t* out);

// Runs `lane_fn` for every lane of `batch`, lanes split into contiguous chunks over
// min(lanes, hardware threads) threads. `out_words` is the result's size per lane.
RunResult run_native(NativeLaneFn lane_fn, const Batch& batch, uint32_t out_words, uint64_t seed);

void native_fib(const Batch& batch, uint64_t seed, uint32_t lane, uint32_t* out);
void native_ackermann(const Batch& batch, uint64_t seed, uint32_t lane, uint32_t* out);
void native_collatz(const Batch& batch, uint64_t seed, uint32_t lane, uint32_t* out);
void native_tak(const Batch& batch, uint64_t seed, uint32_t lane, uint32_t* out);
void native_nuts_tree(const Batch& batch, uint64_t seed, uint32_t lane, uint32_t* out);
void native_raytrace(const Batch& batch, uint64_t seed, uint32_t lane, uint32_t* out);

}  // namespace ab::bench
