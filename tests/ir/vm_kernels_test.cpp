// The VM's batched kernels (cpu/vm_kernels.h) and its worker threads: every kernel path
// (the broadcast patterns, the eight-lane reductions and their remainder, gets, sets and
// uniform rows read in place, and the ops that decline and fall back to exec_op) gives exactly
// the interpreter's words and faults, and a run's results, statistics and trace do not depend
// on how many threads run its steps.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <initializer_list>
#include <map>
#include <string>

#include "cpu/interp.h"
#include "cpu/vm.h"
#include "cpu/vm_lane_alone.h"
#include "cpu/vm_product_tiles.h"
#include "ir/ops.h"
#include "support/result_compare.h"
#include "support/samples.h"

namespace ab::testing {
namespace {

// Rows of data read by index, whole rows into dot/sum/elementwise ops (viewed in place), pairs
// of elementwise ops fused (acc + row * s: the product's Temp read only by the add; a pair whose
// result feeds a third op, which stays unfused), a row whose index changes before it is read
// (copied), out-of-range rows and elements for some lanes
// (faults: the kernels decline and exec_op faults exactly those lanes), integer division by a
// lane's zero (no kernel), clamp's one-word bounds (no kernel) and reductions of int arrays.
constexpr const char* kProgram = R"(
const N: int = 12;
uniform X: float[20][N];
uniform c: int[N];

struct Out { total: float, acc: float[N], ints: int[N], quotient: int }

fn main(i: int, s: float) -> Out {
    var acc: float[N];
    var ints = c * i;
    var total = 0.0;
    var k = 0;
    while k < 4 {
        // One block of kernels only, which big batches run on several threads.
        let row = X[i + k];
        total += dot(row, acc) + sum(row * s) - dot(acc, row);
        acc = acc + row * s;
        acc = max(acc, s - row);
        acc = min(acc, (row - s) * 0.5 - acc);  // a fused pair whose result is read by a third
        total += acc[i - 3];
        if k >= 0 {
            acc = clamp(acc, -3.0, 3.0);
            var j = i + k;
            let later = X[j];
            j = j - 1;
            acc[k] = acc[k] + later[j & 7] * float(j);
            ints[k] = dot(ints, c) + sum(ints) % 1000;
        }
        k += 1;
    }
    let picked = acc[i % 16];
    return Out { total: total + picked, acc: acc, ints: ints, quotient: 1000 / (i % 5) };
}
)";

// Lane l reads rows from i = l % 19 on (or from `first_row(l)`): lanes with i >= 17 run past
// row 19 of X and fault; i < 3 and i % 16 >= 12 index acc out of range; i % 5 == 0 divides by
// zero.
Batch make_batch(uint32_t lanes, uint32_t (*first_row)(uint32_t) = nullptr) {
  Batch batch;
  batch.lanes = lanes;
  batch.inputs.resize(2);
  for (uint32_t l = 0; l < lanes; ++l) {
    batch.inputs[0].push_back(first_row ? first_row(l) : l % 19);
    batch.inputs[1].push_back(float_bits(0.25f * static_cast<float>(l % 7) - 0.5f));
  }
  std::vector<uint32_t> x, c;
  for (int r = 0; r < 20 * 12; ++r)
    x.push_back(float_bits(static_cast<float>((r * 37) % 23) / 7.0f - 1.5f));
  for (int e = 0; e < 12; ++e)
    c.push_back(static_cast<uint32_t>(e * 3 - 7));
  batch.uniforms = {x, c};
  return batch;
}

// The vm's results on each thread count equal the interpreter's; returns the interpreter's.
RunResult check_vm_against_interp(const CompiledProgram& loaded, const Batch& batch,
                                  std::initializer_list<uint32_t> thread_counts = {1, 2}) {
  REQUIRE(check_batch(loaded.program, loaded.entry, batch).ok());
  RunOptions options;
  const RunResult expected = run_interp(loaded.program, loaded.entry, batch, options);
  for (uint32_t threads : thread_counts) {
    CAPTURE(threads);
    options.threads = threads;
    const std::string difference =
        describe_difference(expected, run_vm(loaded.lowered, batch, options));
    CHECK_MESSAGE(difference.empty(), difference);
  }
  return expected;
}

TEST_CASE("vm kernels: every kernel path gives the interpreter's words and faults") {
  const CompiledProgram loaded = compile_program(kProgram, "vm_kernels.ab");
  for (uint32_t lanes : {1u, 7u, 8u, 13u, 64u, 1000u}) {
    CAPTURE(lanes);
    const RunResult expected = check_vm_against_interp(loaded, make_batch(lanes), {1, 2, 3});
    if (lanes >= 64) {
      // The batch reaches every fault it is built for, and a quarter of the lanes finish.
      std::map<Fault, int> faults;
      for (const LaneError& e : expected.errors)
        ++faults[e.code];
      CHECK(faults[Fault::IndexOutOfRange] > 0);
      CHECK(faults[Fault::DivisionByZero] > 0);
      CHECK(expected.errors.size() < lanes * 3 / 4);
    }
  }
}

// The VM's state is laid out lanes innermost and a uniform row that every lane of a step reads
// at the same index is read once for all of them: lanes that all start at one row (every step
// shares its rows), at two rows (no step does), at one row but for a few lanes that fault
// early (the rest then run as a set with gaps), or at one index out of range for
// all give the interpreter's words and faults.
TEST_CASE("vm kernels: rows shared by all the lanes of a step, or by some") {
  const CompiledProgram loaded = compile_program(kProgram, "vm_kernels.ab");
  uint32_t (*starts[])(uint32_t) = {
      [](uint32_t) { return 4u; },
      [](uint32_t l) { return l % 2 ? 4u : 6u; },
      [](uint32_t l) { return l % 10 == 3 ? 0u : 8u; },
      [](uint32_t l) { return l < 40 ? 9u : l % 19; },
      // all at row 17: every lane of the step reads acc[i - 3] = acc[14], one index out of
      // range for all (a shared index's range is checked on one lane: all must still fault)
      [](uint32_t) { return 17u; },
  };
  for (size_t start = 0; start < std::size(starts); ++start)
    for (uint32_t lanes : {1u, 9u, 64u, 1000u}) {
      CAPTURE(start);
      CAPTURE(lanes);
      const RunResult expected = check_vm_against_interp(loaded, make_batch(lanes, starts[start]));
      if (start == std::size(starts) - 1) CHECK(expected.errors.size() == lanes);
    }
}

// A fused pair writing a variable that lives past the step (`acc = acc + X[k] * s`) runs, for a
// set with gaps, in place under the set's mask: the lanes that left the loop early (and the
// ones that never entered) sit in the gaps, and their words must stay as they left them, since
// they are the lanes' results. The row is shared by every lane of the step (acc) or each
// lane's own (other).
constexpr const char* kLoopProgram = R"(
const N: int = 12;
uniform X: float[20][N];

struct Out { acc: float[N], other: float[N] }

fn main(i: int, s: float) -> Out {
    var acc: float[N];
    var other: float[N];
    var k = 0;
    while k < i % 6 {
        acc = acc + X[k] * s;
        other = other - X[(i + k) % 20] * s;
        k += 1;
    }
    return Out { acc: acc, other: other };
}
)";

