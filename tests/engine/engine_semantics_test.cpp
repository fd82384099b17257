// The generated GLSL means what the op table means: integer and conversion edge cases, exact
// float ops (fmod, floor, sqrt, division), NaN-consistent min/max, per-lane random streams and
// per-lane faults (with function, line and step) are identical to the interpreter's on every
// schedule. Transformed data (computed on the interpreter when bound) read as inline code does.
#include <limits>
#include <map>

#include "autobatch/transformed_data.h"
#include "core/module_impl.h"
#include "support/engine_test_support.h"
#include "support/index_faults.h"

namespace ab::enginetest {
namespace {

const char* kEdgeCases = R"(
struct R {
    div: int, rem: int, shl: int, shr: int, ushr: uint, ushl: uint, neg: int, ab: int,
    to_i: int, to_u: uint, back: float, ubak: float, fmn: float, fmx: float, fcl: float,
    fm: float, fl: float, ce: float, sq: float, quo: float, umod: uint, ud: uint,
    imin: int, imax: int, th: float, fabs: float, fneg: float, dots: int, sums: float
}

fn main(a: int, b: int, f: float, g: float, u: uint) -> R {
    var d = 0;
    var r = 0;
    if b != 0 { d = a / b; r = a % b; }
    var ud = 0u;
    var um = 0u;
    if uint(b) != 0u { ud = u / uint(b); um = u % uint(b); }
    let v = [a, b, a ^ b];
    let w = [f, g, 0.5];
    return R {
        div: d, rem: r, shl: a << b, shr: a >> b, ushr: u >> uint(b), ushl: u << uint(a),
        neg: -a, ab: abs(a), to_i: int(f), to_u: uint(f), back: float(a), ubak: float(u),
        fmn: min(f, g), fmx: max(f, g), fcl: clamp(f, g, 2.0), fm: f % g, fl: floor(f),
        ce: ceil(f), sq: sqrt(abs(f)), quo: f / g, umod: um, ud: ud, imin: min(a, b),
        imax: max(a, b), th: tanh(f), fabs: abs(f), fneg: -f, dots: dot(v, v),
        sums: sum(w)
    };
}
)";

uint32_t w(int32_t v) {
  return static_cast<uint32_t>(v);
}
uint32_t w(float v) {
  return float_bits(v);
}

TEST_CASE("engine: integer, conversion and float edge cases equal interp on every schedule") {
  auto loaded = load_source(kEdgeCases);
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<int32_t> ints = {0,
                                     1,
                                     -1,
                                     7,
                                     -7,
                                     31,
                                     32,
                                     33,
                                     -33,
                                     100,
                                     -100,
                                     std::numeric_limits<int32_t>::min(),
                                     std::numeric_limits<int32_t>::max()};
  const std::vector<float> floats = {0.0f,          -0.0f, 0.5f,   -0.5f,  -1.0f, 2.5f,
                                     -2.5f,         1e10f, -1e10f, 3e9f,   -3e9f, 4294967296.0f,
                                     2147483648.0f, 7.25f, -7.25f, 1e-30f, 1e30f, inf,
                                     -inf,          nan,   0.003f, -20.0f, 3.0f};
  Batch batch;
  batch.inputs.resize(5);
  for (size_t i = 0; i < ints.size(); ++i)
    for (size_t j = 0; j < ints.size(); ++j) {
      const size_t lane = batch.lanes++;
      batch.inputs[0].push_back(w(ints[i]));
      batch.inputs[1].push_back(w(ints[j]));
      batch.inputs[2].push_back(w(floats[lane % floats.size()]));
      batch.inputs[3].push_back(w(floats[(lane * 7 + 3) % floats.size()]));
      batch.inputs[4].push_back(static_cast<uint32_t>(ints[(i + j) % ints.size()]) * 2654435761u);
    }
  const RunResult expected = run_interp(loaded->program, loaded->entry, batch, {});
  const size_t per_lane = expected.outputs.size() / batch.lanes;
  for (const Config& c : configs()) {
    const std::string config = c.name;
    CAPTURE(config);
    auto result = run_vulkan(loaded->lowered, batch, {}, options_for(c), nullptr, context());
    REQUIRE_MESSAGE(result.ok(), result.error());
    REQUIRE(result->outputs.size() == expected.outputs.size());
    int shown = 0;
    for (size_t i = 0; i < expected.outputs.size(); ++i) {
      const bool same = same_float(expected.outputs[i], result->outputs[i]);
      if (!same && shown++ < 10)
        FAIL_CHECK("lane ", i / per_lane, " field ", i % per_lane, ": expected ",
                   expected.outputs[i], ", got ", result->outputs[i]);
    }
    CHECK(shown == 0);
    check_no_validation_messages();
  }
}

TEST_CASE("engine: random streams equal interp lane by lane") {
  auto loaded = load_source(R"(
struct Draws { a: float, b: float, n: float, c: float }
fn draw(k: int) -> float {
    if k <= 0 { return uniform(); }
    return draw(k - 1);
}
fn main(k: int) -> Draws {
    let a = uniform();
    var b = 0.0;
    if k % 3 == 0 { b = uniform(); }
    let n = normal();
    return Draws { a: a, b: b, n: n, c: draw(k % 5) };
}
)");
  Batch batch;
  batch.lanes = 300;
  batch.inputs.resize(1);
  for (uint32_t lane = 0; lane < batch.lanes; ++lane)
    batch.inputs[0].push_back(lane * 7 % 11);
  for (uint64_t seed : {0ull, 12345678901ull}) {
    RunOptions options;
    options.seed = seed;
    const RunResult expected = run_interp(loaded->program, loaded->entry, batch, options);
    for (const Config& c : configs()) {
      const std::string config = c.name;
      CAPTURE(config);
      CAPTURE(seed);
      auto result = run_vulkan(loaded->lowered, batch, options, options_for(c), nullptr, context());
      REQUIRE_MESSAGE(result.ok(), result.error());
      REQUIRE(result->outputs.size() == expected.outputs.size());
      for (size_t i = 0; i < expected.outputs.size(); ++i) {
        // uniform() is exact arithmetic on Philox words: bit-identical. normal() goes through
        // the device's log and cos: within the tolerance.
        if (i % 4 == 2)
          REQUIRE(same_float(expected.outputs[i], result->outputs[i]));
        else
          REQUIRE(expected.outputs[i] == result->outputs[i]);
      }
      check_no_validation_messages();
    }
  }
}

TEST_CASE("engine: an index fault names the index and the array as the interpreter does") {
  // The detail is built from the two words the kernels record (which index, its value), on
  // every schedule and with the program split into parts.
  auto loaded = load_source(testing::kIndexFaultsSource);
  const Batch batch = testing::index_faults_batch();
  const RunResult expected = run_interp(loaded->program, loaded->entry, batch, RunOptions{});
  REQUIRE(expected.errors.size() == 10);
  for (const LaneError& e : expected.errors)
    CHECK(e.detail.starts_with("index "));
  for (const Config& c : configs()) {
    for (uint32_t max_part_cost : {0u, 40u}) {
      const std::string config = c.name;
      CAPTURE(config);
      CAPTURE(max_part_cost);
      VulkanOptions vulkan = options_for(c);
      vulkan.max_part_cost = max_part_cost;
      auto result = run_vulkan(loaded->lowered, batch, RunOptions{}, vulkan, nullptr, context());
      REQUIRE_MESSAGE(result.ok(), result.error());
      CHECK(compare_results(loaded->lowered, expected, *result) == "");
      check_no_validation_messages();
    }
  }
}

TEST_CASE("engine: faults stop only the faulting lanes, with the interpreter's error records") {
  const auto& sample = testing::sample_case("faults.ab");
  const std::string text = testing::read_sample("faults.ab");
  auto loaded = load_sample_case(sample);
  Batch batch;
  batch.lanes = 12;
  batch.inputs.resize(2);
  for (uint32_t lane = 0; lane < batch.lanes; ++lane) {
    batch.inputs[0].push_back(lane % 6);  // 0 computes, 1..5 fault in five different ways
    batch.inputs[1].push_back(w(static_cast<int32_t>(lane) - 3));
  }
  RunOptions options;
  options.max_steps = 3000;
  options.stack_depth = 40;
  const RunResult expected = run_interp(loaded->program, loaded->entry, batch, options);
  const std::map<uint32_t, std::pair<Fault, std::string>> kinds = {
      {1, {Fault::DivisionByZero, "return x / d;"}},
      {2, {Fault::IndexOutOfRange, "return table[i];"}},
      {3, {Fault::AssertFailed, "assert(x < 100);"}},
      {4, {Fault::StackOverflow, "return descend(x + 1) + 1;"}},
      {5, {Fault::StepBudget, ""}},
  };
  for (const Config& c : configs()) {
    const std::string config = c.name;
    CAPTURE(config);
    auto result = run_vulkan(loaded->lowered, batch, options, options_for(c), nullptr, context());
    REQUIRE_MESSAGE(result.ok(), result.error());
    CHECK(compare_results(loaded->lowered, expected, *result) == "");
    REQUIRE(result->errors.size() == 10);
    for (const LaneError& e : result->errors) {
      const auto& [code, line_text] = kinds.at(e.lane % 6);
      CHECK(e.code == code);
      if (!line_text.empty()) CHECK(e.line == testing::line_of(text, line_text));
      if (code == Fault::StepBudget) CHECK(e.step == options.max_steps);
    }
    for (uint32_t lane = 0; lane < batch.lanes; lane += 6) {
      CHECK(result->faulted[lane] == 0);
      const int32_t x = static_cast<int32_t>(lane) - 3;
      // divide(x, 2) + pick(x, 3) + check(x) = x / 2 + (x + 3) + x
      CHECK(static_cast<int32_t>(result->outputs[lane]) == x / 2 + x + 3 + x);
    }
    check_no_validation_messages();
  }
}

// Issue 45: a uniform computed from the data at bind time reads, on Vulkan, the bits the same
// expression gives inline on the interpreter.
TEST_CASE("engine: transformed data equal the inline expression on the interpreter") {
  auto derived = Module::compile(
      "uniform x: float[4];\nuniform lx: float[4] = log(x) * x[3];\n"
      "fn main(a: float) -> float { return a * lx[0] + lx[1] - lx[2] * lx[3]; }\n",
      {"derived.ab", "main"});
  auto inline_form = Module::compile(
      "uniform x: float[4];\nfn main(a: float) -> float {\n"
      "    let lx = log(x) * x[3];\n    return a * lx[0] + lx[1] - lx[2] * lx[3];\n}\n",
      {"inline.ab", "main"});
  REQUIRE_MESSAGE(derived.ok(), derived.error());
  REQUIRE_MESSAGE(inline_form.ok(), inline_form.error());
  Batch batch;
  batch.lanes = 33;
  batch.inputs.resize(1);
  for (uint32_t lane = 0; lane < batch.lanes; ++lane)
    batch.inputs[0].push_back(float_bits(0.37f * static_cast<float>(lane) - 4.0f));
  batch.uniforms = {{float_bits(0.3f), float_bits(1.7f), float_bits(2.9f), float_bits(11.0f)}};
  const RunResult expected =
      run_interp((*inline_form)->impl().program, (*inline_form)->impl().entry, batch, RunOptions{});
  batch.uniforms.emplace_back();
  REQUIRE(compute_transformed_uniforms(**derived, batch.uniforms).ok());
  const Config& c = configs().front();
  VulkanStats stats;
  auto result = run_vulkan((*derived)->impl().lowered, batch, RunOptions{}, options_for(c), &stats,
                           context());
  REQUIRE_MESSAGE(result.ok(), result.error());
  CHECK(result->outputs == expected.outputs);
  check_no_validation_messages();
}

}  // namespace
}  // namespace ab::enginetest
