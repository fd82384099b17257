// A density's domain error is a rejected proposal, as in Stan (docs/nuts.md, "A density's domain
// error"): the sampler compiles its models with CompileOptions::reject_domain_errors, so a
// `normal_lpdf: sigma must be > 0` inside the density or its gradient is a NaN density, which is
// a divergence in a trajectory, an infinitely bad step in the step-size search and a rejected
// initial point; a refused chain's message names the error. Faults that are not the density's
// (an index out of range, a step budget) still end the chain.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "autobatch/sampler.h"

namespace ab {
namespace {

// Half of a standard normal, x >= 0, written so that x < 0 is a domain error:
// exponential_lpdf(x | 1) is -x for x >= 0 and faults below, and `+ p.x` cancels it.
const char* const kHalfNormal =
    "struct P { x: float }\n"
    "fn log_density(p: P) -> float {\n"
    "    return normal_lpdf(p.x | 0.0, 1.0) + exponential_lpdf(p.x | 1.0) + p.x;\n"
    "}\n";

std::shared_ptr<const sample::Model> compile(const char* source, const char* file) {
  auto model = sample::Model::compile(source, file);
  REQUIRE_MESSAGE(model.ok(), model.error());
  return *model;
}

// Options of a small run; the seed is the default one unless given.
sample::Options sized(uint32_t chains, uint32_t warmup, uint32_t draws,
                      decltype(sample::Options::seed) seed = sample::Options{}.seed) {
  sample::Options o;
  o.chains = chains;
  o.warmup = warmup;
  o.draws = draws;
  o.seed = seed;
  return o;
}

uint32_t divergences(const sample::Fit& fit) {
  uint32_t n = 0;
  for (uint8_t d : fit.stats.divergent)
    n += d;
  return n;
}

TEST_CASE("sampler rejection: a density that faults on part of its support samples it") {
  const auto model = compile(kHalfNormal, "half_normal.ab");
  const sample::Options o = sized(4, 500, 1000, 7);
  auto fit = sample::run(*model, {}, o, sample::cpu_runner(CpuBackend::Vm));
  REQUIRE_MESSAGE(fit.ok(), fit.error());
  CHECK(fit->faults.empty());  // every chain faulted at its first step out of x >= 0 before
  CHECK(fit->refused.empty());
  REQUIRE(fit->received == 4 * 1000);
  for (float x : fit->draws_data)
    CHECK(x >= 0.0f);
  // Trajectories that leave the support stop there, counted as divergences (about half of
  // them here: a trajectory in one dimension swings through most of the support).
  CHECK(divergences(*fit) > 0);
  CHECK(divergences(*fit) < 4 * 1000 * 3 / 4);
  // The half normal's mean sqrt(2/pi) and sd sqrt(1 - 2/pi).
  const sample::ParameterSummary& x = fit->summary.at(0).summary;
  const double mean = std::sqrt(2.0 / M_PI), sd = std::sqrt(1.0 - 2.0 / M_PI);
  CHECK(std::abs(x.mean - mean) < 5 * x.mcse_mean);
  CHECK(std::abs(x.sd - sd) < 0.1 * sd);
}

TEST_CASE("sampler rejection: interp and vm reject alike, bit for bit") {
  const auto model = compile(kHalfNormal, "half_normal.ab");
  const sample::Options o = sized(3, 60, 40, 2);
  auto vm = sample::run(*model, {}, o, sample::cpu_runner(CpuBackend::Vm));
  auto interp = sample::run(*model, {}, o, sample::cpu_runner(CpuBackend::Interpreter));
  REQUIRE_MESSAGE(vm.ok(), vm.error());
  REQUIRE_MESSAGE(interp.ok(), interp.error());
  CHECK(vm->faults.empty());
  REQUIRE(interp->draws_data.size() == vm->draws_data.size());
  CHECK(std::memcmp(interp->draws_data.data(), vm->draws_data.data(),
                    vm->draws_data.size() * sizeof(float)) == 0);
  CHECK(interp->stats.divergent == vm->stats.divergent);
}

// x in [-2, 2] at random: exponential_lpdf(x - 1.5 | 1) rejects seven points in eight, so most
// chains try several initial points; each finds one, as Stan's retries do.
TEST_CASE("sampler rejection: a rejected initial point is retried") {
  const auto model = compile(
      "struct P { x: float }\n"
      "fn log_density(p: P) -> float { return exponential_lpdf(p.x - 1.5 | 1.0); }\n",
      "shifted.ab");
  const sample::Options o = sized(8, 100, 100, 11);
  auto fit = sample::run(*model, {}, o, sample::cpu_runner(CpuBackend::Vm));
  REQUIRE_MESSAGE(fit.ok(), fit.error());
  CHECK(fit->faults.empty());
  CHECK(fit->refused.empty());
  CHECK(fit->received == 8 * 100);
  for (float x : fit->draws_data)
    CHECK(x >= 1.5f);
}

TEST_CASE("sampler rejection: a chain with no point in the support names the domain error") {
  const auto model = compile(
      "struct P { x: float }\n"
      "fn log_density(p: P) -> float {\n"
      "    return normal_lpdf(p.x | 0.0, p.x - 10.0);\n"
      "}\n",
      "nowhere.ab");
  const sample::Options o = sized(2, 10, 10);
  auto fit = sample::run(*model, {}, o, sample::cpu_runner(CpuBackend::Vm));
  REQUIRE_MESSAGE(fit.ok(), fit.error());
  REQUIRE(fit->refused.size() == 2);
  CHECK(fit->refused[0].init_tries == 100);
  CHECK(fit->refused[0].fault ==
        "assert_failed: normal_lpdf: sigma must be > 0 in log_density at nowhere.ab:3");
  REQUIRE(fit->chain_messages.size() == 2);
  const std::string& message = fit->chain_messages[0];
  CAPTURE(message);
  CHECK(message.find("at 100 random initial points") != std::string::npos);
  CHECK(message.find("rejected there by assert_failed: normal_lpdf: sigma must be > 0 in "
                     "log_density at nowhere.ab:3") != std::string::npos);
}

// An index out of range is the model's bug, not a rejected proposal: it still ends the chain.
TEST_CASE("sampler rejection: a fault that is not a domain error still ends the chain") {
  const auto model = compile(
      "const D: int = 2;\n"
      "fn log_density(q: float[D]) -> float {\n"
      "    let i = int(q[0] > 1.0) * 5;\n"
      "    return -0.5 * dot(q, q) + q[i] * 0.0;\n"
      "}\n",
      "index.ab");
  const sample::Options o = sized(2, 100, 100);
  auto fit = sample::run(*model, {}, o, sample::cpu_runner(CpuBackend::Vm));
  REQUIRE_MESSAGE(fit.ok(), fit.error());
  REQUIRE_FALSE(fit->faults.empty());
  CHECK(fit->faults[0].code == Fault::IndexOutOfRange);
}

}  // namespace
}  // namespace ab
