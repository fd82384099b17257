// `autobatch sample` on Stan's constrained types, transformed parameters and generated
// quantities (docs/nuts.md; tests/data/models/constrained_types.ab): the draws recover known
// marginals in the constrained space, under Stan's names; the quantities' columns follow the
// parameters' in every output, the same bits on interp and vm; --init takes the constrained
// values and refuses a point off its set. Each case runs the built binary.
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <sstream>
#include <string>
#include <tuple>
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

const std::string kTypes =
    (fs::path(AB_SOURCE_DIR) / "tests" / "data" / "models" / "constrained_types.ab").string();

// The columns: s[3], o[2], po[2], then transformed gap, then generated y_rep, heads, z[2].
constexpr size_t kColumns = 12;

std::vector<double> npy_values(const fs::path& path) {
  auto array = ab::read_npy(path.string());
  REQUIRE(array.ok());
  std::vector<double> out;
  for (uint64_t k = 0; k < array->elements(); ++k)
    out.push_back(std::get<double>(array->at(k)));
  return out;
}

TEST_CASE("sample types: a simplex, ordered vectors and quantities recover their closed forms") {
  const TempDir dir("ab_types_recover");
  const auto o = run_sample(dir, kTypes +
                                     " --backend vm --chains 8 --draws 1000 --warmup 400 "
                                     "--seed 3 --out fit");
  REQUIRE_MESSAGE(o.exit_code == 0, o.err);
  const json summary = json::parse(read_bytes(dir.path / "fit" / "summary.json"));
  const double pi = std::acos(-1.0), var_o = 1 - 1 / pi;
  // name, mean, sd: Dirichlet(2, 3, 5); order statistics of two N(0, 1) and of two Exp(1);
  // gap = |X1 - X2| (half-normal, scale √2); y_rep ~ N(o[1], 1); heads ~ Bernoulli(s[2]);
  // z[0] = 2 po[0] ~ Exp(1); z[1] ~ N(0, 1).
  const auto dirichlet_sd = [](double a) { return std::sqrt(a * (10 - a) / (100.0 * 11)); };
  const std::vector<std::tuple<std::string, double, double>> truth = {
      {"s[0]", 0.2, dirichlet_sd(2)},
      {"s[1]", 0.3, dirichlet_sd(3)},
      {"s[2]", 0.5, dirichlet_sd(5)},
      {"o[0]", -1 / std::sqrt(pi), std::sqrt(var_o)},
      {"o[1]", 1 / std::sqrt(pi), std::sqrt(var_o)},
      {"po[0]", 0.5, 0.5},
      {"po[1]", 1.5, std::sqrt(1.25)},
      {"gap", 2 / std::sqrt(pi), std::sqrt(2 * (1 - 2 / pi))},
      {"y_rep", 1 / std::sqrt(pi), std::sqrt(1 + var_o)},
      {"heads", 0.5, 0.5},
      {"z[0]", 1.0, 1.0},
      {"z[1]", 0.0, 1.0}};
  REQUIRE(summary["parameters"].size() == kColumns);
  for (size_t j = 0; j < truth.size(); ++j) {
    const auto& [name, mean, sd] = truth[j];
    const json& p = summary["parameters"][j];
    CAPTURE(name);
    CHECK(p["name"] == name);
    CHECK(std::abs(double(p["mean"]) - mean) < 5 * double(p["mcse_mean"]) + 0.02 * sd);
    CHECK(std::abs(double(p["sd"]) - sd) < 0.1 * sd);
  }
  CHECK(summary["warnings"].empty());
  // Every draw in its set: the simplex sums to 1, the ordered vectors increase, po > 0; the
  // transformed parameter is the parameters' function; heads is 0 or 1.
  const std::vector<double> draws = npy_values(dir.path / "fit" / "draws.npy");
  REQUIRE(draws.size() == 8 * 1000 * kColumns);
  double worst_sum = 0;
  bool in_set = true;
  for (size_t k = 0; k < draws.size(); k += kColumns) {
    const double* x = &draws[k];
    worst_sum = std::max(worst_sum, std::abs(x[0] + x[1] + x[2] - 1));
    in_set = in_set && x[0] > 0 && x[1] > 0 && x[2] > 0 && x[3] < x[4] && 0 < x[5] && x[5] < x[6] &&
             x[7] == static_cast<float>(x[4] - x[3]) && (x[9] == 0 || x[9] == 1) &&
             x[10] == 2 * x[5];
  }
  CHECK(worst_sum < 1e-6);
  CHECK(in_set);
}

