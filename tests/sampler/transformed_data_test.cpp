// Stan's transformed data in a model (issue 45): `uniform lx: float[N] = log(x);` is computed once
// when the sampler takes the data, and the chains then draw exactly what they draw with the same
// expression computed inside the density at every gradient (the float ops are the same).
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "autobatch/numerics.h"
#include "autobatch/sampler.h"

namespace ab {
namespace {

const char* kTransformed = R"(const N: int = 40;
uniform x: float[N];
uniform y: float[N];
uniform lx: float[N] = log(x) - 1.5;
struct Params { a: float, b: float, sigma: float<lower=0> }
fn log_density(p: Params) -> float { return normal_lpdf(y | p.a + p.b * lx, p.sigma); }
)";

const char* kInline = R"(const N: int = 40;
uniform x: float[N];
uniform y: float[N];
struct Params { a: float, b: float, sigma: float<lower=0> }
fn log_density(p: Params) -> float { return normal_lpdf(y | p.a + p.b * (log(x) - 1.5), p.sigma); }
)";

TEST_CASE("transformed data: the sampler's draws equal the inline form's, bit for bit") {
  std::mt19937 rng(45);
  std::uniform_real_distribution<float> size(0.5f, 20.0f);
  std::normal_distribution<float> noise(0.0f, 0.3f);
  std::vector<uint32_t> x, y;
  for (int n = 0; n < 40; ++n) {
    const float xn = size(rng);
    x.push_back(float_bits(xn));
    y.push_back(float_bits(0.4f + 1.2f * (std::log(xn) - 1.5f) + noise(rng)));
  }
  auto transformed = sample::Model::compile(kTransformed, "transformed.ab");
  auto inline_form = sample::Model::compile(kInline, "inline.ab");
  REQUIRE_MESSAGE(transformed.ok(), transformed.error());
  REQUIRE_MESSAGE(inline_form.ok(), inline_form.error());
  REQUIRE((*transformed)->data().size() == 3);
  sample::Options o;
  o.chains = 4;
  o.warmup = 100;
  o.draws = 100;
  o.seed = 45;
  for (CpuBackend backend : {CpuBackend::Vm, CpuBackend::Interpreter}) {
    // lx comes unbound: the sampler computes it.
    auto ours = sample::run(**transformed, {x, y, {}}, o, sample::cpu_runner(backend));
    auto theirs = sample::run(**inline_form, {x, y}, o, sample::cpu_runner(backend));
    REQUIRE_MESSAGE(ours.ok(), ours.error());
    REQUIRE_MESSAGE(theirs.ok(), theirs.error());
    CHECK(ours->faults.empty());
    REQUIRE(ours->draws_data.size() == theirs->draws_data.size());
    CHECK(std::memcmp(ours->draws_data.data(), theirs->draws_data.data(),
                      ours->draws_data.size() * sizeof(float)) == 0);
    CHECK(ours->stats.lp == theirs->stats.lp);
  }
}

}  // namespace
}  // namespace ab