TEST_CASE("vm kernels: a fused op into a live variable keeps the words of the lanes in gaps") {
  const CompiledProgram loaded = compile_program(kLoopProgram, "vm_loop.ab");
  for (uint32_t lanes : {5u, 64u, 1000u}) {
    CAPTURE(lanes);
    Batch batch = make_batch(lanes);
    batch.uniforms.resize(1);
    CHECK(check_vm_against_interp(loaded, batch).errors.empty());
  }
}

// The ops of each block of `loaded` that may run a lane at a time (plan_lane_alone).
std::vector<std::vector<BatchOp>> lane_alone_blocks(const CompiledProgram& loaded) {
  std::vector<TypeId> var_type;
  for (const LoweredVar& v : loaded.lowered.vars)
    var_type.push_back(v.type);
  std::vector<uint32_t> offset;
  layout_words(loaded.lowered.types(), var_type, offset);
  std::vector<std::vector<BatchOp>> blocks;
  for (const LoweredBlock& block : loaded.lowered.blocks) {
    std::vector<BatchOp> ops =
        prepare_block_ops(block, loaded.lowered, var_type.data(), offset.data());
    if (plan_lane_alone(block, loaded.lowered, ops, offset.data()).eligible)
      blocks.push_back(std::move(ops));
  }
  return blocks;
}

