// The table of samples/*.ab (sample_table.h). Test inputs draw from lane_hash with one salt per
// input, the bench's from mix() with one salt per program: the inputs the tests' and the bench's
// former tables drew, so no expected figure changes meaning.
//
// Bench inputs: light ones are sized so the slowest systems (the global Vulkan schedules on
// lavapipe, ~1e5 lane-calls/s) keep --quick under 3 minutes; heavy ones so the glsl ceiling runs
// >= 0.5 s at 16384 lanes (collatz cannot: see below), with the slowest systems left out of heavy
// rows above 1024 lanes (bench/harness.cpp) so the full suite stays under 20.
#include "samples/table/sample_table.h"

#include <bit>
#include <cmath>

#include "autobatch/value_type.h"
#include "samples/raytrace/scene.h"

namespace ab::samples {
namespace {

// The bench inputs. SplitMix64 of (program salt, lane, input index): a fixed pseudo-random
// number per input.
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

Batch bench_fib(uint32_t lanes, InputSize size, bool quick) {
  const uint32_t top = size == InputSize::Heavy ? 18 : quick ? 12 : 14;
  Batch batch = empty_batch(lanes, 1);
  for (uint32_t lane = 0; lane < lanes; ++lane)
    batch.inputs[0].push_back(pick(1, lane, 0, 0, top));
  return batch;
}

Batch bench_ackermann(uint32_t lanes, InputSize size, bool quick) {
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
Batch bench_collatz(uint32_t lanes, InputSize size, bool quick) {
  const uint32_t top = size == InputSize::Heavy ? 100000 : quick ? 500 : 1000;
  Batch batch = empty_batch(lanes, 1);
  for (uint32_t lane = 0; lane < lanes; ++lane)
    batch.inputs[0].push_back(pick(3, lane, 0, 1, top));
  return batch;
}

// Heavy: y below x / 2 and z below x / 4 would make the slowest lane (12, 6, 3: 63,609 calls)
// 2.5x slower than (12, 5, 2), and with it every schedule whose time follows the slowest lane.
Batch bench_tak(uint32_t lanes, InputSize size, bool quick) {
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

Batch bench_nuts_tree(uint32_t lanes, InputSize size, bool quick) {
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

// The test inputs.
uint32_t int_word(int32_t v) {
  return static_cast<uint32_t>(v);
}

// An int in [lo, hi] drawn from the lane's hash stream `salt`.
int32_t lane_int(uint64_t salt, uint32_t lane, int32_t lo, int32_t hi) {
  const uint64_t span = static_cast<uint64_t>(static_cast<int64_t>(hi) - lo + 1);
  return static_cast<int32_t>(lo + static_cast<int64_t>(lane_hash(salt, lane) % span));
}

// A float in [lo, hi) on a grid of 1/1024, so inputs print and reproduce exactly.
float lane_float(uint64_t salt, uint32_t lane, float lo, float hi) {
  const double unit = static_cast<double>(lane_hash(salt, lane) % 1024) / 1024.0;
  return static_cast<float>(lo + (hi - lo) * unit);
}

// The table in three parts, in the table's order: recursion and integer arithmetic, floats
// and arrays, then the sampler's tree, faults, products and bits.
void add_integer_samples(std::vector<Sample>& cases) {
  cases.push_back(
      {.file = "fib.ab",
       .lane_inputs = [](uint32_t, uint32_t lane) -> LaneWords {
         return {{int_word(lane_int(1, lane, 0, 17))}};
       },
       .input_bounds = "n in 0..17",
       .bench = BenchInputs{"n in 0..14", "n in 0..12", "n in 0..18", 1, 1, bench_fib, 64, 64}});

  cases.push_back({.file = "ackermann.ab",
                   .lane_inputs = [](uint32_t, uint32_t lane) -> LaneWords {
                     const int32_t m = lane_int(2, lane, 0, 3);
                     const int32_t n = lane_int(3, lane, 0, m == 3 ? 3 : 6);
                     return {{int_word(m)}, {int_word(n)}};
                   },
                   .input_bounds = "m in 0..3, n in 0..6 (0..3 when m = 3)",
                   .bench = BenchInputs{"m in 0..3, n in 0..3", "m in 0..3, n in 0..2",
                                        "m in 0..3, n in 0..5", 1, 1, bench_ackermann, 256, 320}});

  cases.push_back({.file = "even_odd.ab",
                   .lane_inputs = [](uint32_t, uint32_t lane) -> LaneWords {
                     return {{int_word(lane_int(4, lane, 0, 63))}};
                   },
                   .input_bounds = "n in 0..63"});

  cases.push_back({.file = "collatz.ab",
                   .lane_inputs = [](uint32_t, uint32_t lane) -> LaneWords {
                     return {{int_word(lane_int(5, lane, 1, 300))}};
                   },
                   .input_bounds = "n in 1..300",
                   .bench = BenchInputs{"n in 1..1000", "n in 1..500", "n in 1..100000", 1, 1,
                                        bench_collatz, 8, 8}});

  cases.push_back({.file = "gcd.ab",
                   .lane_inputs = [](uint32_t, uint32_t lane) -> LaneWords {
                     return {{int_word(lane_int(6, lane, -5000, 5000))},
                             {int_word(lane_int(7, lane, -1000, 1000))}};
                   },
                   .input_bounds = "a in -5000..5000, b in -1000..1000"});

  cases.push_back({.file = "divmod.ab",
                   .lane_inputs = [](uint32_t, uint32_t lane) -> LaneWords {
                     // Every 23rd lane (from lane 5) divides by zero and fails main's assert.
                     const int32_t b = lane % 23 == 5 ? 0 : lane_int(9, lane, 1, 50);
                     return {{int_word(lane_int(8, lane, 0, 100000))}, {int_word(b)}};
                   },
                   .input_bounds = "a in 0..100000, b in 1..50 (0 on lanes 5, 28, ...: assert)"});
}

void add_float_and_array_samples(std::vector<Sample>& cases) {
  cases.push_back({.file = "simpson.ab",
                   .lane_inputs = [](uint32_t, uint32_t lane) -> LaneWords {
                     const float a = lane_float(10, lane, 0.0f, 1.0f);
                     const float b = a + lane_float(11, lane, 0.5f, 3.0f);
                     return {{float_bits(a)}, {float_bits(b)}};
                   },
                   .input_bounds = "a in [0, 1), b - a in [0.5, 3)"});

  cases.push_back({.file = "merge_sort.ab",
                   .lane_inputs = [](uint32_t, uint32_t lane) -> LaneWords {
                     std::vector<uint32_t> values;
                     for (uint32_t i = 0; i < 16; ++i) {
                       values.push_back(int_word(lane_int(12 + i, lane, -100, 100)));
                     }
                     return {values, {int_word(lane_int(40, lane, 0, 16))}};
                   },
                   .input_bounds = "16 values in -100..100, count in 0..16"});

  cases.push_back({.file = "distributions.ab",
                   .lane_inputs = [](uint32_t, uint32_t lane) -> LaneWords {
                     return {{float_bits(lane_float(131, lane, 0.3f, 20.0f))},
                             {int_word(lane_int(132, lane, 0, 12))}};
                   },
                   .uses_random = true,
                   .input_bounds = "shape in [0.3, 20), n in 0..12"});

  cases.push_back({.file = "random.ab",
                   .lane_inputs = [](uint32_t, uint32_t lane) -> LaneWords {
                     return {{float_bits(lane_float(41, lane, 0.5f, 4.0f))},
                             {int_word(lane_int(42, lane, 0, 200))}};
                   },
                   .uses_random = true,
                   .input_bounds = "barrier in [0.5, 4), max_steps in 0..200"});

  cases.push_back(
      {.file = "tak.ab",
       .lane_inputs = [](uint32_t, uint32_t lane) -> LaneWords {
         return {{int_word(lane_int(43, lane, 0, 7))},
                 {int_word(lane_int(44, lane, 0, 5))},
                 {int_word(lane_int(45, lane, 0, 4))}};
       },
       .input_bounds = "x in 0..7, y in 0..5, z in 0..4",
       .bench = BenchInputs{"x in 0..8, y in 0..4, z in 0..2", "x in 0..6, y in 0..3, z in 0..1",
                            "x in 0..12, y in 0..5, z in 0..2", 1, 1, bench_tak, 64, 64}});

  cases.push_back({.file = "table_lookup.ab",
                   .lane_inputs = [](uint32_t, uint32_t lane) -> LaneWords {
                     // The last knot is 26.25: lanes with x >= 26.25 read past the table.
                     return {{float_bits(lane_float(46, lane, -1.0f, 29.0f))}};
                   },
                   .uniforms =
                       [] {
                         std::vector<uint32_t> knots, values;
                         for (int i = 0; i < 16; ++i) {
                           knots.push_back(float_bits(static_cast<float>(i) + 0.05f * i * i));
                           values.push_back(float_bits(std::sin(static_cast<float>(i))));
                         }
                         return UniformData{knots, values};
                       },
                   .input_bounds = "x in [-1, 29), knots 0 .. 26.25 (x >= 26.25 faults)"});
}

void add_sampler_and_fault_samples(std::vector<Sample>& cases) {
  cases.push_back(
      {.file = "nuts_tree.ab",
       .lane_inputs = [](uint32_t, uint32_t lane) -> LaneWords {
         std::vector<uint32_t> q0;
         for (uint32_t i = 0; i < 4; ++i) {
           q0.push_back(float_bits(lane_float(50 + i, lane, -2.0f, 2.0f)));
         }
         return {q0,
                 {float_bits(lane_float(54, lane, 0.1f, 0.5f))},
                 {int_word(lane_int(55, lane, 0, 3))}};
       },
       .uses_random = true,
       .input_bounds = "q0 in [-2, 2)^4, eps in [0.1, 0.5), iterations in 0..3",
       .bench = BenchInputs{"q0 in [-2,2)^4, eps in 0.125..0.625, iterations 1..2, seed 1",
                            "q0 in [-2,2)^4, eps in 0.125..0.625, iterations 1, seed 1",
                            "q0 in [-2,2)^4, eps in 0.125..0.625, iterations 1..12, seed 1", 1, 4,
                            bench_nuts_tree, 32, 32}});

  cases.push_back({.file = "faults.ab",
                   .lane_inputs = [](uint32_t, uint32_t lane) -> LaneWords {
                     // Kinds 1..5 fault; about half the lanes compute normally (kind 0).
                     const int32_t kind = lane % 2 == 0 ? 0 : lane_int(56, lane, 1, 5);
                     return {{int_word(kind)}, {int_word(lane_int(57, lane, -50, 50))}};
                   },
                   .input_bounds = "kind 0 on even lanes, 1..5 on odd ones; x in -50..50",
                   // Kind 5 spins forever: a small budget keeps it fast.
                   .options = {.max_steps = 5000}});

  cases.push_back({.file = "products.ab",
                   .lane_inputs = [](uint32_t, uint32_t lane) -> LaneWords {
                     std::vector<uint32_t> w0;
                     for (uint32_t i = 0; i < 66; ++i)
                       w0.push_back(float_bits(lane_float(60 + i, lane, -1.0f, 1.0f)));
                     return {w0, {int_word(lane_int(130, lane, 0, 3))}};
                   },
                   .uniforms =
                       [] {
                         std::vector<uint32_t> x, y;
                         for (int i = 0; i < 2 * 66; ++i)
                           x.push_back(float_bits(std::sin(0.37f * static_cast<float>(i))));
                         y = {float_bits(-0.5f), float_bits(0.25f)};
                         return UniformData{x, y};
                       },
                   .input_bounds = "w0 in [-1, 1)^66, steps in 0..3"});

  cases.push_back({.file = "bits.ab",
                   .lane_inputs = [](uint32_t, uint32_t lane) -> LaneWords {
                     return {{static_cast<uint32_t>(lane_hash(58, lane))}};
                   },
                   .input_bounds = "x any int"});
}

// raytrace.ab's bench picture: about 4:3, one pixel per lane; depth 5 light, 8 heavy.
Batch bench_raytrace(uint32_t lanes, InputSize size, bool) {
  const raytrace::View view = raytrace::view_for_pixels(lanes, size == InputSize::Heavy ? 8 : 5);
  return raytrace::pixel_batch(raytrace::default_scene(), view, lanes);
}

// The ray tracer (samples/raytrace): lanes take pixels all over a 40x30 picture at depth 6, so
// a small batch mixes sky, floor, shadows, the mirror and glass.
constexpr raytrace::View kRaytraceView{40, 30, 6};
void add_raytrace_sample(std::vector<Sample>& cases) {
  cases.push_back(
      {.file = "raytrace.ab",
       .lane_inputs = [](uint32_t, uint32_t lane) -> LaneWords {
         return {{(lane * 389u) % (kRaytraceView.width * kRaytraceView.height)}};
       },
       .uniforms =
           [] { return raytrace::scene_uniforms(raytrace::default_scene(), kRaytraceView); },
       .input_bounds = "pixel (389 lane) mod 1200 of a 40x30 picture, depth 6",
       .options = {.stack_depth = raytrace::stack_depth(kRaytraceView)},
       .bench = BenchInputs{"pixels of a 4:3 picture, depth 5", "pixels of a 4:3 picture, depth 5",
                            "pixels of a 4:3 picture, depth 8", 1, 3, bench_raytrace,
                            raytrace::stack_depth({1, 1, 5}), raytrace::stack_depth({1, 1, 8})}});
}

std::vector<Sample> build_samples() {
  std::vector<Sample> cases;
  add_integer_samples(cases);
  add_float_and_array_samples(cases);
  add_sampler_and_fault_samples(cases);
  add_raytrace_sample(cases);
  return cases;
}

}  // namespace

const std::vector<Sample>& all_samples() {
  static const std::vector<Sample> samples = build_samples();
  return samples;
}

const Sample* find_sample(const std::string& file) {
  for (const Sample& s : all_samples())
    if (s.file == file || s.name() == file) return &s;
  return nullptr;
}

Batch make_test_batch(const Sample& sample, uint32_t lanes) {
  Batch batch;
  batch.lanes = lanes;
  for (uint32_t lane = 0; lane < lanes; ++lane) {
    const LaneWords words = sample.lane_inputs(lanes, lane);
    if (batch.inputs.empty()) batch.inputs.resize(words.size());
    for (size_t p = 0; p < words.size(); ++p)
      batch.inputs[p].insert(batch.inputs[p].end(), words[p].begin(), words[p].end());
  }
  if (sample.uniforms) batch.uniforms = sample.uniforms();
  return batch;
}

}  // namespace ab::samples
