// vectorize_loops (passes/vectorize_loops.h, docs/language.md "Loops that run as array code"):
// a converted loop gives the loop's bits on interp and vm (the same program compiled with the
// pass off is the reference); a loop that cannot be converted says why; a converted loop inside
// a differentiated function derives as array code, matching float64 central differences, with
// no tape that grows with the trip count.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "cpu/interp.h"
#include "cpu/vm.h"
#include "ir/verify.h"
#include "lang/frontend.h"
#include "passes/lower.h"
#include "support/program_gen.h"
#include "support/result_compare.h"
#include "support/samples.h"

namespace ab::testing {
namespace {

struct Compiled {
  Program program;
  std::vector<LoopVerdict> loops;
};

Compiled compile(const std::string& source, bool vectorize) {
  Diagnostics diags("test.ab", source);
  Compiled c;
  FrontendOptions options;
  options.vectorize_loops = vectorize;
  options.loops = &c.loops;
  std::optional<Program> program = compile_source(source, "test.ab", diags, options);
  REQUIRE_MESSAGE(program.has_value(), diags.format());
  c.program = std::move(*program);
  return c;
}

// Floats that stress rounding and the special values, as a uniform's or a lane's words.
std::vector<uint32_t> float_words(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-3.0f, 3.0f);
  std::vector<uint32_t> w;
  for (size_t i = 0; i < n; ++i) {
    float x = d(rng) * std::ldexp(1.0f, static_cast<int>(rng() % 40) - 20);
    if (rng() % 29 == 0) x = -0.0f;
    if (seed % 3 == 0 && rng() % 97 == 0) x = INFINITY;
    w.push_back(float_bits(x));
  }
  return w;
}

Batch batch_for(const Program& p, int entry, uint32_t lanes, uint32_t seed) {
  Batch batch;
  batch.lanes = lanes;
  const Function& fn = p.functions[static_cast<size_t>(entry)];
  for (VarId v : fn.params)
    batch.inputs.push_back(float_words(lanes * p.types.words(fn.vars[v].type), seed++));
  for (const Uniform& u : p.uniforms)
    batch.uniforms.push_back(float_words(p.types.words(u.type), seed++));
  return batch;
}

// Runs `source` with and without the pass on interp and vm; all four agree bit for bit.
void check_same_bits(const std::string& source, uint32_t seed) {
  const Compiled loop = compile(source, false), array = compile(source, true);
  const int entry = loop.program.find_function("main");
  REQUIRE(entry >= 0);
  const Batch batch = batch_for(loop.program, entry, 19, seed);
  const RunResult want = run_interp(loop.program, entry, batch, {});
  const RunResult interp = run_interp(array.program, entry, batch, {});
  const LoweredProgram lowered = lower(array.program, entry);
  REQUIRE(verify(lowered).ok());
  REQUIRE(verify(array.program).ok());
  const RunResult vm = run_vm(lowered, batch, {});
  // NaN = NaN (the language defines no NaN payloads or signs); every other word exactly.
  CHECK_MESSAGE(compare_results(lowered, want, interp).empty(),
                compare_results(lowered, want, interp), "\n", source);
  CHECK_MESSAGE(compare_results(lowered, want, vm).empty(), compare_results(lowered, want, vm),
                "\n", source);
}

RunResult without_steps(RunResult r) {
  for (LaneError& e : r.errors)
    e.step = 0;
  return r;
}

struct Case {
  const char* name;
  const char* source;
  const char* reason;  // "" when the loop is vectorised
};

// Every case: N = 70 rows, uniforms x, y (float[N]) and X (float[N][K]); main's parameter q.
const Case kCases[] = {
    {"a regression's sum from a prior", R"(
const N: int = 70;
uniform x: float[N];
uniform y: float[N];
fn main(q: float[2]) -> float {
    var lp = -0.125 * (q[0] * q[0] + q[1] * q[1]);
    for i in 0..N {
        let eta = q[0] + q[1] * x[i];
        lp += y[i] * eta - exp(eta);
    }
    return lp;
})",
     ""},
    {"dot of a data row, a difference, a max and the index", R"(
const N: int = 70;
const K: int = 5;
uniform X: float[N][K];
uniform y: float[N];
fn main(w: float[K]) -> float {
    var lp = 0.0;
    var top = -1.0e30;
    var low = 0.0;
    for i in 0..N {
        let z = dot(X[i], w) + 0.01 * float(i);
        lp -= log1p_exp(z) - y[i] * z;
        top = max(top, dot(w, X[i]));
        low = min(low, z);
    }
    return lp + top * low;
})",
     ""},
    {"a sum from -0 over -0 terms, and the same term every row", R"(
const N: int = 70;
uniform y: float[N];
fn main(q: float[1]) -> float {
    var zero = -0.0;
    var s = 0.0;
    for i in 0..N {
        zero += -0.0 * y[i] * 0.0;
        s += q[0];
    }
    return zero + s;
})",
     ""},
    {"an integer count over a uint range", R"(
const N: uint = 70u;
uniform y: float[N];
fn main(q: float[1]) -> float {
    var n = 0;
    for i in 0u..N {
        n += int(y[i] > q[0]);
    }
    return float(n);
})",
     ""},
    {"a lane's own array indexed by the loop", R"(
const N: int = 70;
struct P { a: float, v: float[N] }
uniform y: float[N];
fn main(q: float[71]) -> float {
    var p = P { a: q[70], v: [0.0; N] };
    for j in 0..N { p.v[j] = q[j]; }
    var lp = 0.0;
    for i in 0..N { lp += (y[i] - p.v[i]) * p.a; }
    return lp;
})",
     ""},
    {"a recursion stays a loop", R"(
const N: int = 70;
uniform y: float[N];
fn main(q: float[1]) -> float {
    var acc = q[0];
    for i in 0..N { acc = acc * 0.5 + y[i]; }
    return acc;
})",
     "it carries 'acc' from one iteration to the next"},
    {"an if without else: the untaken rows add -0, which leaves every sum as it is", R"(
const N: int = 70;
uniform y: float[N];
fn main(q: float[1]) -> float {
    var lp = -0.0;
    var n = 0;
    for i in 0..N { if y[i] > q[0] { lp += y[i]; n += i; } }
    return lp + float(n);
})",
     ""},
    {"if/else arms that update one sum, set a variable read after them, and log a negative", R"(
const N: int = 70;
uniform y: float[N];
fn main(q: float[2]) -> float {
    var lp = 0.0;
    var s = 0.0;
    for i in 0..N {
        var t = 0.0;
        if y[i] > 0.0 && q[1] < 2.0 {
            t = log(y[i]) * q[0];
            lp -= t * t;
        } else {
            t = -y[i] * q[1];
            lp += log(-y[i]) + sqrt(q[0]);
        }
        s += 0.5 * t;
    }
    return lp + s;
})",
     ""},
    {"else-if chains, a nested if, an invariant condition and a constant arm", R"(
const N: int = 70;
uniform y: float[N];
fn main(q: float[2]) -> float {
    var lp = 0.0;
    var hits = 0u;
    for i in 0..N {
        var w = 1.0;
        if y[i] < -1.0 { w = 2.0; } else if y[i] < 1.0 { w = q[0]; } else { w = exp(y[i] * q[1]); }
        if q[0] > 0.0 {
            if y[i] > q[1] || y[i] < -q[1] { hits += 1u; }
            lp += w * y[i];
        }
    }
    return lp + float(hits);
})",
     ""},
    {"a max inside an if stays a loop", R"(
const N: int = 70;
uniform y: float[N];
fn main(q: float[1]) -> float {
    var top = q[0];
    for i in 0..N { if y[i] > 0.0 { top = max(top, y[i]); } }
    return top;
})",
     "it updates 'top' by max inside an if"},
    {"an integer division inside an if stays a loop (it could fault where the loop did not)", R"(
const N: int = 70;
uniform y: float[N];
fn main(q: float[1]) -> float {
    let k = int(q[0]);
    var n = 0;
    for i in 0..N { if y[i] > 100.0 { n += 7 / k; } }
    return float(n);
})",
     "an integer division inside an if"},
    {"an assert inside an if stays a loop", R"(
const N: int = 70;
uniform y: float[N];
fn main(q: float[1]) -> float {
    var lp = 0.0;
    for i in 0..N { if y[i] > 100.0 { assert(q[0] > 0.0); lp += y[i]; } }
    return lp;
})",
     "an assert inside an if"},
    {"a variable set in one arm only and read after it carries a value", R"(
const N: int = 70;
uniform y: float[N];
fn main(q: float[1]) -> float {
    var lp = 0.0;
    var last = q[0];
    for i in 0..N {
        if y[i] > 0.0 { last = y[i]; }
        lp += last;
    }
    return lp;
})",
     "it carries 'last' from one iteration to the next"},
    {"two updates of one sum on one path stay a loop", R"(
const N: int = 70;
uniform y: float[N];
fn main(q: float[1]) -> float {
    var lp = 0.0;
    for i in 0..N { lp += y[i]; if y[i] > q[0] { lp += 1.0; } }
    return lp;
})",
     "it updates 'lp' twice"},
    {"a loop around a loop that stays a loop says so", R"(
const N: int = 70;
uniform y: float[N];
fn main(q: float[1]) -> float {
    var lp = 0.0;
    for b in 0..7 {
        var part = 0.0;
        for i in b * 10..b * 10 + 10 { part += y[i]; }
        lp += part * q[0];
    }
    return lp;
})",
     "it holds a loop that stays a loop"},
    {"a break stays a loop", R"(
const N: int = 70;
uniform y: float[N];
fn main(q: float[1]) -> float {
    var lp = 0.0;
    for i in 0..N { if y[i] > q[0] { break; } lp += y[i]; }
    return lp;
})",
     "a break or continue in its body"},
    {"a call stays a loop", R"(
const N: int = 70;
uniform y: float[N];
// Recursive, so inline_calls leaves the call (a small non-recursive one is inlined first).
fn sq(v: float, d: int) -> float { if d > 0 { return sq(v, d - 1); } return v * v; }
fn main(q: float[1]) -> float {
    var lp = 0.0;
    for i in 0..N { lp += sq(y[i] - q[0], 1); }
    return lp;
})",
     "a call to sq"},
    {"part of a range reads rows of the arrays", R"(
const N: int = 70;
const K: int = 4;
uniform y: float[N];
uniform X: float[N][K];
fn main(q: float[K]) -> float {
    var lp = 0.0;
    for i in 1..N - 2 { lp += y[i] * q[0] - dot(X[i], q); }
    return lp;
})",
     ""},
    {"a neighbour's row: an AR(1)'s differences, the index read as a number too", R"(
const N: int = 70;
uniform y: float[N];
fn main(q: float[2]) -> float {
    var lp = 0.0;
    for t in 1..N {
        let e = y[t] - q[0] * y[t - 1] - q[1] * y[t + -1] * float(t);
        lp -= e * e;
    }
    return lp;
})",
     ""},
    {"element writes, whole and in part, read after the loop", R"(
const N: int = 70;
uniform y: float[N];
struct S { a: float, v: float[N] }
fn main(q: float[2]) -> float {
    var out = [0.0; N];
    var s = S { a: q[1], v: [1.0; N] };
    for i in 0..N { out[i] = y[i] * q[0] + float(i); }
    for i in 2..N - 1 { s.v[i + 1] = exp(y[i - 2] - q[1]); }
    return out[0] + out[N - 1] + sum(out) + sum(s.v) * s.a;
})",
     ""},
    {"an index past the end stays a loop (the loop faults there)", R"(
const N: int = 70;
uniform y: float[N];
fn main(q: float[1]) -> float {
    var lp = 0.0;
    for i in 1..N { lp += y[i + 1] * q[0]; }
    return lp;
})",
     "its index leaves the array it indexes"},
    {"an element read back in the loop stays a loop", R"(
const N: int = 70;
uniform y: float[N];
fn main(q: float[1]) -> float {
    var out = [0.0; N];
    for i in 1..N { out[i] = out[i - 1] + y[i] * q[0]; }
    return out[N - 1];
})",
     "it carries 'out'"},
    {"an element write inside an if stays a loop", R"(
const N: int = 70;
uniform y: float[N];
fn main(q: float[1]) -> float {
    var out = [0.0; N];
    for i in 0..N { if y[i] > q[0] { out[i] = y[i]; } }
    return sum(out);
})",
     "it writes an element of 'out' inside an if"},
    {"a range from a parameter stays a loop", R"(
const N: int = 70;
uniform y: float[N];
fn main(q: float[1]) -> float {
    var lp = 0.0;
    for i in 0..int(q[0]) % N { lp += y[i]; }
    return lp;
})",
     "its range is not constant"},
    {"a pairwise log_sum_exp stays a loop", R"(
const N: int = 70;
uniform y: float[N];
fn main(q: float[1]) -> float {
    var l = q[0];
    for i in 0..N { l = log_sum_exp(l, y[i]); }
    return l;
})",
     "not a sum, max or min"},
    {"a dot over more than one product block (100 terms) is a row of X @ w", R"(
const N: int = 70;
uniform X: float[N][100];
fn main(w: float[100]) -> float {
    var lp = 0.0;
    for i in 0..N { lp += dot(X[i], w) - log1p_exp(dot(w, X[i])); }
    return lp;
})",
     ""},
    {"a value read after the loop stays a loop", R"(
const N: int = 70;
uniform y: float[N];
fn main(q: float[1]) -> float {
    var lp = 0.0;
    var last = 0.0;
    for i in 0..N { last = y[i] * q[0]; lp += last; }
    return lp + last;
})",
     "'last', which it computes, is read after the loop"},
    {"a while loop stays a loop", R"(
fn main(q: float[1]) -> float {
    var s = q[0];
    while s < 100.0 && s > 0.001 { s = s * 2.0; }
    return s;
})",
     "not a 'for' loop"},
};

