// `autobatch sample` on models written as Stan users write them (docs/nuts.md): a struct of
// named, bounded parameters sampled on the unconstrained scale and reported on the model's, its
// initial values by name, initialisation retried and refused as Stan does, and Stan's warnings
// after a fit that earns them. Each case runs the built binary.
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "autobatch/npy.h"
#include "support/sample_runner.h"
#include "support/temp_dir.h"

namespace {

namespace fs = std::filesystem;
using ab::testing::read_bytes;
using ab::testing::run_sample;
using ab::testing::TempDir;
using nlohmann::json;

const std::string kConstrained =
    (fs::path(AB_SOURCE_DIR) / "tests" / "data" / "models" / "constrained.ab").string();

std::vector<double> npy_values(const fs::path& path) {
  auto array = ab::read_npy(path.string());
  REQUIRE(array.ok());
  std::vector<double> out;
  for (uint64_t k = 0; k < array->elements(); ++k)
    out.push_back(std::get<double>(array->at(k)));
  return out;
}

std::vector<std::string> warning_kinds(const json& summary) {
  std::vector<std::string> out;
  for (const json& w : summary["warnings"])
    out.push_back(w["kind"]);
  return out;
}

TEST_CASE("sample parameters: a bounded struct model recovers its known marginals by name") {
  const TempDir dir("ab_params_recover");
  const auto o = run_sample(dir, kConstrained +
                                     " --backend vm --chains 8 --draws 1000 "
                                     "--warmup 400 --seed 11 --out fit");
  REQUIRE_MESSAGE(o.exit_code == 0, o.err);
  const json summary = json::parse(read_bytes(dir.path / "fit" / "summary.json"));
  // name, mean, sd: Beta(3, 5), 1 + Exp(1), 4 - Exp(2), N(0, 1) twice.
  const std::vector<std::tuple<std::string, double, double>> truth = {
      {"p", 3.0 / 8, std::sqrt(15.0 / (64 * 9))},
      {"r", 2.0, 1.0},
      {"s", 3.5, 0.5},
      {"z[0]", 0.0, 1.0},
      {"z[1]", 0.0, 1.0}};
  REQUIRE(summary["parameters"].size() == truth.size());
  for (size_t j = 0; j < truth.size(); ++j) {
    const auto& [name, mean, sd] = truth[j];
    const json& p = summary["parameters"][j];
    CAPTURE(name);
    CHECK(p["name"] == name);
    CHECK(std::abs(double(p["mean"]) - mean) < 5 * double(p["mcse_mean"]) + 0.02 * sd);
    CHECK(std::abs(double(p["sd"]) - sd) < 0.1 * sd);
  }
  CHECK(o.out.find("z[1]") != std::string::npos);  // the table names them too
  // The draws are on the model's scale: every p inside (0, 1), r above 1, s below 4.
  const std::vector<double> draws = npy_values(dir.path / "fit" / "draws.npy");
  REQUIRE(draws.size() == 8 * 1000 * 5);
  bool inside = true;
  for (size_t k = 0; k < draws.size(); k += 5)
    inside = inside && draws[k] > 0 && draws[k] < 1 && draws[k + 1] > 1 && draws[k + 2] < 4;
  CHECK(inside);
  // lp__ is the unconstrained log density, the Jacobian included: recomputed from the draws.
  const std::vector<double> lp = npy_values(dir.path / "fit" / "lp.npy");
  REQUIRE(lp.size() == 8000);
  double worst = 0;
  for (size_t i = 0; i < lp.size(); ++i) {
    const double* x = &draws[i * 5];
    const double density = 2 * std::log(x[0]) + 4 * std::log(1 - x[0]) - (x[1] - 1) -
                           2 * (4 - x[2]) - 0.5 * (x[3] * x[3] + x[4] * x[4]);
    const double jacobian =
        std::log(x[0]) + std::log(1 - x[0]) + std::log(x[1] - 1) + std::log(4 - x[2]);
    worst = std::max(worst, std::abs(lp[i] - (density + jacobian)) / (1 + std::abs(lp[i])));
  }
  // The draws are float32: log(r - 1) near r = 1 alone loses ~1e-3 of its value.
  CHECK(worst < 2e-3);
  CHECK(warning_kinds(summary).empty());
}

TEST_CASE("sample parameters: interp and vm give the same bounded draws bit for bit") {
  const TempDir dir("ab_params_same");
  const std::string args = kConstrained + " --chains 3 --draws 40 --warmup 60 --seed 2";
  REQUIRE(run_sample(dir, args + " --backend interp --out a").exit_code == 0);
  REQUIRE(run_sample(dir, args + " --backend vm --out b").exit_code == 0);
  for (const char* file : {"draws.npy", "lp.npy", "energy.npy", "accept_stat.npy"})
    CHECK(read_bytes(dir.path / "a" / file) == read_bytes(dir.path / "b" / file));
}

// Two chains whose first draw stays near the --init point that follows: a tiny step, two leaves
// and no warm-up.
const std::string kNearInit =
    " --backend vm --chains 2 --draws 5 --warmup 0 --no-step-search --step-size 0.001 "
    "--max-depth 1 --out fit --init ";

TEST_CASE("sample parameters: --init by name as CmdStan's JSON, checked against the bounds") {
  const TempDir dir("ab_params_init");
  const std::string run = kConstrained + kNearInit;
  // One object for every chain.
  dir.write("init.json", R"({"p": 0.25, "r": 3, "s": 1.5, "z": [0.5, -0.5]})");
  auto o = run_sample(dir, run + "init.json");
  REQUIRE_MESSAGE(o.exit_code == 0, o.err);
  const std::vector<double> draws = npy_values(dir.path / "fit" / "draws.npy");
  CHECK(draws[0] == doctest::Approx(0.25).epsilon(0.05));
  CHECK(draws[1] == doctest::Approx(3.0).epsilon(0.05));
  CHECK(draws[2] == doctest::Approx(1.5).epsilon(0.05));
  CHECK(draws[5 * 5 + 3] == doctest::Approx(0.5).epsilon(0.1));  // chain 1's first z[0]
  // One object per chain.
  dir.write("two.json", R"([{"p": 0.25, "r": 3, "s": 1.5, "z": [0.5, -0.5]},
                            {"p": 0.75, "r": 2, "s": 3.5, "z": [0, 0]}])");
  o = run_sample(dir, run + "two.json");
  REQUIRE_MESSAGE(o.exit_code == 0, o.err);
  CHECK(npy_values(dir.path / "fit" / "draws.npy")[5 * 5] == doctest::Approx(0.75).epsilon(0.05));
  // Mistakes, each named.
  const std::vector<std::pair<std::string, std::string>> bad = {
      {R"({"p": 1.5, "r": 3, "s": 1.5, "z": [0, 0]})", "chain 0: p = 1.5 is not inside (0, 1)"},
      {R"({"p": 0.5, "r": 1, "s": 1.5, "z": [0, 0]})", "r = 1 is not above its lower bound 1"},
      {R"({"p": 0.5, "r": 3, "s": 1.5, "z": [0, 0], "w": 1})",
       "unknown parameter 'w' (the "
       "model's: p, r, s, z)"},
      {R"({"p": 0.5, "r": 3, "s": 1.5})", "chain 0 has no 'z'"},
      {R"({"p": 0.5, "r": 3, "s": 1.5, "z": [0]})", "'z' must be 2 numbers"},
      {R"([{"p": 0.5, "r": 3, "s": 1.5, "z": [0, 0]}])", "a list of 2 such objects"},
      {R"({"p": 0.5,)", "not valid JSON"}};
  for (const auto& [text, message] : bad) {
    CAPTURE(text);
    dir.write("bad.json", text);
    o = run_sample(dir, run + "bad.json");
    CHECK(o.exit_code == 2);
    CHECK(o.err.find(message) != std::string::npos);
  }
}

