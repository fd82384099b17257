// Stan's transformed data (issue 45): a uniform with an initializer is computed once from the
// bound data on the interpreter, so the interpreter and the vm read the same bits as they would
// computing the expression inline; a cycle, a random draw, a fault or a NaN computing it is one
// error naming the declaration.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "autobatch/numerics.h"
#include "autobatch/transformed_data.h"

namespace ab {
namespace {

// `scaled` is declared before the `logx` it reads and calls a user function: computed in
// dependency order.
const char* kDerived = R"(const N: int = 5;
uniform x: float[N];
uniform scaled: float[N] = logx / total(x);
uniform logx: float[N] = log(x * 2.0);
fn total(v: float[N]) -> float { var s = 0.0; for i in 0..N { s += v[i]; } return s; }
fn main(a: float) -> float {
    var s = 0.0;
    for i in 0..N { s += a * scaled[i] + logx[i]; }
    return s;
}
)";

const char* kInline = R"(const N: int = 5;
uniform x: float[N];
fn total(v: float[N]) -> float { var s = 0.0; for i in 0..N { s += v[i]; } return s; }
fn main(a: float) -> float {
    let logx = log(x * 2.0);
    let scaled = logx / total(x);
    var s = 0.0;
    for i in 0..N { s += a * scaled[i] + logx[i]; }
    return s;
}
)";

std::vector<uint32_t> floats(const std::vector<float>& values) {
  std::vector<uint32_t> out;
  for (float v : values)
    out.push_back(float_bits(v));
  return out;
}

std::shared_ptr<const Module> module_of(const std::string& source) {
  CompileOptions options;
  options.file = "f.ab";
  auto m = Module::compile(source, options);
  REQUIRE_MESSAGE(m.ok(), m.error());
  return *m;
}

// The one error compiling `source`, as "line:col: message".
std::string compile_error(const std::string& source) {
  CompileOptions options;
  options.file = "f.ab";
  std::vector<SourceDiagnostic> diags;
  auto m = Module::compile(source, options, &diags);
  REQUIRE_FALSE(m.ok());
  REQUIRE(diags.size() == 1);
  return std::to_string(diags[0].line) + ":" + std::to_string(diags[0].col) + ": " +
         diags[0].message;
}

TEST_CASE("transformed data: interp and vm read the inline expression's bits") {
  const auto derived = module_of(kDerived), inline_form = module_of(kInline);
  const std::vector<TransformedUniform> t = transformed_uniforms(*derived);
  REQUIRE(t.size() == 2);
  CHECK(t[0].name == "logx");  // before `scaled`, which reads it
  CHECK(t[1].name == "scaled");
  CHECK((t[1].line == 3 && t[1].col == 9));

  Batch b;
  b.lanes = 6;
  b.inputs = {floats({0.5f, -1.25f, 3.0f, 1e-3f, 7.5f, -2.0f})};
  const std::vector<uint32_t> x = floats({0.3f, 1.7f, 2.9f, 0.05f, 11.0f});
  b.uniforms = {x, {}, {}};  // the transformed data come unbound
  REQUIRE(compute_transformed_uniforms(*derived, b.uniforms).ok());
  CHECK(b.uniforms[2].size() == 5);
  // Computing again gives the same words (a client may call it on data it already completed).
  UniformData again = b.uniforms;
  REQUIRE(compute_transformed_uniforms(*derived, again).ok());
  CHECK(again == b.uniforms);

  Batch inline_batch = b;
  inline_batch.uniforms = {x};
  for (CpuBackend backend : {CpuBackend::Interpreter, CpuBackend::Vm}) {
    auto ours = derived->run_cpu(b, {}, backend);
    auto theirs = inline_form->run_cpu(inline_batch, {}, backend);
    REQUIRE(ours.ok());
    REQUIRE(theirs.ok());
    CHECK(ours->errors.empty());
    CHECK(ours->outputs == theirs->outputs);
  }
}

TEST_CASE("transformed data: a cycle, a draw, a wrong type or a reserved name is a compile error") {
  CHECK(compile_error("uniform a: float = b + 1.0;\nuniform b: float = a * 2.0;\n"
                      "fn main() -> float { return a; }\n") ==
        "1:9: transformed data 'a' depends on itself: a -> b -> a");
  CHECK(compile_error("uniform a: float = f();\nfn f() -> float { return a + 1.0; }\n"
                      "fn main() -> float { return a; }\n") ==
        "1:9: transformed data 'a' depends on itself: a -> a");
  CHECK(compile_error("uniform a: float = 1.0 + uniform();\nfn main() -> float { return a; }\n") ==
        "1:26: uniform 'a' is transformed data, computed once from the data: it cannot draw a "
        "random number");
  CHECK(compile_error("uniform a: float[2] = 1.0;\nfn main() -> float { return a[0]; }\n") ==
        "1:23: uniform 'a' is 'float[2]', but its initializer is 'float'");
  CHECK(compile_error("fn ab_transformed_data_q() -> float { return 1.0; }\n"
                      "fn main() -> float { return 1.0; }\n") ==
        "1:4: 'ab_transformed_data_q': names beginning 'ab_transformed_data_' are the "
        "transformed data's");
}

TEST_CASE("transformed data: a fault or a NaN computing it is one error naming the declaration") {
  const auto m = module_of(
      "uniform x: float[3];\nuniform pick: float = x[int(x[0])];\nuniform lx: float[3] = "
      "log(x);\nfn main() -> float { return pick + lx[0]; }\n");
  UniformData out_of_range{floats({7.0f, 1.0f, 2.0f}), {}, {}};
  Status s = compute_transformed_uniforms(*m, out_of_range);
  REQUIRE_FALSE(s.ok());
  CHECK(s.error().find("f.ab:2:9: transformed data 'pick' cannot be computed from the data: "
                       "index_out_of_range") == 0);
  UniformData negative{floats({1.0f, -1.0f, 2.0f}), {}, {}};
  s = compute_transformed_uniforms(*m, negative);
  REQUIRE_FALSE(s.ok());
  CHECK(s.error() ==
        "f.ab:3:9: transformed data 'lx' is NaN at element 1 (C order): the data are outside its "
        "expression's domain (log of a negative number, 0/0, ...)");
  CHECK(transformed_uniform_refusal(*m, transformed_uniforms(*m).at(0)) ==
        "'pick' is computed from the data (transformed data at f.ab:2:9); it cannot be bound");
}

}  // namespace
}  // namespace ab