TEST_CASE("vectorize_loops: each loop is converted or says why not, and keeps its bits") {
  uint32_t seed = 1;
  for (const Case& c : kCases) {
    const std::string name = c.name;
    CAPTURE(name);
    const Compiled array = compile(c.source, true);
    REQUIRE(!array.loops.empty());
    if (*c.reason == 0) {
      for (const LoopVerdict& v : array.loops)
        CHECK_MESSAGE(v.vectorised, v.reason);
    } else {
      const bool said = std::any_of(array.loops.begin(), array.loops.end(), [&](const auto& v) {
        return !v.vectorised && v.reason.find(c.reason) != std::string::npos;
      });
      CHECK_MESSAGE(said, array.loops.back().reason);
    }
    check_same_bits(c.source, seed);
    seed += 10;
  }
}

TEST_CASE("vectorize_loops: a converted loop is one block, not a step per row") {
  const char* source = kCases[0].source;
  const Compiled loop = compile(source, false), array = compile(source, true);
  const int entry = array.program.find_function("main");
  const Batch batch = batch_for(array.program, entry, 4, 7);
  const RunResult before = run_interp(loop.program, entry, batch, {});
  const RunResult after = run_interp(array.program, entry, batch, {});
  CHECK(before.stats.lane_steps >= 70 * 4);
  CHECK(after.stats.lane_steps <= 4 * 2);
  CHECK(array.loops.at(0).loc.line == 7);
  CHECK(array.loops.at(0).loc.col == 5);
}

