// Per-lane random numbers: Philox4x32-10 against Random123's published known-answer vectors; a
// lane's draws are the Philox stream keyed by (seed, lane index), identical on the interpreter
// and the VM, at every batch size, whatever its neighbours do; uniform() stays in [0, 1) and
// normal() has the right mean and variance.
#include <doctest/doctest.h>

#include <cmath>

#include "cpu/interp.h"
#include "cpu/vm.h"
#include "ir/ops.h"
#include "ir/random.h"
#include "lang/frontend.h"
#include "passes/lower.h"
#include "support/result_compare.h"
#include "support/samples.h"

namespace ab::testing {
namespace {

using Words4 = std::array<uint32_t, 4>;

TEST_CASE("random: Philox4x32-10 matches Random123's known-answer vectors") {
  // kat_vectors from Random123: "philox4x32 10 <ctr x4> <key x2> <expected x4>".
  CHECK(philox4x32_10({0, 0, 0, 0}, {0, 0}) ==
        Words4{0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u});
  CHECK(philox4x32_10({0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu},
                      {0xffffffffu, 0xffffffffu}) ==
        Words4{0x408f276du, 0x41c83b0eu, 0xa20bc7c6u, 0x6d5451fdu});
  // The digits of pi.
  CHECK(philox4x32_10({0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u},
                      {0xa4093822u, 0x299f31d0u}) ==
        Words4{0xd16cfe09u, 0x94fdccebu, 0x5001e420u, 0x24126ea1u});
}

TEST_CASE("random: uniform draws are Philox words scaled into [0, 1)") {
  for (uint64_t seed : {0ull, 1ull, 0x123456789abcdefull}) {
    for (uint32_t lane : {0u, 1u, 77u, 0xffffffffu}) {
      for (uint64_t draw : {0ull, 1ull, 2ull, 1ull << 32}) {
        const Words4 w = philox4x32_10(
            {static_cast<uint32_t>(draw), static_cast<uint32_t>(draw >> 32), lane, 0u},
            {static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)});
        const float u = random_uniform(seed, lane, draw);
        CHECK(u == static_cast<float>(w[0] >> 8) / 16777216.0f);
        CHECK(u >= 0.0f);
        CHECK(u < 1.0f);
      }
    }
  }
}

CompiledProgram compile(const std::string& source) {
  return compile_program(source, "random_test.ab");
}

// Lane L draws n(L) numbers, n differing per lane, so lanes advance their streams unevenly.
constexpr const char* kDrawSource = R"(
fn main(n: int) -> float[8] {
    var out = [-1.0; 8];
    for i in 0..8 {
        if i < n { out[i] = uniform(); }
    }
    return out;
}
)";

TEST_CASE("random: a lane's draws are its own Philox stream on both backends") {
  const CompiledProgram c = compile(kDrawSource);
  constexpr uint32_t kLanes = 40;
  Batch batch;
  batch.lanes = kLanes;
  batch.inputs.resize(1);
  for (uint32_t lane = 0; lane < kLanes; ++lane)
    batch.inputs[0].push_back((lane * 5) % 9);
  RunOptions options;
  options.seed = 0xfeedbeef12ull;
  const RunResult interp = run_interp(c.program, c.entry, batch, options);
  const RunResult vm = run_vm(c.lowered, batch, options);
  CHECK(describe_difference(interp, vm).empty());
  for (uint32_t lane = 0; lane < kLanes; ++lane) {
    CAPTURE(lane);
    const uint32_t n = batch.inputs[0][lane];
    for (uint32_t k = 0; k < 8; ++k) {
      const float want = k < n ? random_uniform(options.seed, lane, k) : -1.0f;
      CHECK(bits_float(interp.outputs[lane * 8 + k]) == want);
    }
  }
}

// Draws interleaved with divergent recursion; mirrored below in C++.
constexpr const char* kWalkSource = R"(
fn walk(depth: int, acc: float) -> float {
    if depth <= 0 { return acc; }
    if uniform() < 0.5 { return walk(depth - 1, acc + normal()); }
    return walk(depth - 2, acc - uniform());
}

fn main(depth: int) -> float {
    return walk(depth, 0.0);
}
)";

float walk_reference(uint64_t seed, uint32_t lane, int depth) {
  uint64_t draw = 0;
  float acc = 0.0f;
  while (depth > 0) {
    if (random_uniform(seed, lane, draw++) < 0.5f) {
      acc = acc + random_normal(seed, lane, draw++);
      depth -= 1;
    } else {
      acc = acc - random_uniform(seed, lane, draw++);
      depth -= 2;
    }
  }
  return acc;
}