// Stan's rule for a bound that depends on another parameter (GARCH's beta1 < 1 - alpha1): the
// init is in the constrained space, each value checked against its bound computed from the
// earlier fields' values, then unconstrained in declaration order.
TEST_CASE("sample parameters: --init places a parameter whose bound depends on another") {
  const TempDir dir("ab_params_init_dependent");
  std::mt19937 rng(45);
  std::normal_distribution<double> normal(0.0, 1.0);
  std::string y;
  double sigma = 1.0, last = 0.1 + normal(rng);
  y += fmt::format("{}\n", last);
  for (int t = 1; t < 200; ++t) {
    const double e = last - 0.1;
    sigma = std::sqrt(0.2 + 0.3 * e * e + 0.5 * sigma * sigma);
    last = 0.1 + sigma * normal(rng);
    y += fmt::format("{}\n", last);
  }
  dir.write("y.csv", y);
  const std::string garch =
      (fs::path(AB_SOURCE_DIR) / "tests" / "data" / "models" / "garch.ab").string();
  const std::string run = garch + " -u y=@y.csv" + kNearInit;
  dir.write("init.json", R"({"mu": 0.1, "alpha0": 0.2, "alpha1": 0.3, "beta1": 0.6})");
  auto o = run_sample(dir, run + "init.json");
  REQUIRE_MESSAGE(o.exit_code == 0, o.err);
  const std::vector<double> draws = npy_values(dir.path / "fit" / "draws.npy");
  CHECK(draws[1] == doctest::Approx(0.2).epsilon(0.05));  // alpha0
  CHECK(draws[2] == doctest::Approx(0.3).epsilon(0.05));  // alpha1
  CHECK(draws[3] == doctest::Approx(0.6).epsilon(0.05));  // beta1, below 1 - alpha1 = 0.7
  dir.write("off.json", R"({"mu": 0.1, "alpha0": 0.2, "alpha1": 0.3, "beta1": 0.8})");
  o = run_sample(dir, run + "off.json");
  CHECK(o.exit_code == 2);
  CHECK(o.err.find("chain 0: beta1 = 0.8 is not inside (0, 0.7) (its bound computed from the "
                   "data and the fields before it)") != std::string::npos);
}