// cholesky_factor_corr and lkj_corr_cholesky_lpdf: each correlation's marginal, 2 Beta(a, a) - 1
// with a = eta - 1 + K/2, has mean 0 and sd 1 / sqrt(2a + 1); every draw a factor (rows of unit
// length, +0 above the diagonal).
TEST_CASE("sample types: cholesky_factor_corr under LKJ recovers the correlations' marginals") {
  const TempDir dir("ab_types_lkj");
  const std::string model =
      (fs::path(AB_SOURCE_DIR) / "tests" / "data" / "models" / "lkj_corr.ab").string();
  const auto o = run_sample(dir, model +
                                     " --backend vm --chains 8 --draws 1000 --warmup 400 "
                                     "--seed 5 --out fit");
  REQUIRE_MESSAGE(o.exit_code == 0, o.err);
  const json summary = json::parse(read_bytes(dir.path / "fit" / "summary.json"));
  REQUIRE(summary["parameters"].size() == 4 + 9 + 1);
  // The factors' fixed elements (L[0][0] = 1, zeros above the diagonal) never change by design:
  // no "draws never change" warning for them.
  for (const json& w : summary["warnings"])
    CHECK_MESSAGE(w["kind"] != "undiagnosed", std::string(w["message"]));
  CHECK(o.err.find("never change") == std::string::npos);
  const double sd2 = 1 / std::sqrt(2 * 3.0 + 1), sd3 = 1 / std::sqrt(2 * 2.0 + 1);
  for (const auto& [index, name, sd] :
       {std::tuple{2, "L2[1][0]", sd2}, std::tuple{7, "L3[1][0]", sd3},
        std::tuple{10, "L3[2][0]", sd3}, std::tuple{13, "omega21", sd3}}) {
    const json& p = summary["parameters"][index];
    CAPTURE(name);
    CHECK(p["name"] == name);
    CHECK(std::abs(double(p["mean"])) < 5 * double(p["mcse_mean"]) + 0.02 * sd);
    CHECK(std::abs(double(p["sd"]) - sd) < 0.1 * sd);
  }
  const std::vector<double> draws = npy_values(dir.path / "fit" / "draws.npy");
  REQUIRE(draws.size() == 8 * 1000 * 14);
  double worst = 0;
  for (size_t k = 0; k < draws.size(); k += 14) {
    const double* x = &draws[k];
    worst = std::max({worst, std::abs(x[2] * x[2] + x[3] * x[3] - 1),
                      std::abs(x[10] * x[10] + x[11] * x[11] + x[12] * x[12] - 1), std::abs(x[1]),
                      std::abs(x[5]) + std::abs(x[6]) + std::abs(x[9])});
  }
  CHECK(worst < 1e-6);
}

TEST_CASE("sample types: interp and vm give the same draws and quantities bit for bit") {
  const TempDir dir("ab_types_same");
  const std::string args = kTypes + " --chains 3 --draws 30 --warmup 40 --seed 2";
  REQUIRE(run_sample(dir, args + " --backend interp --out a").exit_code == 0);
  REQUIRE(run_sample(dir, args + " --backend vm --out b").exit_code == 0);
  for (const char* file : {"draws.npy", "lp.npy", "energy.npy", "n_grad.npy"}) {
    CAPTURE(file);
    CHECK(read_bytes(dir.path / "a" / file) == read_bytes(dir.path / "b" / file));
  }
}

// CmdStan's CSV puts the parameters first, then the transformed parameters, then the generated
// quantities, each with Stan's 1-based names.
TEST_CASE("sample types: the CmdStan CSV has the quantities' columns after the parameters'") {
  const TempDir dir("ab_types_csv");
  const auto o = run_sample(dir, kTypes +
                                     " --backend vm --chains 1 --draws 20 --warmup 20 --seed 4 "
                                     "--out fit --csv");
  REQUIRE_MESSAGE(o.exit_code == 0, o.err);
  std::istringstream csv(read_bytes(dir.path / "fit" / "constrained_types-1.csv"));
  std::string line;
  while (std::getline(csv, line) && line.rfind('#', 0) == 0) {
  }
  CHECK(line ==
        "lp__,accept_stat__,stepsize__,treedepth__,n_leapfrog__,divergent__,energy__,s.1,s.2,s.3,"
        "o.1,o.2,po.1,po.2,gap,y_rep,heads,z.1,z.2");
  // rstan's own reader, where R and rstan are installed: the same names, in that order.
  if (std::system("Rscript -e 'library(rstan)' > /dev/null 2>&1") != 0) return;
  const std::string command = fmt::format(
      "cd '{}' && Rscript -e 'suppressMessages(library(rstan)); "
      "f <- read_stan_csv(\"fit/constrained_types-1.csv\"); "
      "cat(names(f), sep = \",\")' > names.txt 2> r_err.txt",
      dir.path.string());
  REQUIRE_MESSAGE(std::system(command.c_str()) == 0, read_bytes(dir.path / "r_err.txt"));
  CHECK(read_bytes(dir.path / "names.txt") ==
        "s[1],s[2],s[3],o[1],o[2],po[1],po[2],gap,y_rep,heads,z[1],z[2],lp__");
}

