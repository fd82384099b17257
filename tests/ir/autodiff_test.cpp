// Reverse-mode automatic differentiation (passes/differentiate.h, docs/language.md
// "Gradients"): derived gradients equal central finite differences of float64 references at
// random points, on interp and vm alike (bit for bit); value_and_grad's value is f's own;
// what cannot be differentiated is a compile error at its line.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <cmath>
#include <random>

#include "cpu/interp.h"
#include "cpu/vm.h"
#include "ir/verify.h"
#include "lang/frontend.h"
#include "passes/derivative_rules.h"
#include "passes/lower.h"
#include "support/autodiff_cases.h"
#include "support/program_gen.h"
#include "support/result_compare.h"

namespace ab::testing {
namespace {

struct Compiled {
  Program program;
  std::string errors;
};

Compiled compile(const std::string& source) {
  Diagnostics diags("test.ab", source);
  auto program = compile_source(source, "test.ab", diags);
  Compiled c;
  c.errors = diags.format();
  if (program) c.program = std::move(*program);
  return c;
}

Batch points(int k, int lanes, double lo, double hi, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(static_cast<float>(lo), static_cast<float>(hi));
  Batch batch;
  batch.lanes = static_cast<uint32_t>(lanes);
  batch.inputs.resize(1);
  for (int i = 0; i < lanes * k; ++i)
    batch.inputs[0].push_back(float_bits(d(rng)));
  return batch;
}

RunResult run_entry(const Program& p, const std::string& entry, const Batch& batch,
                    bool check_vm = true) {
  const int e = p.find_function(entry);
  REQUIRE(e >= 0);
  const RunResult r = run_interp(p, e, batch, {});
  REQUIRE(r.errors.empty());
  if (check_vm) {
    const LoweredProgram lowered = lower(p, e);
    const Status verified = verify(lowered);
    CHECK_MESSAGE(verified.ok(), verified.error());
    const RunResult v = run_vm(lowered, batch, {});
    const std::string difference = describe_difference(r, v);
    CHECK_MESSAGE(difference.empty(), entry, ": vm differs from interp:\n", difference);
  }
  return r;
}

// The derived function `name` keeps nothing on tapes: no push or pop at all.
void check_no_tape(const Program& p, const std::string& name) {
  const int derived = p.find_function(name);
  REQUIRE(derived >= 0);
  for (const Block& b : p.functions[derived].blocks)
    for (const Op& op : b.ops)
      CHECK((op.code != OpCode::Push && op.code != OpCode::Pop));
}

// Binds the batch's next uniform to n values uniform in [-1, 1), and returns them.
std::vector<float> bind_uniform(Batch& batch, size_t n, std::mt19937& rng) {
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  std::vector<float> values(n);
  batch.uniforms.emplace_back();
  for (float& v : values)
    batch.uniforms.back().push_back(float_bits(v = d(rng)));
  return values;
}

// The central difference of `f` at x along coordinate i, or NaN where f is not smooth there
// (a branch or a trip count changes inside the step: two step sizes disagree).
double central_difference(const std::function<double(const std::vector<double>&)>& f,
                          std::vector<double> x, int i) {
  auto diff = [&](double h) {
    const double x0 = x[i];
    x[i] = x0 + h;
    const double up = f(x);
    x[i] = x0 - h;
    const double down = f(x);
    x[i] = x0;
    return (up - down) / (2 * h);
  };
  const double h = 1e-5 * std::max(1.0, std::fabs(x[i]));
  const double a = diff(h), b = diff(h / 2);
  if (std::fabs(a - b) > 1e-6 * std::max(1.0, std::fabs(a))) return NAN;
  return b;
}

// An op's row (ir/ops.cpp) says whether it has a derivative rule; the rules
// (passes/derivative_rules.cpp) are keyed by op, and the two agree for every op.
TEST_CASE("autodiff: an op has a derivative rule exactly when its row says so") {
  for (size_t i = 0; i < static_cast<size_t>(OpCode::Count_); ++i) {
    const auto code = static_cast<OpCode>(i);
    CAPTURE(op_info(code).name);
    CHECK(has_derivative_rule(code) == (op_info(code).derivative == Derivative::Rule));
  }
}

TEST_CASE("autodiff: gradients equal central differences of float64 references") {
  for (const AutodiffCase& c : autodiff_cases()) {
    CAPTURE(c.name);
    const Compiled compiled = compile(autodiff_program(c));
    REQUIRE_MESSAGE(compiled.errors.empty(), compiled.errors);
    CHECK(verify(compiled.program).ok());
    const int lanes = 24;
    const Batch batch = points(c.k, lanes, c.lo, c.hi, 42);
    const RunResult grad = run_entry(compiled.program, "main", batch);
    const RunResult value = run_entry(compiled.program, "value", batch);
    const RunResult both = run_entry(compiled.program, "both", batch);
    int checked = 0;
    for (int lane = 0; lane < lanes; ++lane) {
      std::vector<double> x(c.k);
      for (int i = 0; i < c.k; ++i)
        x[i] = bits_float(batch.inputs[0][lane * c.k + i]);
      CAPTURE(lane);
      // value_and_grad: f's own value, bit for bit, and grad's gradient.
      CHECK(both.outputs[lane * (c.k + 1)] == value.outputs[lane]);
      const double want_value = c.reference(x);
      CHECK(std::fabs(bits_float(value.outputs[lane]) - want_value) <=
            1e-4 * std::max(1.0, std::fabs(want_value)));
      for (int i = 0; i < c.k; ++i) {
        CAPTURE(i);
        CHECK(both.outputs[lane * (c.k + 1) + 1 + i] == grad.outputs[lane * c.k + i]);
        const double want = central_difference(c.reference, x, i);
        if (std::isnan(want)) continue;
        ++checked;
        const double got = bits_float(grad.outputs[lane * c.k + i]);
        CHECK_MESSAGE(std::fabs(got - want) <= 2e-3 * std::max(1.0, std::fabs(want)), "derived ",
                      got, ", finite difference ", want);
      }
    }
    CHECK(checked > lanes * c.k * 3 / 4);
  }
}

TEST_CASE("autodiff: the other parameters are held fixed, and constants carry no derivative") {
  const Compiled c = compile(R"(
uniform w: float[3];
fn f(x: float[2], k: int, y: float) -> float {
    return x[0] * y + w[k] * x[1] * x[1] + float(x[0] > 0.0) + floor(y * x[1]);
}
fn main(x: float[2], y: float) -> float[2] { return grad(f, x, 2, y); }
)");
  REQUIRE_MESSAGE(c.errors.empty(), c.errors);
  Batch batch;
  batch.lanes = 2;
  batch.inputs = {{float_bits(0.5f), float_bits(1.5f), float_bits(-1.0f), float_bits(2.0f)},
                  {float_bits(3.0f), float_bits(-0.25f)}};
  batch.uniforms = {{float_bits(9.0f), float_bits(9.0f), float_bits(2.0f)}};
  const RunResult r = run_entry(c.program, "main", batch);
  // d/dx0 = y, d/dx1 = 2 w[2] x1
  CHECK(bits_float(r.outputs[0]) == 3.0f);
  CHECK(bits_float(r.outputs[1]) == 6.0f);
  CHECK(bits_float(r.outputs[2]) == -0.25f);
  CHECK(bits_float(r.outputs[3]) == 8.0f);
}

TEST_CASE("autodiff: a long loop keeps its values on tapes; a tape past --stack-depth faults") {
  const Compiled c = compile(R"(
fn f(x: float[1]) -> float {
    var a = x[0];
    for i in 0..3000 { a = sin(a) + 0.5 * a; }
    return a;
}
fn main(x: float[1]) -> float[1] { return grad(f, x); }
)");
  REQUIRE_MESSAGE(c.errors.empty(), c.errors);
  Batch batch = points(1, 3, -1.0, 1.0, 5);
  RunOptions deep;
  deep.stack_depth = 4000;
  const int e = c.program.find_function("main");
  const RunResult r = run_interp(c.program, e, batch, deep);
  REQUIRE(r.errors.empty());
  const RunResult v = run_vm(lower(c.program, e), batch, deep);
  CHECK(describe_difference(r, v).empty());
  for (uint32_t lane = 0; lane < 3; ++lane) {
    double a = bits_float(batch.inputs[0][lane]), d = 1.0;
    for (int i = 0; i < 3000; ++i) {
      d *= std::cos(a) + 0.5;
      a = std::sin(a) + 0.5 * a;
    }
    CHECK(std::fabs(bits_float(r.outputs[lane]) - d) <= 1e-3 * std::max(1.0, std::fabs(d)));
  }
  // A sum over iterations needs no tape at all (its loop is preaccumulated): 5000 iterations
  // at the default stack depth.
  const Compiled sum = compile(R"(
fn f(x: float[1]) -> float {
    var s = 0.0;
    for i in 0..5000 { s += sin(x[0] * float(i % 7)); }
    return s;
}
fn main(x: float[1]) -> float[1] { return grad(f, x); }
)");
  REQUIRE_MESSAGE(sum.errors.empty(), sum.errors);
  const RunResult summed = run_entry(sum.program, "main", batch);
  for (uint32_t lane = 0; lane < 3; ++lane) {
    const double x = bits_float(batch.inputs[0][lane]);
    double d = 0.0;
    for (int i = 0; i < 5000; ++i)
      d += std::cos(x * (i % 7)) * (i % 7);
    CHECK(std::fabs(bits_float(summed.outputs[lane]) - d) <= 1e-3 * std::max(1.0, std::fabs(d)));
  }
  const RunResult shallow = run_interp(c.program, e, batch, {});  // stack depth 1024
  REQUIRE(shallow.errors.size() == 3);
  CHECK(shallow.errors[0].code == Fault::StackOverflow);
  const RunResult shallow_vm = run_vm(lower(c.program, e), batch, {});
  REQUIRE(shallow_vm.errors.size() == 3);
  CHECK(shallow_vm.errors[0].code == Fault::StackOverflow);
}

// The shape of a log likelihood over data: a sum over blocks of rows, each a sum over rows
// (samples/models/logistic_regression_loop_ad.ab). Both loops are preaccumulated, so the derived
// function keeps nothing on tapes (no push or pop at all), and its gradient is the sum of the
// rows' gradients.
TEST_CASE("autodiff: sums over data rows in nested loops need no tape") {
  const Compiled c = compile(R"(
uniform X: float[40][3];
uniform y: float[40];
fn f(q: float[3]) -> float {
    var value = -0.5 * dot(q, q) / 25.0;
    for b in 0..4 {
        var block_value = 0.0;
        for i in b * 10..b * 10 + 10 {
            let z = dot(X[i], q);
            block_value += y[i] * z - log1p_exp(z);
        }
        value += block_value;
    }
    return value;
}
fn main(q: float[3]) -> float[3] { return grad(f, q); }
)");
  REQUIRE_MESSAGE(c.errors.empty(), c.errors);
  check_no_tape(c.program, "f.value_and_grad");
  std::mt19937 rng(3);
  Batch batch = points(3, 5, -1.0, 1.0, 8);
  const std::vector<float> X = bind_uniform(batch, 120, rng);
  std::vector<float> y = bind_uniform(batch, 40, rng);
  for (size_t i = 0; i < y.size(); ++i)  // outcomes: 1 or 0
    batch.uniforms[1][i] = float_bits(y[i] = y[i] > 0.0f ? 1.0f : 0.0f);
  const RunResult r = run_entry(c.program, "main", batch);
  for (uint32_t lane = 0; lane < 5; ++lane) {
    double q[3], g[3];
    for (int j = 0; j < 3; ++j) {
      q[j] = bits_float(batch.inputs[0][lane * 3 + j]);
      g[j] = -q[j] / 25.0;
    }
    for (int i = 0; i < 40; ++i) {
      const double z = X[i * 3] * q[0] + X[i * 3 + 1] * q[1] + X[i * 3 + 2] * q[2];
      for (int j = 0; j < 3; ++j)
        g[j] += (y[i] - 1.0 / (1.0 + std::exp(-z))) * X[i * 3 + j];
    }
    for (int j = 0; j < 3; ++j)
      CHECK(std::fabs(bits_float(r.outputs[lane * 3 + j]) - g[j]) <=
            1e-4 * std::max(1.0, std::fabs(g[j])));
  }
}

// Issue 40: a likelihood's sum that reads the parameter at the loop index (q[i], p.eta[j]), one
// that calls a user function per row, and an AR(K)'s inner sum mu += beta[k] * y[t - k] kept one
// tape entry per iteration, so ordinary models faulted at the sampler's stack depth. They are
// sums: preaccumulated, no push or pop, and they run at a stack depth of 4.
TEST_CASE("autodiff: sums that index the parameter or call a function per row need no tape") {
  const Compiled c = compile(R"(
uniform y: float[60];
fn row_lpdf(x: float, mu: float, sigma: float) -> float {
    let z = (x - mu) / sigma;
    return -0.5 * z * z - log(sigma);
}
fn f(q: float[60]) -> float {
    var lp = 0.0;
    for i in 0..60 { lp += -0.5 * (y[i] - q[i]) * (y[i] - q[i]); }
    for i in 0..60 { lp += row_lpdf(y[i], q[0], exp(q[1])); }
    for t in 3..60 {
        var mu = q[2];
        for k in 0..3 { mu += q[k + 3] * y[t - k - 1]; }
        lp += -0.5 * (y[t] - mu) * (y[t] - mu);
    }
    return lp;
}
fn main(q: float[60]) -> float[60] { return grad(f, q); }
)");
  REQUIRE_MESSAGE(c.errors.empty(), c.errors);
  check_no_tape(c.program, "f.value_and_grad");
  std::mt19937 rng(4);
  Batch batch = points(60, 3, -0.5, 0.5, 12);
  const std::vector<float> y = bind_uniform(batch, 60, rng);
  RunOptions shallow;
  shallow.stack_depth = 4;
  const int e = c.program.find_function("main");
  const RunResult r = run_interp(c.program, e, batch, shallow);
  REQUIRE(r.errors.empty());
  const RunResult v = run_vm(lower(c.program, e), batch, shallow);
  CHECK(describe_difference(r, v).empty());
  for (uint32_t lane = 0; lane < 3; ++lane) {
    std::vector<double> q(60), g(60, 0.0);
    for (int j = 0; j < 60; ++j)
      q[j] = bits_float(batch.inputs[0][lane * 60 + j]);
    const double sigma = std::exp(q[1]);
    for (int i = 0; i < 60; ++i) {
      g[i] += y[i] - q[i];
      const double z = (y[i] - q[0]) / sigma;
      g[0] += z / sigma;
      g[1] += z * z - 1.0;  // d/dq1 of -z^2/2 - q1
    }
    for (int t = 3; t < 60; ++t) {
      double mu = q[2];
      for (int k = 0; k < 3; ++k)
        mu += q[k + 3] * y[t - k - 1];
      g[2] += y[t] - mu;
      for (int k = 0; k < 3; ++k)
        g[k + 3] += (y[t] - mu) * y[t - k - 1];
    }
    for (int j = 0; j < 60; ++j) {
      CAPTURE(j);
      CHECK(std::fabs(bits_float(r.outputs[lane * 60 + j]) - g[j]) <=
            1e-4 * std::max(1.0, std::fabs(g[j])));
    }
  }
}

// Issue 40: log_sum_exp's weights were e^(a - r) with r = log_sum_exp(a, b), which at a = -1e7
// has lost a's low bits: the gradient of log_sum_exp(x, x - 1) (exactly 1) came out 1.37.
TEST_CASE("autodiff: log_sum_exp's gradient is exact at large magnitudes, scalar and array") {
  const Compiled c = compile(R"(
fn f(x: float[2]) -> float { return log_sum_exp(x[0], x[1]); }
fn g(x: float[2]) -> float { return sum(log_sum_exp(x, x - 1.0)); }
fn h(x: float[2]) -> float { return log_sum_exp(x); }
fn main(x: float[2]) -> float[6] {
    let a = grad(f, x);
    let b = grad(g, x);
    let c = grad(h, x);
    return [a[0], a[1], b[0], b[1], c[0], c[1]];
}
)");
  REQUIRE_MESSAGE(c.errors.empty(), c.errors);
  const std::vector<float> at = {-1e5f, -1e7f, -2e7f, 1e7f, 0.0f, -3e38f};
  Batch batch;
  batch.lanes = static_cast<uint32_t>(at.size());
  batch.inputs.resize(1);
  for (float x : at)  // x and x - 1, exact below 2^24
    for (float v : {x, x == -2e7f || x == -3e38f ? x : x - 1.0f})
      batch.inputs[0].push_back(float_bits(v));
  const RunResult r = run_entry(c.program, "main", batch);
  for (size_t lane = 0; lane < at.size(); ++lane) {
    CAPTURE(at[lane]);
    float out[6];
    for (int k = 0; k < 6; ++k)
      out[k] = bits_float(r.outputs[lane * 6 + k]);
    const double a =
        batch.inputs[0][lane * 2] == batch.inputs[0][lane * 2 + 1] ? 0.5 : 0.7310585786;
    CHECK(std::fabs(out[0] - a) <= 1e-6);
    CHECK(std::fabs(out[1] - (1.0 - a)) <= 1e-6);
    // d/dx of log_sum_exp(x, x - 1) elementwise: exactly 1 (the two weights' sum).
    CHECK(std::fabs(out[2] - 1.0) <= 1e-6);
    CHECK(std::fabs(out[3] - 1.0) <= 1e-6);
    // The one-array reduction's softmax: the same weights as the two-argument form.
    CHECK(std::fabs(out[4] - a) <= 1e-6);
    CHECK(std::fabs(out[5] - (1.0 - a)) <= 1e-6);
  }
}

TEST_CASE("autodiff: what cannot be differentiated is an error at its line") {
  struct Bad {
    const char* source;
    const char* message;
  };
  const Bad bad[] = {
      {"fn f(x: float) -> float {\n    return x * uniform();\n}\nfn main(x: float) -> float { "
       "return grad(f, x); }\n",
       "test.ab:2:16: error: cannot differentiate 'f': a random draw in 'f'"},
      {"fn g(x: float) -> float {\n    emit(x);\n    return x;\n}\nfn f(x: float) -> float { "
       "return g(x); }\nfn main(x: float) -> float { return grad(f, x); }\n",
       "test.ab:2:5: error: cannot differentiate 'f': an emit in 'g'"},
      {"fn f(x: float) -> float {\n    return trigamma(x);\n}\nfn main(x: float) -> float { "
       "return grad(f, x); }\n",
       "test.ab:2:12: error: cannot differentiate 'f': 'trigamma' has no derivative"},
      {"fn f(x: float) -> int { return 1; }\nfn main(x: float) -> float { return grad(f, x); }\n",
       "test.ab:2:42: error: 'grad' differentiates a function returning 'float'; 'f' returns "
       "'int'"},
      {"fn f(n: int, x: float) -> float { return x; }\nfn main(x: float) -> float { return "
       "grad(f, 1, x); }\n",
       "must be 'float' or a float array; 'f' takes 'int'"},
      {"fn main(x: float) -> float { return grad(x, x); }\n",
       "the first argument of 'grad' must name a function"},
      {"fn f(x: float) -> float { return x; }\nfn main(x: float) -> float { return "
       "value_and_grad(f); }\n",
       "'value_and_grad' takes a function and its arguments, found 1 argument"},
      {"fn grad(x: float) -> float { return x; }\nfn main(x: float) -> float { return x; }\n",
       "test.ab:1:4: error: cannot redefine builtin function 'grad'"},
      {"fn g(x: float) -> float { return x * x; }\nfn f(x: float) -> float {\n    return "
       "grad(g, x);\n}\nfn main(x: float) -> float { return grad(f, x); }\n",
       "test.ab:3:12: error: cannot differentiate 'f': 'f' takes a gradient, and second "
       "derivatives are not supported"},
  };
  for (const Bad& b : bad) {
    CAPTURE(b.source);
    const Compiled c = compile(b.source);
    CHECK_MESSAGE(c.errors.find(b.message) != std::string::npos, c.errors);
  }
}

TEST_CASE(
    "autodiff: random float programs: grad agrees with central differences in the interpreter") {
  // Generated float functions with loops, branches and matrix products of random shapes
  // (support/program_gen.h): the derived gradient must be what central differences in float32
  // give, up to their noise, at points where the function is smooth, on interp and vm alike.
  int checked = 0, with_products = 0, with_long_products = 0;
  for (uint32_t seed = 1; seed <= 60; ++seed) {
    const std::string text = random_float_function(seed);
    with_products +=
        text.find(" @ ") != std::string::npos || text.find("transpose(") != std::string::npos;
    with_long_products += text.find("; 6") != std::string::npos;  // a length of 64 to 69
    const std::string source = text +
                               "\nfn main(x: float[3]) -> float[3] { return grad(f, x); }\n"
                               "fn value(x: float[3]) -> float { return f(x); }\n";
    CAPTURE(seed);
    CAPTURE(source);
    const Compiled c = compile(source);
    REQUIRE_MESSAGE(c.errors.empty(), c.errors);
    const int lanes = 8;
    const Batch batch = points(3, lanes, -1.5, 1.5, seed);
    const RunResult g = run_entry(c.program, "main", batch);
    // f at x +- h e_i, 2 * 3 * 2 lanes per point: two step sizes to see a kink.
    const float hs[2] = {4e-3f, 2e-3f};
    Batch probe;
    probe.inputs.resize(1);
    for (int lane = 0; lane < lanes; ++lane)
      for (int i = 0; i < 3; ++i)
        for (float h : hs)
          for (float sign : {1.0f, -1.0f}) {
            for (int j = 0; j < 3; ++j) {
              float xj = bits_float(batch.inputs[0][lane * 3 + j]);
              if (j == i) xj += sign * h;
              probe.inputs[0].push_back(float_bits(xj));
            }
            ++probe.lanes;
          }
    const RunResult f = run_entry(c.program, "value", probe, false);
    size_t at = 0;
    for (int lane = 0; lane < lanes; ++lane)
      for (int i = 0; i < 3; ++i) {
        double d[2];
        for (int k = 0; k < 2; ++k) {
          const double up = bits_float(f.outputs[at++]), down = bits_float(f.outputs[at++]);
          d[k] = (up - down) / (2.0 * hs[k]);
        }
        const double got = bits_float(g.outputs[lane * 3 + i]);
        if (!std::isfinite(d[0]) || !std::isfinite(d[1]) || !std::isfinite(got)) continue;
        const double scale = std::max(1.0, std::fabs(d[1]));
        if (std::fabs(d[0] - d[1]) > 0.02 * scale) continue;  // not smooth here
        ++checked;
        CHECK_MESSAGE(std::fabs(got - d[1]) <= 0.03 * scale, "lane ", lane, " x", i, ": derived ",
                      got, ", central difference ", d[1]);
      }
  }
  CHECK(checked > 600);
  // Random products (support/program_gen.h) among them, some summing past one 64-term block.
  CHECK(with_products >= 20);
  CHECK(with_long_products >= 5);
}

}  // namespace
}  // namespace ab::testing