// Lanes of main(i: int, s: float): i = the lane, s in -0.5, -0.25, ... 1.0; two uniforms of 300
// rows, the second ((r * 11) % 13) / 5 - 1.
Batch two_row_batch(uint32_t lanes, float (*first_row)(int)) {
  Batch batch;
  batch.lanes = lanes;
  batch.inputs.resize(2);
  for (uint32_t l = 0; l < lanes; ++l) {
    batch.inputs[0].push_back(l);
    batch.inputs[1].push_back(float_bits(0.25f * static_cast<float>(l % 7) - 0.5f));
  }
  batch.uniforms.resize(2);
  for (int r = 0; r < 300; ++r) {
    batch.uniforms[0].push_back(float_bits(first_row(r)));
    batch.uniforms[1].push_back(float_bits(static_cast<float>((r * 11) % 13) / 5.0f - 1.0f));
  }
  return batch;
}

// A block of array code (arrays of 300 words, all Temps) runs a lane at a time in a frame of one
// lane (cpu/vm_lane_alone.h), eight lanes op by op: lane i runs i % 5 iterations, so the steps
// hold all the lanes, some, or a few spread over the batch (groups of eight and a rest; on two
// threads as well). Elementwise ops with views and
// broadcasts, fused pairs, exp, max and min, sums and a dot across the words, a dynamic element
// and a uniform element out of range for lanes 43 on (the kernel declines: the lane runs as
// usual and faults) all give the interpreter's words and faults.
constexpr const char* kArrayBlockProgram = R"(
const N: int = 300;
uniform y: float[N];
uniform x: float[N];

fn main(i: int, s: float) -> float {
    let n = i % 5;
    let far = i * 7;
    var total = 0.0;
    var k = 0;
    while k < n {
        let z = (y - (s + x * float(k))) / (s + 2.0);
        let w = max(z * s, -1.5) - min(z, 0.5);
        total += sum(z * z) + sum(exp(-z * z)) - dot(w, x) + log(s + 3.0);
        total += w[(i + k) & 255] + y[far + k];
        k += 1;
    }
    return total;
}
)";

TEST_CASE("vm kernels: a block of array code run a lane at a time gives the interpreter's words") {
  const CompiledProgram loaded = compile_program(kArrayBlockProgram, "vm_array_block.ab");
  // The loop's body is such a block.
  CHECK(lane_alone_blocks(loaded).size() == 1);
  for (uint32_t lanes : {1u, 3u, 16u, 64u}) {
    CAPTURE(lanes);
    const Batch batch =
        two_row_batch(lanes, [](int r) { return static_cast<float>((r * 37) % 23) / 7.0f - 1.5f; });
    const RunResult expected = check_vm_against_interp(loaded, batch);
    if (lanes == 64) CHECK(expected.errors.size() > 0);
  }
}

// A derived gradient of a row loop (the NUTS models' shape: arrays of 300 words) run a lane at a
// time: its adjoints' zero fills are read as one immediate by the adds that overwrite them, the
// rows' slice of the sum's adjoint is read where it lies, and the loop's `lp += ...` sum adds
// the Make's parts (lp, then the rows) where they lie, all three skipped in a frame of one lane
// (vm_kernels.h, BatchOp::in_place and made). Rows where z is 0 give -0 terms (0 + -0 is +0:
// the fill's value is read, not skipped); lanes run 0 to 3 gradients, so steps hold all the
// lanes, some or a few.
constexpr const char* kGradientBlockProgram = R"(
const N: int = 300;
uniform y: float[N];
uniform x: float[N];

fn ld(u: float[3]) -> float {
    let sigma = exp(u[2]);
    var lp = 0.0;
    for n in 0..N {
        let z = (y[n] - (u[0] + u[1] * x[n])) / sigma;
        lp += -0.5 * z * z - log(sigma);
    }
    return lp + u[2];
}

fn main(i: int, s: float) -> float[4] {
    var out = [0.0, 0.0, 0.0, 0.0];
    var k = 0;
    while k < i % 4 {
        let g = value_and_grad(ld, [s, float(k) * 0.0, float(i % 3) - 1.0]);
        out = out + [g.value, g.grad[0], g.grad[1], g.grad[2]];
        k += 1;
    }
    return out;
}
)";