TEST_CASE("vectorize_loops: sum is the chain from its first element, so sum([-0, -0]) is -0") {
  const char* source = R"(
fn main(q: float[2]) -> float { return sum(q); })";
  const Compiled c = compile(source, true);
  Batch batch;
  batch.lanes = 2;
  batch.inputs = {{float_bits(-0.0f), float_bits(-0.0f), float_bits(-0.0f), float_bits(0.0f)}};
  const int entry = c.program.find_function("main");
  const RunResult interp = run_interp(c.program, entry, batch, {});
  const RunResult vm = run_vm(lower(c.program, entry), batch, {});
  for (const RunResult* r : {&interp, &vm}) {
    CHECK(r->outputs.at(0) == float_bits(-0.0f));
    CHECK(r->outputs.at(1) == float_bits(0.0f));
  }
}

// Two sums in one loop: differentiate cannot preaccumulate it (docs/language.md, "Gradients"),
// so as a loop its gradient keeps a tape entry per row; vectorised, it derives as array code.
const char* const kTwoSums = R"(
const N: int = 300;
uniform x: float[N];
uniform y: float[N];
fn log_density(q: float[3]) -> float {
    var lp = 0.0;
    var penalty = 0.0;
    for i in 0..N {
        let z = (y[i] - (q[0] + q[1] * x[i])) / exp(q[2]);
        lp += -0.5 * z * z - q[2];
        penalty += 0.01 * z;
    }
    return lp - penalty * penalty;
}
fn main(q: float[3]) -> float[3] { return grad(log_density, q); }
)";

