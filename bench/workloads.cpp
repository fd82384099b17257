// Inputs for the benchmarked programs. Light ones are sized so the slowest systems (the global
// Vulkan schedules on lavapipe, ~1e5 lane-calls/s) keep --quick under 3 minutes; heavy ones so
// the glsl ceiling runs >= 0.5 s at 16384 lanes (collatz cannot: see below), with the slowest
// systems left out of heavy rows above 1024 lanes (harness.cpp) so the full suite stays under 20.
#include "bench/workloads.h"

#include <bit>

namespace ab::bench {
namespace {

// SplitMix64 of (program salt, lane, input index): a fixed pseudo-random number per input.
uint64_t mix(uint64_t salt, uint32_t lane, uint32_t input) {
  uint64_t z = salt * 0x9E3779B97F4A7C15ull + (uint64_t{lane} << 8) + input + 1;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// A value in [lo, hi] for this lane and input.
uint32_t pick(uint64_t salt, uint32_t lane, uint32_t input, uint32_t lo, uint32_t hi) {
  return lo + static_cast<uint32_t>(mix(salt, lane, input) % (uint64_t{hi} - lo + 1));
}

Batch empty_batch(uint32_t lanes, size_t params) {
  Batch batch;
  batch.lanes = lanes;
  batch.inputs.resize(params);
  return batch;
}

Batch fib_batch(uint32_t lanes, InputSize size, bool quick) {
  const uint32_t top = size == InputSize::Heavy ? 18 : quick ? 12 : 14;
  Batch batch = empty_batch(lanes, 1);
  for (uint32_t lane = 0; lane < lanes; ++lane)
    batch.inputs[0].push_back(pick(1, lane, 0, 0, top));
  return batch;
}

Batch ackermann_batch(uint32_t lanes, InputSize size, bool quick) {
  const uint32_t top_n = size == InputSize::Heavy ? 5 : quick ? 2 : 3;
  Batch batch = empty_batch(lanes, 2);
  for (uint32_t lane = 0; lane < lanes; ++lane) {
    batch.inputs[0].push_back(pick(2, lane, 0, 0, 3));
    batch.inputs[1].push_back(pick(2, lane, 1, 0, top_n));
  }
  return batch;
}

// Heavy collatz stays below 113,383, the first start whose path passes the language's 32-bit
// int (3x + 1 would wrap, and a negative x never reaches 1); below it no path takes more than
// 350 steps, so collatz cannot be made much heavier than light.
Batch collatz_batch(uint32_t lanes, InputSize size, bool quick) {
  const uint32_t top = size == InputSize::Heavy ? 100000 : quick ? 500 : 1000;
  Batch batch = empty_batch(lanes, 1);
  for (uint32_t lane = 0; lane < lanes; ++lane)
    batch.inputs[0].push_back(pick(3, lane, 0, 1, top));
  return batch;
}

// Heavy: y below x / 2 and z below x / 4 would make the slowest lane (12, 6, 3: 63,609 calls)
// 2.5x slower than (12, 5, 2), and with it every schedule whose time follows the slowest lane.
Batch tak_batch(uint32_t lanes, InputSize size, bool quick) {
  Batch batch = empty_batch(lanes, 3);
  const bool heavy = size == InputSize::Heavy;
  const uint32_t top = heavy ? 12 : quick ? 6 : 8;
  for (uint32_t lane = 0; lane < lanes; ++lane) {
    batch.inputs[0].push_back(pick(4, lane, 0, 0, top));
    batch.inputs[1].push_back(pick(4, lane, 1, 0, heavy ? 5 : top / 2));
    batch.inputs[2].push_back(pick(4, lane, 2, 0, heavy ? 2 : top / 4));
  }
  return batch;
}

Batch nuts_tree_batch(uint32_t lanes, InputSize size, bool quick) {
  const uint32_t top = size == InputSize::Heavy ? 12 : quick ? 1 : 2;
  Batch batch = empty_batch(lanes, 3);
  for (uint32_t lane = 0; lane < lanes; ++lane) {
    for (uint32_t i = 0; i < 4; ++i) {
      // q0 in [-2, 2) in steps of 1/256: exactly representable, the same on every device.
      const float q =
          static_cast<float>(static_cast<int32_t>(pick(5, lane, i, 0, 1023)) - 512) / 256.0f;
      batch.inputs[0].push_back(std::bit_cast<uint32_t>(q));
    }
    // eps in {0.125, 0.25, ..., 0.625}: a different trajectory length per lane.
    const float eps = static_cast<float>(pick(5, lane, 4, 1, 5)) * 0.125f;
    batch.inputs[1].push_back(std::bit_cast<uint32_t>(eps));
    batch.inputs[2].push_back(pick(5, lane, 5, 1, top));
  }
  return batch;
}

}  // namespace

const char* input_size_name(InputSize size) {
  return size == InputSize::Heavy ? "heavy" : "light";
}

const std::vector<Workload>& workloads() {
  static const std::vector<Workload> all = {
      {"fib", "n in 0..14", "n in 0..12", "n in 0..18", 1, 1, fib_batch, native_fib, 64, 64},
      {"ackermann", "m in 0..3, n in 0..3", "m in 0..3, n in 0..2", "m in 0..3, n in 0..5", 1, 1,
       ackermann_batch, native_ackermann, 256, 320},
      {"collatz", "n in 1..1000", "n in 1..500", "n in 1..100000", 1, 1, collatz_batch,
       native_collatz, 8, 8},
      {"tak", "x in 0..8, y in 0..4, z in 0..2", "x in 0..6, y in 0..3, z in 0..1",
       "x in 0..12, y in 0..5, z in 0..2", 1, 1, tak_batch, native_tak, 64, 64},
      {"nuts_tree", "q0 in [-2,2)^4, eps in 0.125..0.625, iterations 1..2, seed 1",
       "q0 in [-2,2)^4, eps in 0.125..0.625, iterations 1, seed 1",
       "q0 in [-2,2)^4, eps in 0.125..0.625, iterations 1..12, seed 1", 1, 4, nuts_tree_batch,
       native_nuts_tree, 32, 32},
  };
  return all;
}

const Workload* find_workload(const std::string& name) {
  for (const Workload& w : workloads())
    if (w.name == name) return &w;
  return nullptr;
}

}  // namespace ab::bench