TEST_CASE("sample types: --init takes constrained values and refuses a point off its set") {
  const TempDir dir("ab_types_init");
  const std::string run = kTypes +
                          " --backend vm --chains 1 --draws 3 --warmup 0 --no-step-search "
                          "--step-size 0.001 --max-depth 1 --out fit --init ";
  dir.write("init.json", R"({"s": [0.2, 0.3, 0.5], "o": [-1, 2], "po": [0.5, 3]})");
  auto o = run_sample(dir, run + "init.json");
  REQUIRE_MESSAGE(o.exit_code == 0, o.err);
  const std::vector<double> draws = npy_values(dir.path / "fit" / "draws.npy");
  const double want[] = {0.2, 0.3, 0.5, -1, 2, 0.5, 3};
  for (size_t j = 0; j < 7; ++j)
    CHECK(draws[j] == doctest::Approx(want[j]).epsilon(0.02));
  const std::vector<std::pair<std::string, std::string>> bad = {
      {R"({"s": [0.2, 0.3, 0.6], "o": [-1, 2], "po": [0.5, 3]})",
       "chain 0: s = [0.2, 0.3, 0.6] is not a simplex (every element above 0, summing to 1)"},
      {R"({"s": [0.2, 0.3, 0.5], "o": [2, -1], "po": [0.5, 3]})",
       "o = [2, -1] is not strictly increasing (an ordered)"},
      {R"({"s": [0.2, 0.3, 0.5], "o": [-1, 2], "po": [0, 3]})",
       "po = [0, 3] is not positive and strictly increasing (a positive_ordered)"},
      {R"({"s": [0.2, 0.3, 0.5], "o": [-1, 2], "po": [0.5, 3], "gap": 3})",
       "unknown parameter 'gap' (the model's: s, o, po)"}};
  for (const auto& [text, message] : bad) {
    CAPTURE(text);
    dir.write("bad.json", text);
    o = run_sample(dir, run + "bad.json");
    CHECK(o.exit_code == 2);
    CHECK(o.err.find(message) != std::string::npos);
  }
}

TEST_CASE("sample types: transformed and generated off the contract point at the declaration") {
  const TempDir dir("ab_types_contract");
  const std::string params =
      "struct Params { mu: float }\n"
      "fn log_density(p: Params) -> float { return -p.mu * p.mu; }\n";
  const std::vector<std::pair<std::string, std::string>> bad = {
      {params + "fn generated(p: Params) -> float { return p.mu; }\n",
       "model.ab:3:1: 'generated' returns a struct; it is fn generated(p: Params) -> a struct"},
      {params + "fn transformed(x: float) -> Params { return Params { mu: x }; }\n",
       "model.ab:3:1: 'transformed' takes the struct of parameters, Params, as log_density does"},
      {params + "struct G { mu: float }\nfn generated(p: Params) -> G { return G { mu: 1.0 }; }\n",
       "field 'mu' of 'G' (generated's result) has the name of an earlier column"},
      {"fn log_density(q: float[1]) -> float { return -q[0] * q[0]; }\n"
       "struct G { y: float }\nfn generated(q: float[1]) -> G { return G { y: q[0] }; }\n",
       "model.ab:3:1: 'generated' needs a struct of parameters"}};
  for (const auto& [text, message] : bad) {
    CAPTURE(text);
    dir.write("model.ab", text);
    const auto o = run_sample(dir, "model.ab --backend vm --out fit");
    CHECK(o.exit_code == 2);
    CHECK(o.err.find(message) != std::string::npos);
  }
}

}  // namespace