TEST_CASE(
    "vm kernels: a gradient's zero fills, slice and sum's make are read in place a lane at a "
    "time") {
  const CompiledProgram loaded = compile_program(kGradientBlockProgram, "vm_gradient_block.ab");
  const std::vector<std::vector<BatchOp>> blocks = lane_alone_blocks(loaded);
  REQUIRE(blocks.size() == 1);
  int constants = 0, slices = 0, makes = 0;
  for (const BatchOp& b : blocks[0]) {
    makes += b.made != nullptr;
    if (b.made) CHECK(b.made->read_in_place);
    for (const BatchOp* in_place : b.in_place) {
      if (!in_place) continue;
      CHECK(in_place->read_in_place);
      constants += in_place->op->code == OpCode::Const;
      slices += in_place->op->code == OpCode::Get;
    }
  }
  CHECK(constants >= 6);  // the 300-word adjoints' fills
  CHECK(slices == 1);     // the rows' adjoints in the sum's Make's (lp's, then the rows')
  CHECK(makes == 1);
  for (uint32_t lanes : {1u, 3u, 16u, 64u}) {
    CAPTURE(lanes);
    check_vm_against_interp(loaded, two_row_batch(lanes, [](int r) {
                              return 0.25f * static_cast<float>(r % 7) - 0.5f;
                            }));
  }
}

// Matrix products (ops.h, matrix_words' order) run for all the lanes of a step: a uniform matrix
// read in place times each lane's vector (X @ w: the register tiles, partial tiles and gathered
// sets included), each lane's vector times a uniform matrix (z @ X), a lane's own
// matrices (both operands per lane) and two uniforms (the same words for every lane), on dense
// sets, sets with gaps (lanes leave the loop at different iterations) and a few listed lanes;
// and log1p_exp and inv_logit across the lanes (the language's functions inlined, vectorised).
constexpr const char* kProductProgram = R"(
const K: int = 70;
uniform X: float[20][K];
uniform Z: float[K][2];

struct Out { z: float[20], w: float[K], q: float[2][2], u: float[20][2], s: float[20] }

fn main(i: int, s: float) -> Out {
    var w = X[i % 20] * s;
    var z: float[20];
    var k = 0;
    while k < i % 4 {
        z = X @ w;
        let g = z @ X;
        w = w - g * 0.001;
        k += 1;
    }
    let m = [[w[0], w[1]], [w[2], w[3]], [s, w[4]]];
    return Out { z: z, w: w, q: transpose(m) @ m, u: X @ Z, s: log1p_exp(z) - inv_logit(z) };
}
)";

TEST_CASE("vm kernels: matrix products on every lane set equal the interpreter's words") {
  const CompiledProgram loaded = compile_program(kProductProgram, "vm_products.ab");
  uint32_t (*starts[])(uint32_t) = {
      [](uint32_t l) { return l % 19; },
      [](uint32_t) { return 7u; },
      [](uint32_t l) { return l % 10 == 3 ? 3u : 2u; },
  };
  for (size_t start = 0; start < std::size(starts); ++start)
    for (uint32_t lanes : {1u, 7u, 33u, 64u, 200u}) {
      CAPTURE(start);
      CAPTURE(lanes);
      Batch batch = make_batch(lanes, starts[start]);
      std::vector<uint32_t> x, z;
      for (int r = 0; r < 20 * 70; ++r)
        x.push_back(float_bits(static_cast<float>((r * 37) % 23) / 7.0f - 1.5f));
      for (int r = 0; r < 70 * 2; ++r)
        z.push_back(float_bits(static_cast<float>((r * 11) % 13) / 5.0f - 1.0f));
      batch.uniforms = {x, z};
      CHECK(check_vm_against_interp(loaded, batch).errors.empty());
    }
}