double two_sums_f64(const double* q, const std::vector<float>& x, const std::vector<float>& y) {
  double lp = 0, penalty = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const double z = (y[i] - (q[0] + q[1] * x[i])) / std::exp(q[2]);
    lp += -0.5 * z * z - q[2];
    penalty += 0.01 * z;
  }
  return lp - penalty * penalty;
}

TEST_CASE(
    "vectorize_loops: a vectorised loop's gradient is array code: float64 differences, no "
    "tape") {
  const Compiled loop = compile(kTwoSums, false), array = compile(kTwoSums, true);
  CHECK(array.loops.at(0).vectorised);
  const int entry = array.program.find_function("main");
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  std::vector<float> x(300), y(300);
  Batch batch;
  batch.lanes = 6;
  batch.uniforms.resize(2);
  for (size_t i = 0; i < x.size(); ++i) {
    x[i] = d(rng);
    y[i] = 0.3f + 0.8f * x[i] + 0.5f * d(rng);
    batch.uniforms[0].push_back(float_bits(x[i]));
    batch.uniforms[1].push_back(float_bits(y[i]));
  }
  batch.inputs.resize(1);
  for (uint32_t k = 0; k < batch.lanes * 3; ++k)
    batch.inputs[0].push_back(float_bits(0.5f * d(rng)));
  RunOptions shallow;
  shallow.stack_depth = 2;  // main and log_density's derived function: no room for a tape
  const RunResult interp = run_interp(array.program, entry, batch, shallow);
  const LoweredProgram lowered = lower(array.program, entry);
  const RunResult vm = run_vm(lowered, batch, shallow);
  REQUIRE(interp.errors.empty());
  CHECK(compare_results(lowered, interp, vm).empty());
  for (uint32_t lane = 0; lane < batch.lanes; ++lane) {
    double q[3];
    for (int k = 0; k < 3; ++k)
      q[k] = bits_float(batch.inputs[0][lane * 3 + k]);
    for (int k = 0; k < 3; ++k) {
      const double h = 1e-6;
      double up[3] = {q[0], q[1], q[2]}, down[3] = {q[0], q[1], q[2]};
      up[k] += h;
      down[k] -= h;
      const double want = (two_sums_f64(up, x, y) - two_sums_f64(down, x, y)) / (2 * h);
      CHECK(bits_float(interp.outputs[lane * 3 + k]) ==
            doctest::Approx(want).epsilon(1e-3).scale(1.0));
    }
  }
  // As a loop, the same gradient needs a tape entry per row: it overflows that depth.
  const RunResult taped = run_interp(loop.program, entry, batch, shallow);
  REQUIRE(!taped.errors.empty());
  CHECK(taped.errors[0].code == Fault::StackOverflow);
}

