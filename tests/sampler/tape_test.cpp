// Issue 40: a user never sizes a tape. Models whose log density loops over data rows sample
// with the default options: sums (also reading the parameter at the loop index, or calling a
// user function per row) need no tape, and a loop that is not a sum (GARCH's volatility
// recursion) gets a stack depth the sampler measures from the gradient before the chains start.
// A tape that outgrows a depth given by hand names the loop and the option. And bounds whose
// width overflows float sample (issue 40, item 11). GARCH's bound that depends on another
// parameter samples its hand reparameterisation's posterior (issue 45).
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "autobatch/numerics.h"
#include "autobatch/sampler.h"

namespace ab {
namespace {

namespace fs = std::filesystem;

std::string model_path(const std::string& name) {
  return (fs::path(AB_SOURCE_DIR) / "tests" / "data" / "models" / (name + ".ab")).string();
}

std::shared_ptr<const sample::Model> load(const std::string& name) {
  auto model = sample::Model::load(model_path(name));
  REQUIRE_MESSAGE(model.ok(), model.error());
  return *model;
}

std::vector<uint32_t> words(const std::vector<double>& values) {
  std::vector<uint32_t> out;
  for (double v : values)
    out.push_back(float_bits(static_cast<float>(v)));
  return out;
}

// Data of each model's shape, simulated with a fixed seed.
std::vector<std::vector<uint32_t>> data_for(const std::string& name) {
  std::mt19937 rng(40);
  std::normal_distribution<double> normal(0.0, 1.0);
  std::vector<double> y;
  if (name == "schools20") {
    std::vector<double> sigma;
    for (int j = 0; j < 20; ++j) {
      y.push_back(5 + 12 * normal(rng));
      sigma.push_back(8 + 10 * std::uniform_real_distribution<double>(0, 1)(rng));
    }
    return {words(y), words(sigma)};
  }
  if (name == "gauss_mix") {
    std::bernoulli_distribution first(0.3);
    for (int n = 0; n < 1000; ++n)
      y.push_back((first(rng) ? -2.0 : 2.0) + normal(rng));
  } else if (name == "ark") {
    const double beta[5] = {0.5, -0.2, 0.1, 0.05, -0.05};
    for (int t = 0; t < 200; ++t) {
      double mu = 0.2;
      for (int k = 0; k < 5 && t >= 5; ++k)
        mu += beta[k] * y[t - k - 1];
      y.push_back(mu + 0.5 * normal(rng));
    }
  } else if (name == "garch") {
    double sigma = 1.0;
    y.push_back(0.1 + normal(rng));
    for (int t = 1; t < 200; ++t) {
      const double e = y.back() - 0.1;
      sigma = std::sqrt(0.2 + 0.3 * e * e + 0.5 * sigma * sigma);
      y.push_back(0.1 + sigma * normal(rng));
    }
  }
  return {words(y)};
}

sample::Options run_of(uint32_t chains, uint32_t warmup, uint32_t draws, uint64_t seed) {
  sample::Options o;  // the defaults, stack depth included
  o.chains = chains;
  o.warmup = warmup;
  o.draws = draws;
  o.seed = seed;
  return o;
}

sample::Options short_run() {
  return run_of(2, 60, 40, 3);
}  // fewer draws for the test's time

// The depth the gradient needs at random points: the frames of the density and its calls, and a
// loop that is not a sum's tape entries.
uint32_t measured(const sample::Model& model, const std::string& name) {
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> u(-2.0f, 2.0f);
  std::vector<float> points(4 * model.unconstrained_dimension());
  for (float& x : points)
    x = u(rng);
  auto depth = model.gradient_stack_depth(data_for(name), points);
  REQUIRE_MESSAGE(depth.ok(), depth.error());
  return *depth;
}

// The interpreter, the oracle, gives the vm's draws at the same depth, bit for bit.
void check_same_draws(const sample::Model& model, const std::string& name, const sample::Options& o,
                      const sample::Fit& vm) {
  auto interp = sample::run(model, data_for(name), o, sample::cpu_runner(CpuBackend::Interpreter));
  REQUIRE_MESSAGE(interp.ok(), interp.error());
  CHECK(interp->stack_depth == vm.stack_depth);
  REQUIRE(interp->draws_data.size() == vm.draws_data.size());
  CHECK(std::memcmp(interp->draws_data.data(), vm.draws_data.data(),
                    vm.draws_data.size() * sizeof(float)) == 0);
  CHECK(interp->stats.lp == vm.stats.lp);
}

TEST_CASE("sampler tapes: sums over rows need no tape and sample with the default options") {
  // Each sum reads the parameter at the loop index (p.eta[j], p.beta[k]) or calls a user
  // function per row; before issue 40 they kept a tape entry per iteration (20, 1000 and 975
  // entries) and every chain faulted at the default depth, 18. The mixture's interp draws
  // equal the vm's too (checked by hand: 23 s here, too long for a test).
  for (const char* name : {"schools20", "gauss_mix", "ark"}) {
    CAPTURE(name);
    const auto model = load(name);
    CHECK(measured(*model, name) <= 4);
    const sample::Options o = short_run();
    auto vm = sample::run(*model, data_for(name), o, sample::cpu_runner(CpuBackend::Vm));
    REQUIRE_MESSAGE(vm.ok(), vm.error());
    CHECK(vm->faults.empty());
    CHECK(vm->received == o.chains * o.draws);
    CHECK(vm->stack_depth == sample::recursion_depth(o));  // nothing more than the tree's
    if (std::string(name) == "gauss_mix") continue;        // its 1,000 rows on interp: 20 s here
    check_same_draws(*model, name, o, *vm);
  }
}

// Stan's densities inside a sum (issue 45): their argument checks (asserts) in the loop's body
// keep it a sum, preaccumulated, with no tape.
TEST_CASE("sampler tapes: a sum of normal_lpdf terms needs no tape") {
  const auto model = load("ark_lpdf");
  CHECK(measured(*model, "ark") <= 4);
}

TEST_CASE("sampler tapes: a recursion over rows gets the depth its gradient measured") {
  const auto model = load("garch");
  const uint32_t need = measured(*model, "garch");
  // The volatility recursion's 199 iterations each keep an entry (sigma's old value).
  CHECK(need >= 199);
  CHECK(need <= 210);
  const sample::Options o = short_run();
  auto vm = sample::run(*model, data_for("garch"), o, sample::cpu_runner(CpuBackend::Vm));
  REQUIRE_MESSAGE(vm.ok(), vm.error());
  CHECK(vm->faults.empty());
  CHECK(vm->received == o.chains * o.draws);
  CHECK(vm->stack_depth == 2 * need + 8);
  check_same_draws(*model, "garch", o, *vm);
}

TEST_CASE("sampler tapes: a tape past a depth given by hand names its loop and the option") {
  const auto model = load("garch");
  sample::Options o = short_run();
  o.stack_depth = 40;
  auto fit = sample::run(*model, data_for("garch"), o, sample::cpu_runner(CpuBackend::Vm));
  REQUIRE_MESSAGE(fit.ok(), fit.error());
  REQUIRE(fit->faults.size() == 2);
  CHECK(fit->faults[0].code == Fault::StackOverflow);
  CHECK(fit->faults[0].line == 17);  // garch.ab's `for t in 1..T`, not a statement in it
  REQUIRE(fit->chain_messages.size() == 2);
  const std::string& message = fit->chain_messages[0];
  CAPTURE(message);
  CHECK(message.find(model_path("garch") + ":17") != std::string::npos);
  CHECK(message.find("--stack-depth") != std::string::npos);
  CHECK(message.find("stack depth given, 40") != std::string::npos);
}

// A log density that never returns: the run's step budget bounds the depth probe too, so the
// chains fault at once with step_budget (the probe ran 10^8 blocks per evaluation before).
TEST_CASE("sampler tapes: the depth probe keeps to the run's step budget") {
  auto model = sample::Model::compile(
      "const D: int = 1;\n"
      "struct LogDensity { value: float, grad: float[D] }\n"
      "fn log_density(q: float[D]) -> LogDensity {\n"
      "  var x = q[0];\n"
      "  while x == x { x = x + 1.0; }\n"
      "  return LogDensity { value: x, grad: q };\n}\n",
      "hang.ab");
  REQUIRE_MESSAGE(model.ok(), model.error());
  const std::vector<float> points = {0.5f, -1.0f};
  auto depth = (*model)->gradient_stack_depth({}, points, 1, 2000);
  REQUIRE_MESSAGE(depth.ok(), depth.error());
  CHECK(*depth > 0);
  sample::Options o = short_run();
  o.max_steps = 2000;
  auto fit = sample::run(**model, {}, o, sample::cpu_runner(CpuBackend::Vm));
  REQUIRE_MESSAGE(fit.ok(), fit.error());
  REQUIRE(fit->faults.size() == o.chains);
  for (const LaneError& fault : fit->faults)
    CHECK(fault.code == Fault::StepBudget);
}

// Memory for a long tape's stacks that runs out on a backend: the message says what to change
// in the sampler's terms (chains, --stack-depth) and the depth the run had measured.
TEST_CASE("sampler tapes: stacks that do not fit say to use fewer chains or a lower depth") {
  const auto model = load("garch");
  const sample::Runner out_of_memory = [](const std::shared_ptr<const Module>&, const Batch&,
                                          const RunOptions& options) -> Expected<RunResult> {
    return Error{fmt::format(
        "the batch needs more than the device's largest memory heap at stack depth {}: reduce the "
        "batch size or the stack depth",
        options.stack_depth)};
  };
  auto fit = sample::run(*model, data_for("garch"), short_run(), out_of_memory);
  REQUIRE_FALSE(fit.ok());
  CHECK(fit.error().find("at stack depth 406: reduce the batch size or the stack depth (here: "
                         "fewer chains, or a --stack-depth (Options::stack_depth) below this "
                         "run's 406, measured from the model's gradient's tape)") !=
        std::string::npos);
}

// Bounds 4e38 apart: U - L is inf in float, so x = L + (U - L) inv_logit(u) and log(U - L) were
// inf and every chain was refused as a density that is not finite.
TEST_CASE("sampler bounds: an interval wider than the largest float samples") {
  auto model = sample::Model::compile(
      "struct P { x: float<lower=-2e38, upper=2e38>, z: float }\n"
      "fn log_density(p: P) -> float { return -0.5 * p.z * p.z; }\n",
      "wide.ab");
  REQUIRE_MESSAGE(model.ok(), model.error());
  const sample::Options o = run_of(4, 300, 500, 5);
  auto fit = sample::run(**model, {}, o, sample::cpu_runner(CpuBackend::Vm));
  REQUIRE_MESSAGE(fit.ok(), fit.error());
  CHECK(fit->refused.empty());
  CHECK(fit->faults.empty());
  REQUIRE(fit->received == 4 * 500);
  bool inside = true;
  for (size_t k = 0; k < fit->draws_data.size(); k += 2)
    inside = inside && std::isfinite(fit->draws_data[k]) && fit->draws_data[k] > -2e38f &&
             fit->draws_data[k] < 2e38f;
  CHECK(inside);
  for (float lp : fit->stats.lp)
    CHECK(std::isfinite(lp));
  // x is uniform on (-2e38, 2e38): mean 0, sd 4e38 / sqrt(12).
  const sample::ParameterSummary& x = fit->summary.at(0).summary;
  CHECK(std::abs(x.mean) < 4 * x.mcse_mean + 0.02e38);
  CHECK(std::abs(x.sd - 4e38 / std::sqrt(12.0)) < 0.1 * 4e38 / std::sqrt(12.0));
}

// GARCH as written before bounds could depend on parameters: beta1 = (1 - alpha1) t with t on
// (0, 1), the map's log-Jacobian log(1 - alpha1) added by hand, beta1 reported as a transformed
// parameter. The same posterior over (mu, alpha0, alpha1, beta1) as garch.ab's Stan bound.
const char* kGarchByHand = R"(uniform y: float[200];
const T: int = 200;
struct Params { mu: float, alpha0: float<lower=0>, alpha1: float<lower=0, upper=1>,
                t: float<lower=0, upper=1> }
struct Derived { beta1: float }
fn transformed(p: Params) -> Derived { return Derived { beta1: (1.0 - p.alpha1) * p.t }; }
fn log_density(p: Params) -> float {
    let beta1 = (1.0 - p.alpha1) * p.t;
    var lp = -0.5 * p.mu * p.mu / 100.0 + log(1.0 - p.alpha1);
    var sigma = 1.0;
    for t in 1..T {
        let e = y[t - 1] - p.mu;
        sigma = sqrt(p.alpha0 + p.alpha1 * e * e + beta1 * sigma * sigma);
        let z = (y[t] - p.mu) / sigma;
        lp += -0.5 * z * z - log(sigma);
    }
    return lp;
}
)";

const sample::ParameterSummary& summary_of(const sample::Fit& fit, const std::string& name) {
  for (const sample::NamedSummary& s : fit.summary)
    if (s.name == name) return s.summary;
  FAIL("no parameter " << name);
  return fit.summary.front().summary;
}

TEST_CASE("dependent bounds: GARCH as Stan writes it samples its reparameterisation's posterior") {
  auto by_hand = sample::Model::compile(kGarchByHand, "garch_by_hand.ab");
  REQUIRE_MESSAGE(by_hand.ok(), by_hand.error());
  sample::Options o = run_of(8, 150, 150, 45);
  auto stan = sample::run(*load("garch"), data_for("garch"), o, sample::cpu_runner(CpuBackend::Vm));
  o.seed = 46;
  auto hand = sample::run(**by_hand, data_for("garch"), o, sample::cpu_runner(CpuBackend::Vm));
  REQUIRE_MESSAGE(stan.ok(), stan.error());
  REQUIRE_MESSAGE(hand.ok(), hand.error());
  REQUIRE(stan->faults.empty());
  REQUIRE(hand->faults.empty());
  for (const char* name : {"mu", "alpha0", "alpha1", "beta1"}) {
    CAPTURE(name);
    const sample::ParameterSummary &a = summary_of(*stan, name), &b = summary_of(*hand, name);
    const double z = (a.mean - b.mean) / std::hypot(a.mcse_mean, b.mcse_mean);
    CAPTURE(a.mean);
    CAPTURE(b.mean);
    CHECK(std::abs(z) < 5);
    CHECK(a.sd / b.sd == doctest::Approx(1.0).epsilon(0.2));
  }
}

}  // namespace
}  // namespace ab