TEST_CASE("sample parameters: contract mistakes point at the declaration") {
  const TempDir dir("ab_params_contract");
  dir.write("int_field.ab",
            "// parameters\n"
            "struct Params { mu: float, n: int }\n"
            "fn log_density(p: Params) -> float { return -p.mu * p.mu; }\n");
  auto o = run_sample(dir, "int_field.ab --backend vm --out fit");
  CHECK(o.exit_code == 2);
  CHECK(o.err.find("int_field.ab:2:8: field 'n: int' of 'Params': a struct of parameters holds "
                   "floats and arrays of floats") != std::string::npos);
  dir.write("hand.ab",
            "struct Params { mu: float }\n"
            "struct LogDensity { value: float, grad: float[1] }\n"
            "fn log_density(p: Params) -> LogDensity {\n"
            "  return LogDensity { value: 0.0, grad: [0.0] };\n}\n");
  o = run_sample(dir, "hand.ab --backend vm --out fit");
  CHECK(o.exit_code == 2);
  CHECK(o.err.find("hand.ab:3:1: 'log_density' does not fit the model contract (over a struct "
                   "of parameters it returns float") != std::string::npos);
  dir.write("local_bound.ab",
            "fn log_density(q: float[1]) -> float {\n"
            "  let x: float<lower=0> = q[0];\n  return -x * x;\n}\n");
  o = run_sample(dir, "local_bound.ab --backend vm --out fit");
  CHECK(o.exit_code == 2);
  CHECK(o.err.find("local_bound.ab:2:15: error: bounds") != std::string::npos);
}

TEST_CASE("sample parameters: initialisation retries random points, then refuses naming the data") {
  const TempDir dir("ab_params_initialise");
  // Finite only for q > 1.5: one random point in eight; 100 tries find one.
  dir.write("narrow.ab",
            "fn log_density(q: float[1]) -> float {\n"
            "  if q[0] < 1.5 { return -1.0 / 0.0; }\n"
            "  return -(q[0] - 3.0) * (q[0] - 3.0);\n}\n");
  auto o = run_sample(dir, "narrow.ab --backend vm --chains 8 --draws 50 --warmup 100 --out fit");
  REQUIRE_MESSAGE(o.exit_code == 0, o.err);
  const json summary = json::parse(read_bytes(dir.path / "fit" / "summary.json"));
  CHECK(summary["refused_chains"].empty());
  CHECK(summary["summary_chains"].size() == 8);
  // A NaN in the data the density reads: no point works; each chain is refused with the reason
  // and the data value named, exit 1, and nothing is written.
  dir.write("data.ab",
            "uniform y: float[3];\n"
            "fn log_density(q: float[2]) -> float {\n"
            "  return -0.5 * dot(q, q) - (y[0] + y[1] + y[2]) * q[0];\n}\n");
  dir.write("y.csv", "1,nan,2\n");
  o = run_sample(dir, "data.ab -u y=@y.csv --backend vm --chains 2 --draws 10 --out bad");
  CHECK(o.exit_code == 1);
  CHECK(o.err.find("chain 1 refused: the log density or its gradient is not finite at 100 random "
                   "initial points") != std::string::npos);
  CHECK(o.err.find("the data hold y[1] = nan") != std::string::npos);
  CHECK_FALSE(fs::exists(dir.path / "bad" / "draws.npy"));
  // Decimal data lose digits in float32: said once, with the largest relative change; integers
  // are exact and say nothing.
  dir.write("decimal.csv", "0.1,0.2,0.3\n");
  o = run_sample(dir, "data.ab -u y=@decimal.csv --backend vm --chains 2 --draws 10 --out dec");
  REQUIRE_MESSAGE(o.exit_code == 0, o.err);
  CHECK(o.err.find("note: uniform 'y' was rounded from float64 to float32 (largest relative "
                   "change 4e-08, at element 2)") != std::string::npos);
  dir.write("whole.csv", "1,2,3\n");
  o = run_sample(dir, "data.ab -u y=@whole.csv --backend vm --chains 2 --draws 10 --out whole");
  REQUIRE_MESSAGE(o.exit_code == 0, o.err);
  CHECK(o.err.find("rounded") == std::string::npos);
}