// The numerically safe split people write: the arm a row does not take overflows there (exp of
// a large z, log of 0 after the mask), and its derivative would be 0 times infinity; the pass
// masks what an arm reads, so the gradient is the loop's, with no NaN.
const char* const kSafeSplit = R"(
const N: int = 200;
uniform x: float[N];
fn log_density(q: float[2]) -> float {
    var lp = -0.5 * (q[0] * q[0] + q[1] * q[1]);
    for i in 0..N {
        let z = q[0] + q[1] * x[i];
        if z < 20.0 { lp -= log1p(exp(z)); } else { lp -= z; }
    }
    var pos = 0.0;
    for i in 0..N {
        if x[i] > 0.0 { pos += log(q[1] * x[i]) * x[i]; } else { pos += q[0] * x[i]; }
    }
    return lp + pos;
}
fn main(q: float[2]) -> float[2] { return grad(log_density, q); }
)";

TEST_CASE("vectorize_loops: an if's untaken arm puts no NaN in a gradient") {
  const Compiled loop = compile(kSafeSplit, false), array = compile(kSafeSplit, true);
  REQUIRE(array.loops.size() == 2);
  CHECK(array.loops[0].vectorised);
  CHECK(array.loops[1].vectorised);
  const int entry = array.program.find_function("main");
  Batch batch;
  batch.lanes = 5;
  batch.uniforms.resize(1);
  for (int i = 0; i < 200; ++i)  // -50 .. 49.5, and an exact 0 (the log arm's mask)
    batch.uniforms[0].push_back(float_bits(static_cast<float>(i - 100) * 0.5f));
  batch.inputs.resize(1);
  for (uint32_t lane = 0; lane < batch.lanes; ++lane) {
    batch.inputs[0].push_back(float_bits(0.3f * static_cast<float>(lane) - 0.6f));
    batch.inputs[0].push_back(float_bits(0.5f + 0.5f * static_cast<float>(lane)));
  }
  RunOptions options;
  options.stack_depth = 4096;
  const RunResult want = run_interp(loop.program, entry, batch, options);
  const RunResult got = run_interp(array.program, entry, batch, options);
  const LoweredProgram lowered = lower(array.program, entry);
  const RunResult vm = run_vm(lowered, batch, options);
  REQUIRE(want.errors.empty());
  REQUIRE(got.errors.empty());
  CHECK(compare_results(lowered, got, vm).empty());
  for (size_t k = 0; k < want.outputs.size(); ++k) {
    const float a = bits_float(want.outputs[k]), b = bits_float(got.outputs[k]);
    CAPTURE(k);
    REQUIRE(std::isfinite(a));
    CHECK(std::isfinite(b));
    CHECK(b == doctest::Approx(a).epsilon(1e-4));
  }
}