// The register tiles themselves (cpu/vm_product_tiles.h) on every instruction set the host
// has, forced one by one, against matrix_words lane by lane: X @ w and g @ X with shapes that
// leave partial tiles, blocks and column groups (M = 9 rows: two tiles of 4 and one row; K = 130
// terms: blocks of 64, 64 and 2; P = 7 columns: 4 and 3 alone), for 1-7 lanes (one partial
// tile), 8, 33 and 70 lanes, dense in a wider frame (from lane 3) and listed with gaps; some
// lane words subnormal or tiny, so g @ X's rows that may give a subnormal product take the
// exact double product and the others the plain float one.
TEST_CASE("vm products: the register tiles give matrix_words' bits on every instruction set") {
  const VectorIsa chosen = product_isa();
  const uint32_t frame_lanes = 180;  // the listed lanes reach 161
  for (const VectorIsa isa : {VectorIsa::Portable, VectorIsa::Avx2, VectorIsa::Avx512}) {
    if (!host_has(isa)) continue;
    use_product_isa(isa);
    CAPTURE(vector_isa_name(isa));
    for (const bool left : {true, false})
      for (uint32_t lanes : {1u, 2u, 3u, 5u, 7u, 8u, 33u, 70u})
        for (const bool listed : {false, true}) {
          CAPTURE(left);
          CAPTURE(lanes);
          CAPTURE(listed);
          const MatrixShape s = left ? MatrixShape{9, 130, 7} : MatrixShape{3, 130, 7};
          // X @ w: a = X (M x K, uniform), b = w (K x P per lane); g @ X: a = g, b = X.
          const uint32_t a_words = s.m * s.k, b_words = s.k * s.p, out_words = s.m * s.p;
          const uint32_t lane_words = left ? b_words : a_words;
          std::vector<uint32_t> uniform(left ? a_words : b_words);
          for (size_t i = 0; i < uniform.size(); ++i)
            uniform[i] = float_bits(static_cast<float>((i * 37) % 23) / 7.0f - 1.5f);
          std::vector<uint32_t> frame(size_t{lane_words} * frame_lanes);
          for (size_t i = 0; i < frame.size(); ++i)  // some subnormal or tiny: exact_product
            frame[i] = float_bits((static_cast<float>((i * 13) % 29) / 3.0f - 4.5f) *
                                  (i % 17 == 5   ? 1e-39f
                                   : i % 23 == 7 ? 3e-38f
                                                 : 1.0f));
          std::vector<uint32_t> list;
          for (uint32_t j = 0; j < lanes; ++j)
            list.push_back(listed ? 2 * j + j / 3 : 3 + j);
          UniformProduct p;
          p.shape = s;
          p.uniform = reinterpret_cast<const float*>(uniform.data());
          p.lanes = lanes;
          p.operand = {reinterpret_cast<float*>(frame.data()), frame_lanes,
                       listed ? list.data() : nullptr, listed ? 0u : 3u};
          std::vector<uint32_t> out(size_t{out_words} * frame_lanes, 0x7fc00001u);
          p.out = p.operand;
          p.out.base = reinterpret_cast<float*>(out.data());
          if (left)
            uniform_times_lanes(p);
          else
            lanes_times_uniform(p);
          // The same product in slices of the output (rows of X @ w, columns of g @ X), cut
          // off the tiles' groups of 4, as the VM's threads may: the same words.
          std::vector<uint32_t> sliced(out.size(), 0x7fc00001u);
          p.out.base = reinterpret_cast<float*>(sliced.data());
          const std::vector<uint32_t> cuts =
              left ? std::vector<uint32_t>{0, 3, 8, 9} : std::vector<uint32_t>{0, 3, 7};
          for (size_t c = 0; c + 1 < cuts.size(); ++c) {
            p.slice_begin = cuts[c];
            p.slice_end = cuts[c + 1];
            if (left)
              uniform_times_lanes(p);
            else
              lanes_times_uniform(p);
          }
          CHECK(sliced == out);
          std::vector<uint32_t> mine(lane_words), expected(out_words);
          for (size_t l = 0; l < frame_lanes; ++l) {
            const bool in_set = std::find(list.begin(), list.end(), l) != list.end();
            for (uint32_t w = 0; w < lane_words; ++w)
              mine[w] = frame[w * frame_lanes + l];
            if (in_set) {
              if (left)
                matrix_words(OpCode::MatMul, s, uniform.data(), mine.data(), expected.data());
              else
                matrix_words(OpCode::MatMul, s, mine.data(), uniform.data(), expected.data());
            } else {
              expected.assign(out_words, 0x7fc00001u);  // lanes outside the set keep their words
            }
            for (uint32_t w = 0; w < out_words; ++w)
              if (out[w * frame_lanes + l] != expected[w]) {
                CAPTURE(l);
                CAPTURE(w);
                REQUIRE(out[w * frame_lanes + l] == expected[w]);
              }
          }
        }
  }
  use_product_isa(chosen);
}

// Products big enough that the VM's threads split them (split_product: by tiles of lanes and
// slices of the output, rows of X @ w and columns of z @ X), and a lane's own matrix times its
// vector (which runs whole), on dense sets and sets with gaps (lanes leave the loop at different
// iterations), at lane counts that leave one tile (15: all slices), two or four tiles (33, 97:
// both at once), and partial tiles, on 1, 2 and 3 threads: every thread count gives the
// interpreter's words.
constexpr const char* kSplitProductProgram = R"(
uniform X: float[150][130];