TEST_CASE("sample parameters: Stan's warnings appear on fits that earn them and not otherwise") {
  const TempDir dir("ab_params_warnings");
  // Neal's funnel, centred: divergences and a low E-BFMI.
  dir.write("funnel.ab",
            "struct Params { v: float, x: float[4] }\n"
            "fn log_density(p: Params) -> float {\n"
            "  var lp = -p.v * p.v / 18.0;\n"
            "  for i in 0..4 { lp += -0.5 * p.x[i] * p.x[i] * exp(-p.v) - 0.5 * p.v; }\n"
            "  return lp;\n}\n");
  auto o = run_sample(dir, "funnel.ab --backend vm --chains 4 --seed 1 --out funnel");
  REQUIRE_MESSAGE(o.exit_code == 0, o.err);
  json summary = json::parse(read_bytes(dir.path / "funnel" / "summary.json"));
  std::vector<std::string> kinds = warning_kinds(summary);
  CHECK(std::count(kinds.begin(), kinds.end(), "divergences") == 1);
  CHECK(std::count(kinds.begin(), kinds.end(), "e_bfmi") >= 1);
  CHECK(o.err.find("warning: ") != std::string::npos);
  CHECK(o.err.find("transitions after warm-up were divergent") != std::string::npos);
  // Two separated modes, each chain started in one: the chains disagree (R-hat, ESS).
  dir.write("modes.ab",
            "fn log_density(q: float[1]) -> float {\n"
            "  let a = q[0] - 5.0;\n  let b = q[0] + 5.0;\n"
            "  return log(exp(-50.0 * a * a) + exp(-50.0 * b * b));\n}\n");
  dir.write("modes.json", R"([{"q": [5]}, {"q": [-5]}])");
  o = run_sample(dir, "modes.ab --backend vm --chains 2 --draws 300 --init modes.json --out modes");
  REQUIRE_MESSAGE(o.exit_code == 0, o.err);
  kinds = warning_kinds(json::parse(read_bytes(dir.path / "modes" / "summary.json")));
  CHECK(std::count(kinds.begin(), kinds.end(), "rhat") == 1);
  CHECK(std::count(kinds.begin(), kinds.end(), "ess_bulk") == 1);
  // Trees cut at depth 1.
  o = run_sample(dir, kConstrained + " --backend vm --chains 2 --draws 50 --max-depth 1 --out d");
  REQUIRE_MESSAGE(o.exit_code == 0, o.err);
  kinds = warning_kinds(json::parse(read_bytes(dir.path / "d" / "summary.json")));
  CHECK(std::count(kinds.begin(), kinds.end(), "max_tree_depth") == 1);
  CHECK(o.err.find("hit the maximum tree depth 1") != std::string::npos);
  // A clean fit (the recovery case's model, enough draws): none.
  o = run_sample(dir, kConstrained + " --backend vm --chains 4 --draws 1000 --seed 3 --out clean");
  REQUIRE_MESSAGE(o.exit_code == 0, o.err);
  CHECK(warning_kinds(json::parse(read_bytes(dir.path / "clean" / "summary.json"))).empty());
  CHECK(o.err.find("warning") == std::string::npos);
}

}  // namespace