// Rows of a range, a neighbour's row and element writes derive as array code too: an AR(1)'s
// means written into an array, then read back over part of it.
const char* const kAr1 = R"(
const N: int = 100;
uniform y: float[N];
fn log_density(q: float[2]) -> float {
    var mu = [0.0; N];
    for t in 1..N { mu[t] = q[0] * y[t - 1]; }
    var lp = 0.0;
    for t in 1..N {
        let e = (y[t] - mu[t]) / exp(q[1]);
        lp -= 0.5 * e * e + q[1];
    }
    return lp;
}
fn main(q: float[2]) -> float[2] { return grad(log_density, q); }
)";

TEST_CASE("vectorize_loops: slices and element writes differentiate as the loops do") {
  const Compiled loop = compile(kAr1, false), array = compile(kAr1, true);
  REQUIRE(array.loops.size() == 2);
  CHECK(array.loops[0].vectorised);
  CHECK(array.loops[1].vectorised);
  const int entry = array.program.find_function("main");
  Batch batch;
  batch.lanes = 4;
  batch.uniforms.resize(1);
  float level = 0.0f;
  for (int t = 0; t < 100; ++t) {
    level = 0.7f * level + static_cast<float>((t * 37) % 11 - 5) * 0.1f;
    batch.uniforms[0].push_back(float_bits(level));
  }
  batch.inputs.resize(1);
  for (uint32_t lane = 0; lane < batch.lanes; ++lane) {
    batch.inputs[0].push_back(float_bits(0.2f * static_cast<float>(lane)));
    batch.inputs[0].push_back(float_bits(-0.3f + 0.2f * static_cast<float>(lane)));
  }
  RunOptions options;
  options.stack_depth = 4096;
  const RunResult want = run_interp(loop.program, entry, batch, options);
  const RunResult got = run_interp(array.program, entry, batch, options);
  const LoweredProgram lowered = lower(array.program, entry);
  REQUIRE(verify(lowered).ok());
  const RunResult vm = run_vm(lowered, batch, options);
  REQUIRE(want.errors.empty());
  REQUIRE(got.errors.empty());
  CHECK(compare_results(lowered, got, vm).empty());
  for (size_t k = 0; k < want.outputs.size(); ++k) {
    CAPTURE(k);
    CHECK(bits_float(got.outputs[k]) == doctest::Approx(bits_float(want.outputs[k])).epsilon(1e-4));
  }
}

TEST_CASE("vectorize_loops: random programs give the same bits with the pass and without") {
  int loops = 0, vectorised = 0;
  for (uint64_t seed = 1; seed <= 120; ++seed) {
    const std::string source = generate_program(seed);
    const Compiled loop = compile(source, false), array = compile(source, true);
    for (const LoopVerdict& v : array.loops) {
      ++loops;
      vectorised += v.vectorised;
    }
    const int entry = loop.program.find_function("main");
    Batch batch;
    batch.lanes = 8;
    batch.inputs.resize(2);
    for (uint32_t lane = 0; lane < batch.lanes; ++lane) {
      batch.inputs[0].push_back(static_cast<uint32_t>(lane_hash(seed, lane)));
      batch.inputs[1].push_back(static_cast<uint32_t>(lane_hash(seed + 1000, lane) % 201) - 100);
    }
    RunOptions options;
    options.seed = seed;
    // The step counts differ (a converted loop is one step); values, draws and faults do not.
    const RunResult want = without_steps(run_interp(loop.program, entry, batch, options));
    const RunResult got = without_steps(run_interp(array.program, entry, batch, options));
    const LoweredProgram lowered = lower(array.program, entry);
    const RunResult vm = without_steps(run_vm(lowered, batch, options));
    CHECK_MESSAGE(compare_results(lowered, want, got).empty(), compare_results(lowered, want, got),
                  "\n", source);
    CHECK_MESSAGE(compare_results(lowered, want, vm).empty(), "vm, seed ", seed);
  }
  MESSAGE(vectorised, " of ", loops, " generated loops vectorised");
  CHECK(loops > 100);
}

}  // namespace
}  // namespace ab::testing
