// Cross-backend agreement: the batched VM must give exactly what the reference interpreter gives
// (outputs word for word, the same faulted lanes, the same error records) on every sample, at
// several batch sizes, under both scheduling heuristics, and on hundreds of random programs. Also:
// the samples compute what they claim (checked against C++ reference implementations), and a
// lane's result does not depend on its position in the batch.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <map>

#include "cpu/interp.h"
#include "cpu/vm.h"
#include "ir/ops.h"
#include "lang/frontend.h"
#include "passes/lower.h"
#include "support/program_gen.h"
#include "support/result_compare.h"
#include "support/samples.h"

namespace ab::testing {
namespace {

int32_t as_int(uint32_t w) {
  return static_cast<int32_t>(w);
}

// The sample's program, its entry and its lowering, built once per test.
struct LoadedSample {
  Program program;
  int entry = -1;
  LoweredProgram lowered;
};

LoadedSample load(const SampleCase& sample) {
  LoadedSample loaded;
  loaded.program = load_sample(sample.file);
  loaded.entry = loaded.program.find_function(sample.entry);
  REQUIRE_MESSAGE(loaded.entry >= 0, sample.file, " has no function ", sample.entry);
  loaded.lowered = lower(loaded.program, loaded.entry);
  return loaded;
}

// Runs interp and vm on the batch and checks they agree; returns the interpreter's result.
RunResult run_both_and_compare(const LoadedSample& loaded, const Batch& batch,
                               const RunOptions& options, const std::string& what) {
  const Status fit = check_batch(loaded.program, loaded.entry, batch);
  REQUIRE_MESSAGE(fit.ok(), what, ": ", fit.error());
  RunResult expected = run_interp(loaded.program, loaded.entry, batch, options);
  const RunResult actual = run_vm(loaded.lowered, batch, options);
  const std::string difference = describe_difference(expected, actual);
  CHECK_MESSAGE(difference.empty(), what, ": vm differs from interp:\n", difference);
  return expected;
}

// The words lane `lane` of `result` produced.
std::vector<uint32_t> lane_words(const RunResult& result, uint32_t lane) {
  const size_t per_lane = result.outputs.size() / result.faulted.size();
  return {result.outputs.begin() + lane * per_lane, result.outputs.begin() + (lane + 1) * per_lane};
}

TEST_CASE("describe_difference notices every kind of disagreement") {
  RunResult base;
  base.outputs = {1, 2, 3, 4};
  base.faulted = {0, 1};
  base.errors = {LaneError{1, Fault::AssertFailed, "main", 3, 9, "why"}};
  CHECK(describe_difference(base, base).empty());

  RunResult word = base;
  word.outputs[2] = 7;
  CHECK(describe_difference(base, word).find("lane 1 word 0") != std::string::npos);

  RunResult lane = base;
  lane.faulted[0] = 1;
  CHECK_FALSE(describe_difference(base, lane).empty());

  for (int field = 0; field < 5; ++field) {
    RunResult error = base;
    LaneError& e = error.errors[0];
    if (field == 0) e.code = Fault::DivisionByZero;
    if (field == 1) e.function += "_other";
    if (field == 2) e.line = 4;
    if (field == 3) e.step = 10;
    if (field == 4) e.detail = "another reason";
    CAPTURE(field);
    CHECK_FALSE(describe_difference(base, error).empty());
  }
  RunResult missing = base;
  missing.errors.clear();
  CHECK(describe_difference(base, missing).find("missing error") != std::string::npos);
}

TEST_CASE("samples: vm equals interp at batch sizes 1, 7, 64 and 1000") {
  for (const SampleCase& sample : all_samples()) {
    CAPTURE(sample.file);
    const LoadedSample loaded = load(sample);
    for (uint32_t lanes : {1u, 7u, 64u, 1000u}) {
      const Batch batch = make_batch(sample, lanes);
      const RunResult result = run_both_and_compare(
          loaded, batch, sample.options, fmt::format("{} with {} lanes", sample.file, lanes));
      REQUIRE(result.faulted.size() == lanes);
      if (lanes >= 64) {
        // The inputs are meant to be divergent but mostly valid: most lanes finish.
        const auto faulted = std::count(result.faulted.begin(), result.faulted.end(), 1);
        CHECK_MESSAGE(faulted < static_cast<long>(lanes), sample.file, ": every lane faulted");
      }
    }
  }
}

TEST_CASE("samples: vm equals interp with the most-lanes heuristic") {
  for (const SampleCase& sample : all_samples()) {
    CAPTURE(sample.file);
    const LoadedSample loaded = load(sample);
    RunOptions options = sample.options;
    options.heuristic = Heuristic::MostLanes;
    for (uint32_t lanes : {7u, 64u, 1000u}) {
      run_both_and_compare(loaded, make_batch(sample, lanes), options,
                           fmt::format("{} with {} lanes, most-lanes", sample.file, lanes));
    }
  }
}

TEST_CASE("samples: a lane's result does not depend on its position in the batch") {
  for (const SampleCase& sample : all_samples()) {
    // Random draws are keyed by the lane index, so those samples are compared at equal indices
    // across batch sizes in random_test.cpp instead.
    if (sample.uses_random) continue;
    CAPTURE(sample.file);
    const LoadedSample loaded = load(sample);
    constexpr uint32_t kLanes = 64;
    const Batch batch = make_batch(sample, kLanes);
    const RunResult together = run_vm(loaded.lowered, batch, sample.options);
    for (uint32_t lane = 0; lane < kLanes; ++lane) {
      CAPTURE(lane);
      Batch alone;
      alone.lanes = 1;
      alone.uniforms = batch.uniforms;
      for (const auto& words : sample.lane_inputs(kLanes, lane))
        alone.inputs.push_back(words);
      for (bool use_vm : {false, true}) {
        const RunResult single =
            use_vm ? run_vm(loaded.lowered, alone, sample.options)
                   : run_interp(loaded.program, loaded.entry, alone, sample.options);
        REQUIRE(single.faulted.size() == 1);
        CHECK(single.faulted[0] == together.faulted[lane]);
        CHECK(lane_words(single, 0) == lane_words(together, lane));
        if (single.faulted[0] && together.faulted[lane]) {
          const LaneError& a = single.errors.at(0);
          const auto b = std::find_if(together.errors.begin(), together.errors.end(),
                                      [&](const LaneError& e) { return e.lane == lane; });
          REQUIRE(b != together.errors.end());
          CHECK(a.code == b->code);
          CHECK(a.function == b->function);
          CHECK(a.line == b->line);
          CHECK(a.step == b->step);
        }
      }
    }
  }
}

// ---- the samples compute what they say they compute -----------------------------------------

int fib_reference(int n) {
  return n <= 1 ? 1 : fib_reference(n - 1) + fib_reference(n - 2);
}

int ack_reference(int m, int n) {
  if (m == 0) return n + 1;
  if (n == 0) return ack_reference(m - 1, 1);
  return ack_reference(m - 1, ack_reference(m, n - 1));
}

int collatz_reference(int n) {
  int steps = 0;
  for (int64_t x = n; x != 1; ++steps)
    x = x % 2 == 0 ? x / 2 : 3 * x + 1;
  return steps;
}

int gcd_reference(int a, int b) {
  return b == 0 ? a : gcd_reference(b, a % b);
}

int tak_reference(int x, int y, int z) {
  if (y < x) {
    return tak_reference(tak_reference(x - 1, y, z), tak_reference(y - 1, z, x),
                         tak_reference(z - 1, x, y));
  }
  return z;
}

// Runs the sample on the interpreter for 200 lanes and checks each finished lane's output
// against `expected(inputs)`; lanes the reference marks as faulting (nullopt) must fault.
void check_against_reference(const std::string& file,
                             const std::function<std::optional<std::vector<uint32_t>>(
                                 const std::vector<std::vector<uint32_t>>&)>& expected) {
  const SampleCase& sample = sample_case(file);
  const LoadedSample loaded = load(sample);
  constexpr uint32_t kLanes = 200;
  const Batch batch = make_batch(sample, kLanes);
  const RunResult result = run_interp(loaded.program, loaded.entry, batch, sample.options);
  REQUIRE(result.faulted.size() == kLanes);
  int checked = 0;
  for (uint32_t lane = 0; lane < kLanes; ++lane) {
    const auto inputs = sample.lane_inputs(kLanes, lane);
    const auto want = expected(inputs);
    CAPTURE(lane);
    if (!want) {
      CHECK(result.faulted[lane] == 1);
      continue;
    }
    REQUIRE(result.faulted[lane] == 0);
    CHECK(lane_words(result, lane) == *want);
    ++checked;
  }
  CHECK(checked > 0);
}

std::vector<uint32_t> one_word(int32_t v) {
  return {static_cast<uint32_t>(v)};
}

TEST_CASE("samples: integer samples match C++ reference implementations") {
  check_against_reference("fib.ab", [](const auto& in) {
    return std::optional(one_word(fib_reference(as_int(in[0][0]))));
  });
  check_against_reference("ackermann.ab", [](const auto& in) {
    return std::optional(one_word(ack_reference(as_int(in[0][0]), as_int(in[1][0]))));
  });
  check_against_reference("even_odd.ab", [](const auto& in) {
    return std::optional(one_word(as_int(in[0][0]) % 2 == 0 ? 1 : 0));
  });
  check_against_reference("collatz.ab", [](const auto& in) {
    return std::optional(one_word(collatz_reference(as_int(in[0][0]))));
  });
  check_against_reference("gcd.ab", [](const auto& in) {
    return std::optional(
        one_word(gcd_reference(std::abs(as_int(in[0][0])), std::abs(as_int(in[1][0])))));
  });
  check_against_reference("divmod.ab", [](const auto& in) -> std::optional<std::vector<uint32_t>> {
    const int a = as_int(in[0][0]), b = as_int(in[1][0]);
    if (b <= 0) return std::nullopt;  // main's assert
    return std::vector<uint32_t>{static_cast<uint32_t>(a / b), static_cast<uint32_t>(a % b)};
  });
  check_against_reference("merge_sort.ab", [](const auto& in) {
    std::vector<int32_t> values(in[0].begin(), in[0].end());
    const int count = std::clamp(as_int(in[1][0]), 0, 16);
    std::sort(values.begin(), values.begin() + count);
    return std::optional(std::vector<uint32_t>(values.begin(), values.end()));
  });
  check_against_reference("tak.ab", [](const auto& in) {
    return std::optional(
        one_word(tak_reference(as_int(in[0][0]), as_int(in[1][0]), as_int(in[2][0]))));
  });
}

TEST_CASE("samples: float samples are close to their mathematical values") {
  const SampleCase& simpson = sample_case("simpson.ab");
  const LoadedSample loaded = load(simpson);
  const Batch batch = make_batch(simpson, 50);
  const RunResult result = run_interp(loaded.program, loaded.entry, batch, simpson.options);
  for (uint32_t lane = 0; lane < 50; ++lane) {
    CAPTURE(lane);
    REQUIRE(result.faulted[lane] == 0);
    const double a = bits_float(batch.inputs[0][lane]), b = bits_float(batch.inputs[1][lane]);
    // Composite midpoint rule in double with many slices: the integral of sin(x^2) + 1.
    constexpr int kSlices = 200000;
    double integral = 0;
    for (int i = 0; i < kSlices; ++i) {
      const double x = a + (b - a) * (i + 0.5) / kSlices;
      integral += std::sin(x * x) + 1.0;
    }
    integral *= (b - a) / kSlices;
    CHECK(bits_float(result.outputs[lane]) == doctest::Approx(integral).epsilon(2e-3));
  }

  const SampleCase& table = sample_case("table_lookup.ab");
  const LoadedSample table_loaded = load(table);
  const Batch table_batch = make_batch(table, 100);
  const RunResult table_result =
      run_interp(table_loaded.program, table_loaded.entry, table_batch, table.options);
  const auto& knots = table_batch.uniforms[0];
  const auto& values = table_batch.uniforms[1];
  for (uint32_t lane = 0; lane < 100; ++lane) {
    CAPTURE(lane);
    const float x = bits_float(table_batch.inputs[0][lane]);
    int i = 0;
    while (i < 15 && bits_float(knots[i + 1]) <= x)
      ++i;
    if (i == 15) {  // reads knots[16]
      CHECK(table_result.faulted[lane] == 1);
      continue;
    }
    REQUIRE(table_result.faulted[lane] == 0);
    const double t = (x - bits_float(knots[i])) / (bits_float(knots[i + 1]) - bits_float(knots[i]));
    const double want = bits_float(values[i]) * (1 - t) + bits_float(values[i + 1]) * t;
    CHECK(bits_float(table_result.outputs[lane]) == doctest::Approx(want).epsilon(1e-4));
  }
}

// ---- random programs --------------------------------------------------------------------------

struct GeneratedRun {
  uint64_t calls = 0;
  std::map<Fault, int> faults;
};

TEST_CASE("random programs: vm equals interp on 300 generated programs, batch 16") {
  constexpr int kPrograms = 300;
  constexpr uint32_t kLanes = 16;
  GeneratedRun totals;
  int compiled = 0;
  for (uint64_t seed = 1; seed <= kPrograms; ++seed) {
    const std::string source = generate_program(seed);
    Diagnostics diags("generated.ab", source);
    std::optional<Program> program = compile_source(source, "generated.ab", diags);
    if (!program) {
      FAIL_CHECK("generated program (seed ", seed, ") does not compile:\n", diags.format(),
                 "\n--- source ---\n", source);
      continue;
    }
    ++compiled;
    const int entry = program->find_function("main");
    REQUIRE(entry >= 0);
    const LoweredProgram lowered = lower(*program, entry);

    Batch batch;
    batch.lanes = kLanes;
    batch.inputs.resize(2);
    for (uint32_t lane = 0; lane < kLanes; ++lane) {
      // x & 3 is main's recursion depth: make every depth appear; the rest of x and y vary.
      const uint32_t x = (static_cast<uint32_t>(lane_hash(seed, lane)) & ~3u) | (lane & 3u);
      batch.inputs[0].push_back(x % 7 == 0 ? lane : x);  // some small inputs too
      batch.inputs[1].push_back(static_cast<uint32_t>(lane_hash(seed + 1000, lane) % 201) - 100);
    }
    RunOptions options;
    options.seed = seed;
    if (seed % 5 == 3) options.stack_depth = 3;  // some lanes overflow
    if (seed % 7 == 2) options.max_steps = 60;   // some lanes run out of steps
    if (seed % 4 == 1) options.heuristic = Heuristic::MostLanes;

    const RunResult expected = run_interp(*program, entry, batch, options);
    const RunResult actual = run_vm(lowered, batch, options);
    // NaN = NaN: the VM's kernels are compiled apart from exec_op, and the compiler may order
    // an add's operands either way, which picks which NaN comes out (the language does not
    // define NaN payloads or signs, docs/language.md).
    const std::string difference = compare_results(lowered, expected, actual);
    if (!difference.empty()) {
      FAIL_CHECK("seed ", seed, ": vm differs from interp:\n", difference, "--- source ---\n",
                 source);
    }
    totals.calls += expected.stats.calls;
    for (const LaneError& e : expected.errors)
      ++totals.faults[e.code];
  }
  CHECK(compiled == kPrograms);
  // The generator is meant to reach calls and every kind of fault; if it stops doing so, this
  // comparison silently loses its teeth.
  CHECK(totals.calls > 1000);
  for (Fault f : {Fault::StackOverflow, Fault::DivisionByZero, Fault::IndexOutOfRange,
                  Fault::AssertFailed, Fault::StepBudget}) {
    CAPTURE(fault_name(f));
    CHECK(totals.faults[f] > 0);
  }
}

TEST_CASE("random programs: the generator is deterministic and varied") {
  CHECK(generate_program(42) == generate_program(42));
  CHECK(generate_program(42) != generate_program(43));
  GenOptions no_faults;
  no_faults.faults = false;
  no_faults.random_draws = false;
  int with_products = 0, with_reductions = 0;
  for (uint64_t seed = 1; seed <= 50; ++seed) {
    const std::string source = generate_program(seed, no_faults);
    CAPTURE(source);
    with_products += source.find(" @ ") != std::string::npos;
    with_reductions += source.find("log_sum_exp(") != std::string::npos ||
                       source.find("mean(") != std::string::npos;
    CHECK(source.find("uniform()") == std::string::npos);
    CHECK(source.find("normal()") == std::string::npos);
    CHECK(source.find("% 5)") == std::string::npos);
    Diagnostics diags("generated.ab", source);
    const std::optional<Program> program = compile_source(source, "generated.ab", diags);
    REQUIRE_MESSAGE(program.has_value(), diags.format());
    // Without fault sources, no lane may fault.
    const int entry = program->find_function("main");
    Batch batch;
    batch.lanes = 8;
    batch.inputs.resize(2);
    for (uint32_t lane = 0; lane < 8; ++lane) {
      batch.inputs[0].push_back(static_cast<uint32_t>(lane_hash(seed, lane)));
      batch.inputs[1].push_back(lane);
    }
    const RunResult result = run_interp(*program, entry, batch, RunOptions{});
    for (const LaneError& e : result.errors)
      FAIL_CHECK(describe_error(e));
  }
  // Matrix products and one-array reductions among them (GenOptions::products), and none when
  // they are turned off.
  CHECK(with_products >= 10);
  CHECK(with_reductions >= 10);
  GenOptions no_products;
  no_products.products = false;
  for (uint64_t seed = 1; seed <= 20; ++seed)
    CHECK(generate_program(seed, no_products).find(" @ ") == std::string::npos);
}

}  // namespace
}  // namespace ab::testing