TEST_CASE("random: draws in divergent recursion follow program order per lane") {
  const CompiledProgram c = compile(kWalkSource);
  constexpr uint32_t kLanes = 64;
  Batch batch;
  batch.lanes = kLanes;
  batch.inputs.resize(1);
  for (uint32_t lane = 0; lane < kLanes; ++lane)
    batch.inputs[0].push_back(lane % 13);
  for (uint64_t seed : {0ull, 7ull, 1ull << 40}) {
    CAPTURE(seed);
    RunOptions options;
    options.seed = seed;
    const RunResult interp = run_interp(c.program, c.entry, batch, options);
    for (Heuristic h : {Heuristic::MinPc, Heuristic::MostLanes}) {
      options.heuristic = h;
      CHECK(describe_difference(interp, run_vm(c.lowered, batch, options)).empty());
    }
    for (uint32_t lane = 0; lane < kLanes; ++lane) {
      CAPTURE(lane);
      const float want = walk_reference(seed, lane, static_cast<int>(lane % 13));
      CHECK(float_bits(bits_float(interp.outputs[lane])) == float_bits(want));
    }
  }
}

TEST_CASE("random: the same lane index draws the same numbers at every batch size") {
  for (const char* file : {"random.ab", "nuts_tree.ab"}) {
    CAPTURE(file);
    const SampleCase& sample = sample_case(file);
    REQUIRE(sample.uses_random);
    const Program program = load_sample(file);
    const int entry = program.find_function(sample.entry);
    REQUIRE(entry >= 0);
    const LoweredProgram lowered = lower(program, entry);
    RunOptions options = sample.options;
    options.seed = 99;

    const Batch widest_batch = make_batch(sample, 200);
    const RunResult widest = run_interp(program, entry, widest_batch, options);
    const size_t per_lane = widest.outputs.size() / 200;
    for (uint32_t lanes : {1u, 5u, 33u, 200u}) {
      CAPTURE(lanes);
      const Batch batch = make_batch(sample, lanes);
      const RunResult interp = run_interp(program, entry, batch, options);
      const RunResult vm = run_vm(lowered, batch, options);
      CHECK(describe_difference(interp, vm).empty());
      for (uint32_t lane = 0; lane < lanes; ++lane) {
        CAPTURE(lane);
        CHECK(interp.faulted[lane] == widest.faulted[lane]);
        for (size_t w = 0; w < per_lane; ++w) {
          CHECK(interp.outputs[lane * per_lane + w] == widest.outputs[lane * per_lane + w]);
        }
      }
    }

    // A different seed gives different numbers (at least somewhere in 200 lanes).
    RunOptions other = options;
    other.seed = 100;
    CHECK(run_interp(program, entry, widest_batch, other).outputs != widest.outputs);
  }
}

constexpr const char* kManyDrawsSource = R"(
struct Draws { u: float[64], z: float[64] }

fn main(k: int) -> Draws {
    var u = [0.0; 64];
    var z = [0.0; 64];
    for i in 0..64 {
        u[i] = uniform();
        z[i] = normal();
    }
    return Draws { u: u, z: z };
}
)";

TEST_CASE("random: uniform() lies in [0, 1) and normal() has mean 0 and variance 1") {
  const CompiledProgram c = compile(kManyDrawsSource);
  constexpr uint32_t kLanes = 1000;
  Batch batch;
  batch.lanes = kLanes;
  batch.inputs.assign(1, std::vector<uint32_t>(kLanes, 0));
  RunOptions options;
  options.seed = 2024;
  const RunResult result = run_vm(c.lowered, batch, options);
  REQUIRE(result.errors.empty());
  REQUIRE(result.outputs.size() == kLanes * 128);

  double u_sum = 0, z_sum = 0, z_squares = 0;
  for (uint32_t lane = 0; lane < kLanes; ++lane) {
    for (uint32_t i = 0; i < 64; ++i) {
      const float u = bits_float(result.outputs[lane * 128 + i]);
      const float z = bits_float(result.outputs[lane * 128 + 64 + i]);
      REQUIRE(u >= 0.0f);
      REQUIRE(u < 1.0f);
      REQUIRE(std::isfinite(z));
      u_sum += u;
      z_sum += z;
      z_squares += static_cast<double>(z) * z;
    }
  }
  const double count = kLanes * 64.0;
  // Standard errors: uniform mean 0.29/253 = 0.0011, normal mean 1/253 = 0.004, normal variance
  // sqrt(2/64000) = 0.0056. The bounds are about 5 standard errors.
  CHECK(std::abs(u_sum / count - 0.5) < 0.006);
  const double mean = z_sum / count;
  CHECK(std::abs(mean) < 0.02);
  CHECK(std::abs(z_squares / count - mean * mean - 1.0) < 0.03);
}

}  // namespace
}  // namespace ab::testing