struct Out { z: float[150], w: float[130], v: float[150] }

fn main(i: int, s: float) -> Out {
    var w = X[i % 150] * s;
    var z: float[150];
    var v: float[150];
    var k = 0;
    while k < 1 + i % 3 {
        z = X @ w;
        let g = z @ X;
        let A = X * s;
        v = A @ w;
        w = w - g * 0.0001;
        k += 1;
    }
    return Out { z: z, w: w, v: v };
}
)";

// The uniform X: float[150][130] of the thread tests, small varied values.
std::vector<uint32_t> matrix_150x130() {
  std::vector<uint32_t> x;
  for (int r = 0; r < 150 * 130; ++r)
    x.push_back(float_bits(static_cast<float>((r * 37) % 23) / 7.0f - 1.5f));
  return x;
}

TEST_CASE("vm threads: a product split across the threads gives the interpreter's words") {
  const CompiledProgram loaded = compile_program(kSplitProductProgram, "vm_split_products.ab");
  const std::vector<uint32_t> x = matrix_150x130();
  for (uint32_t lanes : {1u, 15u, 33u, 97u}) {
    CAPTURE(lanes);
    Batch batch = make_batch(lanes);
    batch.uniforms = {x};
    CHECK(check_vm_against_interp(loaded, batch, {1, 2, 3}).errors.empty());
    RunOptions options;
    options.threads = 2;
    const RunResult two = run_vm(loaded.lowered, batch, options);
    // 15 lanes x 19,500 multiply-adds reach the products' threshold: the pool started.
    if (lanes >= 15) CHECK(two.stats.threads == std::min(2u, usable_cores()));
  }
}

// The elementwise block between the products (each product is a block of its own:
// split_at_products) runs in lane chunks across the threads; a lane whose index is out of range
// stops its chunk's kernels there, and the chunk finishes on one thread.
constexpr const char* kSegmentFaultProgram = R"(
uniform X: float[150][130];

fn main(i: int, s: float) -> float[150] {
    let w = X[i % 150] * s;
    let z = X @ w;
    let A = X * s + 1.0;
    let bad = z[(i * 7) % 160];
    let v = A @ (w * bad);
    return v - z * 0.5;
}
)";

TEST_CASE("vm threads: a lane faulting between products spoils no other lane") {
  const CompiledProgram loaded = compile_program(kSegmentFaultProgram, "vm_segment_fault.ab");
  const std::vector<uint32_t> x = matrix_150x130();
  Batch batch = make_batch(97, [](uint32_t lane) { return lane; });
  batch.uniforms = {x};
  const RunResult expected = check_vm_against_interp(loaded, batch, {1, 2, 3});
  // (i * 7) % 160 >= 150 for i = 22, 45, 68, 91 and a few more: those lanes, and only those, fault.
  size_t faulting = 0;
  for (uint32_t i = 0; i < 97; ++i)
    faulting += (i * 7) % 160 >= 150;
  REQUIRE(faulting > 0);
  CHECK(expected.errors.size() == faulting);
  for (const LaneError& e : expected.errors)
    CHECK((e.lane * 7) % 160 >= 150);
}

TEST_CASE("vm threads: results, statistics and trace do not depend on the thread count") {
  const CompiledProgram loaded = compile_program(kProgram, "vm_kernels.ab");
  const Batch batch = make_batch(2000);
  RunOptions options;
  options.record_trace = true;
  options.threads = 1;
  const RunResult one = run_vm(loaded.lowered, batch, options);
  for (uint32_t threads : {2u, 4u}) {
    CAPTURE(threads);
    options.threads = threads;
    const RunResult many = run_vm(loaded.lowered, batch, options);
    CHECK(describe_difference(one, many).empty());
    CHECK(many.stats.steps == one.stats.steps);
    CHECK(many.stats.lane_steps == one.stats.lane_steps);
    CHECK(many.stats.utilization == one.stats.utilization);
    CHECK(many.stats.block_executions == one.stats.block_executions);
    REQUIRE(many.trace.size() == one.trace.size());
    for (size_t i = 0; i < one.trace.size(); ++i) {
      CHECK(many.trace[i].block == one.trace[i].block);
      CHECK(many.trace[i].active == one.trace[i].active);
    }
  }
}

}  // namespace
}  // namespace ab::testing
