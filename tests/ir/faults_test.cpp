// Per-lane fault isolation: a lane that overflows its stack, divides by zero, indexes out of range,
// fails an assert or exhausts its step budget stops with an error record (code, function, line)
// while every other lane finishes with its exact result; the interpreter and the VM report the
// same records. Lines are looked up in the samples' own text, not hard-coded.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "cpu/interp.h"
#include "cpu/vm.h"
#include "ir/ops.h"
#include "passes/lower.h"
#include "support/index_faults.h"
#include "support/result_compare.h"
#include "support/samples.h"

namespace ab::testing {
namespace {

struct Loaded {
  std::string source;
  Program program;
  int entry = -1;
  LoweredProgram lowered;
};

Loaded load(const std::string& file) {
  Loaded loaded;
  loaded.source = read_sample(file);
  loaded.program = load_sample(file);
  loaded.entry = loaded.program.find_function("main");
  REQUIRE(loaded.entry >= 0);
  loaded.lowered = lower(loaded.program, loaded.entry);
  return loaded;
}

Batch int_batch(std::vector<std::vector<int32_t>> columns) {
  Batch batch;
  batch.lanes = static_cast<uint32_t>(columns.at(0).size());
  for (const auto& column : columns) {
    batch.inputs.emplace_back(column.begin(), column.end());
  }
  return batch;
}

// Runs both backends, checks they agree, checks that faulted[] and errors[] describe the same
// lanes (errors sorted by lane, faulted lanes' outputs zero), and returns the interp result.
RunResult run_checked(const Loaded& loaded, const Batch& batch, const RunOptions& options) {
  REQUIRE(check_batch(loaded.program, loaded.entry, batch).ok());
  RunResult interp = run_interp(loaded.program, loaded.entry, batch, options);
  const RunResult vm = run_vm(loaded.lowered, batch, options);
  const std::string difference = describe_difference(interp, vm);
  CHECK_MESSAGE(difference.empty(), "vm differs from interp:\n", difference);

  REQUIRE(interp.faulted.size() == batch.lanes);
  const size_t per_lane = interp.outputs.size() / batch.lanes;
  uint32_t previous = 0;
  for (size_t i = 0; i < interp.errors.size(); ++i) {
    const LaneError& e = interp.errors[i];
    REQUIRE(e.lane < batch.lanes);
    if (i > 0) CHECK(e.lane > previous);
    previous = e.lane;
    CHECK(interp.faulted[e.lane] == 1);
    CHECK(e.code != Fault::None);
    for (size_t w = 0; w < per_lane; ++w)
      CHECK(interp.outputs[e.lane * per_lane + w] == 0u);
  }
  CHECK(static_cast<size_t>(std::count(interp.faulted.begin(), interp.faulted.end(), 1)) ==
        interp.errors.size());
  return interp;
}

const LaneError* error_of(const RunResult& result, uint32_t lane) {
  for (const LaneError& e : result.errors) {
    if (e.lane == lane) return &e;
  }
  return nullptr;
}

void check_fault(const RunResult& result, uint32_t lane, Fault code, const std::string& function,
                 int line) {
  CAPTURE(lane);
  REQUIRE(line > 0);  // the needle was found in the sample
  const LaneError* e = error_of(result, lane);
  REQUIRE_MESSAGE(e != nullptr, "lane ", lane, " was expected to fault with ", fault_name(code));
  CHECK(fault_name(e->code) == std::string(fault_name(code)));
  CHECK(e->function == function);
  CHECK(e->line == line);
  CHECK(e->step > 0u);
}

int fib_reference(int n) {
  return n <= 1 ? 1 : fib_reference(n - 1) + fib_reference(n - 2);
}

TEST_CASE("faults: stack overflow stops only the lanes that recurse too deep") {
  const Loaded fib = load("fib.ab");
  const int call_line = line_of(fib.source, "return fib(n - 1) + fib(n - 2);");
  // fib(n), fib(n-1), ..., fib(1): n frames (main's `return fib(n)` is a tail call that hands
  // fib(n) its frame). With room for 10, n <= 10 fits.
  std::vector<int32_t> n;
  for (int32_t i = 0; i < 15; ++i)
    n.push_back((i * 7) % 15);  // 0..14, shuffled
  RunOptions options;
  options.stack_depth = 10;
  const RunResult result = run_checked(fib, int_batch({n}), options);
  for (uint32_t lane = 0; lane < n.size(); ++lane) {
    CAPTURE(n[lane]);
    if (n[lane] >= 11) {
      check_fault(result, lane, Fault::StackOverflow, "fib", call_line);
    } else {
      CHECK(result.faulted[lane] == 0);
      CHECK(static_cast<int32_t>(result.outputs[lane]) == fib_reference(n[lane]));
    }
  }
  CHECK(result.errors.size() == 4);
}

TEST_CASE("faults: the deepest lanes set max_stack_depth exactly") {
  const Loaded fib = load("fib.ab");
  RunOptions options;
  options.stack_depth = 10;
  const Batch batch = int_batch({{3, 9, 0, 5}});
  const RunResult interp = run_interp(fib.program, fib.entry, batch, options);
  const RunResult vm = run_vm(fib.lowered, batch, options);
  CHECK(interp.errors.empty());
  CHECK(interp.stats.max_stack_depth == 9);  // n = 9: 9 fib frames, the first in main's
  CHECK(vm.stats.max_stack_depth == 9);
}

TEST_CASE("faults: each kind of fault in faults.ab, next to healthy lanes") {
  const Loaded faults = load("faults.ab");
  const std::string& text = faults.source;
  std::vector<int32_t> kind, x;
  for (int32_t lane = 0; lane < 36; ++lane) {
    kind.push_back(lane % 6);
    x.push_back(lane * 3 - 40);  // -40 .. 65, both signs
  }
  RunOptions options;
  options.stack_depth = 64;
  options.max_steps = 2000;
  const RunResult result = run_checked(faults, int_batch({kind, x}), options);

  for (uint32_t lane = 0; lane < kind.size(); ++lane) {
    CAPTURE(kind[lane]);
    const int32_t v = x[lane];
    switch (kind[lane]) {
      case 0:
        CHECK(result.faulted[lane] == 0);
        // divide(x, 2) + pick(x, 3) + check(x), C++ division truncating like the language's.
        CHECK(static_cast<int32_t>(result.outputs[lane]) == v / 2 + (v + 3) + v);
        break;
      case 1:
        check_fault(result, lane, Fault::DivisionByZero, "divide", line_of(text, "return x / d;"));
        break;
      case 2:
        check_fault(result, lane, Fault::IndexOutOfRange, "pick",
                    line_of(text, "return table[i];"));
        break;
      case 3:
        check_fault(result, lane, Fault::AssertFailed, "check", line_of(text, "assert(x < 100);"));
        break;
      case 4:
        check_fault(result, lane, Fault::StackOverflow, "descend",
                    line_of(text, "return descend(x + 1) + 1;"));
        break;
      case 5: {
        // The loop sits on one line, so whichever of its blocks runs out of budget, this is it.
        check_fault(result, lane, Fault::StepBudget, "spin", line_of(text, "while k >= 0"));
        const LaneError* e = error_of(result, lane);
        REQUIRE(e != nullptr);
        CHECK(e->step >= options.max_steps);
        CHECK(e->step <= options.max_steps + 1);
        break;
      }
    }
  }
}

TEST_CASE("faults: a stack overflow's step count and record do not depend on the neighbours") {
  const Loaded faults = load("faults.ab");
  RunOptions options;
  options.stack_depth = 32;
  const RunResult alone = run_checked(faults, int_batch({{4}, {1}}), options);
  const RunResult crowd = run_checked(faults, int_batch({{0, 4, 1, 4}, {5, 1, 3, 1}}), options);
  REQUIRE(alone.errors.size() == 1);
  for (uint32_t lane : {1u, 3u}) {
    const LaneError* e = error_of(crowd, lane);
    REQUIRE(e != nullptr);
    CHECK(e->code == alone.errors[0].code);
    CHECK(e->function == alone.errors[0].function);
    CHECK(e->line == alone.errors[0].line);
    CHECK(e->step == alone.errors[0].step);
  }
  CHECK(static_cast<int32_t>(crowd.outputs[0]) == 5 / 2 + (5 + 3) + 5);
}

int collatz_reference(int n) {
  int steps = 0;
  for (int64_t v = n; v != 1; ++steps)
    v = v % 2 == 0 ? v / 2 : 3 * v + 1;
  return steps;
}

TEST_CASE("faults: collatz lanes that never reach 1 exhaust their step budget") {
  const Loaded collatz = load("collatz.ab");
  const std::string& text = collatz.source;
  const std::vector<int32_t> n = {6, 0, 27, -1, 1, -7, 97, 2};
  RunOptions options;
  options.max_steps = 3000;  // n = 97 needs 118 iterations of a few blocks each
  const RunResult result = run_checked(collatz, int_batch({n}), options);
  const int loop_first = line_of(text, "while x != 1 {");
  const int loop_last = line_of(text, "steps += 1;");
  for (uint32_t lane = 0; lane < n.size(); ++lane) {
    CAPTURE(n[lane]);
    if (n[lane] <= 0) {
      const LaneError* e = error_of(result, lane);
      REQUIRE(e != nullptr);
      CHECK(e->code == Fault::StepBudget);
      CHECK(e->function == "collatz_steps");
      CHECK(e->line >= loop_first);
      CHECK(e->line <= loop_last);
    } else {
      CHECK(result.faulted[lane] == 0);
      CHECK(static_cast<int32_t>(result.outputs[lane]) == collatz_reference(n[lane]));
    }
  }
}

TEST_CASE("faults: reading a uniform table out of range faults that lane only") {
  const Loaded table = load("table_lookup.ab");
  const SampleCase& sample = sample_case("table_lookup.ab");
  Batch batch;
  batch.lanes = 5;
  batch.uniforms = sample.uniforms();
  // The last knot is 15 + 0.05 * 225 = 26.25: x = 26.25 and 40 read knots[16].
  batch.inputs.resize(1);
  for (float x : {0.5f, 26.25f, 3.0f, 40.0f, -2.0f})
    batch.inputs[0].push_back(float_bits(x));
  const RunResult result = run_checked(table, batch, RunOptions{});
  const int line = line_of(table.source, "let t = (x - knots[i])");
  check_fault(result, 1, Fault::IndexOutOfRange, "interpolate", line);
  check_fault(result, 3, Fault::IndexOutOfRange, "interpolate", line);
  for (uint32_t lane : {0u, 2u, 4u})
    CHECK(result.faulted[lane] == 0);
  // knots[0] = 0, knots[1] = 1.05, values = sin(i): x = 0.5 interpolates sin(0) and sin(1).
  const float t = 0.5f / 1.05f;
  CHECK(bits_float(result.outputs[0]) == doctest::Approx(std::sin(1.0f) * t).epsilon(1e-5));
}

TEST_CASE("faults: divmod's assert rejects a zero divisor in main") {
  const Loaded divmod = load("divmod.ab");
  const RunResult result =
      run_checked(divmod, int_batch({{100, 5, -1, 1000}, {7, 0, 3, 33}}), RunOptions{});
  const int line = line_of(divmod.source, "assert(a >= 0 && b > 0);");
  check_fault(result, 1, Fault::AssertFailed, "main", line);
  check_fault(result, 2, Fault::AssertFailed, "main", line);
  // QuotRem { q, r }: two words per lane.
  CHECK(result.outputs[0] == 14u);
  CHECK(result.outputs[1] == 2u);
  CHECK(result.outputs[6] == 30u);
  CHECK(result.outputs[7] == 10u);
}

TEST_CASE("faults: an index out of range is named with its value and the array it missed") {
  // The expected texts are written from kIndexFaultsSource: the index, the access as written up to
  // the index that missed (an earlier index that was in range shows as [·]) and that array's type.
  Loaded loaded;
  loaded.source = kIndexFaultsSource;
  CompiledProgram compiled = compile_program(loaded.source, "index.ab");
  loaded.program = std::move(compiled.program);
  loaded.entry = compiled.entry;
  loaded.lowered = lower(loaded.program, loaded.entry);
  const Batch batch = index_faults_batch();
  const RunResult result = run_checked(loaded, batch, RunOptions{});
  const std::map<uint32_t, std::string> expected = {
      {0, "index 3 out of range for q: float[3]"},
      {1, "index -1 out of range for q: float[3]"},
      {2, "index 7 out of range for p.eta: float[3]"},
      {3, "index 2 out of range for m[1]: float[2]"},
      {4, "index 5 out of range for m[·]: float[2]"},
      {5, "index 5 out of range for m: float[3][2]"},
      {6, "index 4 out of range for table: float[4]"},
      {7, "index 3 out of range for q: float[3]"},
      {8, "index 4294967295 out of range for q: float[3]"},
      {10, "index 2 out of range for a float[2]"},
  };
  CHECK(result.faulted[9] == 0);
  for (const auto& [lane, text] : expected) {
    CAPTURE(lane);
    const LaneError* e = error_of(result, lane);
    REQUIRE(e != nullptr);
    CHECK(e->code == Fault::IndexOutOfRange);
    CHECK(e->detail == text);
    CHECK(fault_text(*e) == "index_out_of_range: " + text);
  }
}

}  // namespace
}  // namespace ab::testing
