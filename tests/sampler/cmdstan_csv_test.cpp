// The sampler as a library (include/autobatch/sampler.h) and its CmdStan CSV: a Gaussian with a
// known mean sampled through sample::run on the VM recovers it; each chain's CSV, read back by a
// small reader that follows the CmdStan User's Guide ("Stan CSV File Format": `#` comment lines,
// one header row, one row per draw, the adaptation as comments after the header), holds the
// configuration, the adaptation's step size and inverse metric, and every draw and statistic
// exactly.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "autobatch/sampler.h"

namespace {

using namespace ab;

// A Stan CSV file as its documented parts.
struct StanCsv {
  std::map<std::string, std::string> config;  // "# key = value" before the header
  std::vector<std::string> columns;
  std::vector<std::vector<double>> rows;
  std::vector<std::string> adaptation;  // the comment lines between the header and the draws
};

std::vector<std::string> split(const std::string& line, char by) {
  std::vector<std::string> out;
  std::string cell;
  std::istringstream in(line);
  while (std::getline(in, cell, by))
    out.push_back(cell);
  return out;
}

std::string trim(const std::string& s) {
  const size_t a = s.find_first_not_of(' '), b = s.find_last_not_of(' ');
  return a == std::string::npos ? "" : s.substr(a, b - a + 1);
}

StanCsv read_stan_csv(const std::string& text) {
  StanCsv csv;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind('#', 0) == 0) {
      const std::string body = line.substr(1);
      if (csv.columns.empty()) {
        const size_t eq = body.find('=');
        if (eq != std::string::npos) {
          std::string value = trim(body.substr(eq + 1));
          value = value.substr(0, value.find(" (Default)"));
          csv.config[trim(body.substr(0, eq))] = value;
        }
      } else if (csv.rows.empty()) {
        csv.adaptation.push_back(trim(body));
      }
      continue;
    }
    if (csv.columns.empty()) {
      csv.columns = split(line, ',');
      continue;
    }
    std::vector<double> row;
    for (const std::string& cell : split(line, ','))
      row.push_back(std::strtod(cell.c_str(), nullptr));
    csv.rows.push_back(std::move(row));
  }
  return csv;
}

const char* const kModel = R"(
// Two independent normals, means 3 and -1, sds 1 and 0.5, as a struct of parameters.
struct Params { a: float, b: float[1] }
fn log_density(p: Params) -> float {
    let za = p.a - 3.0;
    let zb = (p.b[0] + 1.0) / 0.5;
    return -0.5 * (za * za + zb * zb);
}
)";

}  // namespace

TEST_CASE("sampler library: CmdStan names are 1-based with dots") {
  CHECK(sample::cmdstan_name("tau") == "tau");
  CHECK(sample::cmdstan_name("theta[0]") == "theta.1");
  CHECK(sample::cmdstan_name("m[1][2]") == "m.2.3");
  CHECK(sample::cmdstan_name("q[11]") == "q.12");
}

TEST_CASE("sampler library: a model off the contract is one message with its place") {
  auto model = sample::Model::compile("fn log_density(q: int) -> float { return 0.0; }\n", "m.ab");
  REQUIRE_FALSE(model.ok());
  CHECK(model.error().find("m.ab:1:") == 0);
  CHECK(model.error().find("'log_density' does not fit the model contract") != std::string::npos);
  auto broken =
      sample::Model::compile("fn log_density(q: float[2]) -> float { return q; }\n", "broken.ab");
  REQUIRE_FALSE(broken.ok());
  CHECK(broken.error().find("broken.ab:1:") == 0);
  sample::Options none;
  none.chains = 0;
  CHECK(sample::check_options(none).error() == "chains 0 is not in [1, 1048576]");
  sample::Options wild;
  wild.step_jitter = 1.5;
  CHECK(sample::check_options(wild).error() == "step_jitter 1.5 is not in [0, 1]");
  wild.step_jitter = std::nan("");
  CHECK_FALSE(sample::check_options(wild).ok());
  wild.step_jitter = 1.0;
  CHECK(sample::check_options(wild).ok());
}

TEST_CASE("sampler library: a Gaussian's mean recovered, and its CSV round-trips exactly") {
  auto model = sample::Model::compile(kModel, "two_normals.ab");
  REQUIRE(model.ok());
  CHECK((*model)->parameter_names() == std::vector<std::string>{"a", "b[0]"});
  sample::Options options;
  options.chains = 3;
  options.draws = 400;
  options.warmup = 300;
  options.seed = 7;
  uint64_t seen = 0;
  options.on_draw = [&](uint32_t, uint32_t, uint64_t received) { seen = received; };
  auto fit = sample::run(**model, {}, options, sample::cpu_runner(CpuBackend::Vm));
  REQUIRE(fit.ok());
  CHECK(seen == 3 * 400);
  CHECK(fit->received == 3 * 400);
  REQUIRE(fit->summary.size() == 2);
  // Means within 4 Monte Carlo standard errors of the truth; R-hat near 1.
  CHECK(std::abs(fit->summary[0].summary.mean - 3.0) < 4 * fit->summary[0].summary.mcse_mean);
  CHECK(std::abs(fit->summary[1].summary.mean + 1.0) < 4 * fit->summary[1].summary.mcse_mean);
  CHECK(std::abs(fit->summary[0].summary.sd - 1.0) < 0.15);
  CHECK(std::abs(fit->summary[1].summary.sd - 0.5) < 0.08);
  CHECK(fit->summary[0].summary.rhat < 1.05);
  REQUIRE(fit->inv_metrics.size() == 3);

  for (uint32_t chain = 0; chain < 3; ++chain) {
    const uint64_t per = uint64_t{fit->draws} * fit->dimension;
    const std::string text = sample::cmdstan_csv(
        *fit, "two_normals", chain, std::span(fit->draws_data).subspan(chain * per, per));
    const StanCsv csv = read_stan_csv(text);
    CHECK(csv.config.at("model") == "two_normals");
    CHECK(csv.config.at("num_samples") == "400");
    CHECK(csv.config.at("num_warmup") == "300");
    CHECK(csv.config.at("id") == std::to_string(chain + 1));
    CHECK(csv.config.at("seed") == "7");
    CHECK(csv.columns == std::vector<std::string>{"lp__", "accept_stat__", "stepsize__",
                                                  "treedepth__", "n_leapfrog__", "divergent__",
                                                  "energy__", "a", "b.1"});
    // The adaptation: "Adaptation terminated", "Step size = X", the metric's title, its values.
    REQUIRE(csv.adaptation.size() == 4);
    CHECK(csv.adaptation[0] == "Adaptation terminated");
    CHECK(static_cast<float>(std::strtod(csv.adaptation[1].substr(12).c_str(), nullptr)) ==
          static_cast<float>(fit->step_sizes[chain]));
    const std::vector<std::string> metric = split(csv.adaptation[3], ',');
    REQUIRE(metric.size() == 2);
    for (size_t j = 0; j < 2; ++j)
      CHECK(static_cast<float>(std::strtod(metric[j].c_str(), nullptr)) ==
            fit->inv_metrics[chain][j]);
    REQUIRE(csv.rows.size() == 400);
    for (uint32_t i = 0; i < 400; ++i) {
      const uint64_t k = uint64_t{chain} * 400 + i;
      const std::vector<double>& row = csv.rows[i];
      REQUIRE(row.size() == 9);
      CHECK(static_cast<float>(row[0]) == fit->stats.lp[k]);
      CHECK(static_cast<float>(row[1]) == fit->stats.accept_stat[k]);
      CHECK(static_cast<float>(row[2]) == fit->stats.step_size[k]);
      CHECK(row[3] == fit->stats.tree_depth[k]);
      CHECK(row[4] == fit->stats.n_leapfrog[k]);
      CHECK(row[5] == fit->stats.divergent[k]);
      CHECK(static_cast<float>(row[6]) == fit->stats.energy[k]);
      CHECK(static_cast<float>(row[7]) == fit->draws_data[k * 2]);
      CHECK(static_cast<float>(row[8]) == fit->draws_data[k * 2 + 1]);
    }
  }
}

TEST_CASE("sampler library: an array's CSV columns are column-major, values under their names") {
  // One chain of two draws over a scalar, a 2x3 array and a vector, each cell a distinct value:
  // m[i][j] = 10 * (3 i + j) + draw, as in the issue's [[0, 10, 20], [30, 40, 50]].
  sample::Fit fit;
  fit.chains = 1;
  fit.draws = 2;
  fit.parameter_names = {"a",       "m[0][0]", "m[0][1]", "m[0][2]", "m[1][0]",
                         "m[1][1]", "m[1][2]", "v[0]",    "v[1]"};
  fit.dimension = static_cast<uint32_t>(fit.parameter_names.size());
  fit.draws_per_chain = {2};
  fit.stats.lp = fit.stats.accept_stat = fit.stats.step_size = fit.stats.energy = {0.5f, 0.5f};
  fit.stats.tree_depth = fit.stats.n_leapfrog = {1, 1};
  fit.stats.divergent = {0, 0};
  std::vector<float> draws;
  for (int draw = 0; draw < 2; ++draw) {
    draws.push_back(-1.0f - draw);
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 3; ++j)
        draws.push_back(10.0f * (3 * i + j) + draw);
    draws.push_back(100.0f + draw);
    draws.push_back(200.0f + draw);
  }
  const StanCsv csv = read_stan_csv(sample::cmdstan_csv(fit, "grid", 0, draws));
  // CmdStan's header: the first index fastest (the CmdStan guide, "Stan CSV File Format").
  const std::vector<std::string> parameters(csv.columns.begin() + 7, csv.columns.end());
  CHECK(parameters == std::vector<std::string>{"a", "m.1.1", "m.2.1", "m.1.2", "m.2.2", "m.1.3",
                                               "m.2.3", "v.1", "v.2"});
  REQUIRE(csv.rows.size() == 2);
  for (int draw = 0; draw < 2; ++draw) {
    const std::vector<double>& row = csv.rows[draw];
    REQUIRE(row.size() == csv.columns.size());
    // Each value under its name: m.I.J holds cell (I - 1, J - 1).
    for (size_t k = 7; k < row.size(); ++k) {
      const std::string& name = csv.columns[k];
      CAPTURE(name);
      if (name == "a") CHECK(row[k] == -1.0 - draw);
      if (name[0] == 'v') CHECK(row[k] == 100.0 * (name[2] - '0') + draw);
      if (name[0] == 'm') {
        const int i = name[2] - '1', j = name[4] - '1';
        CHECK(row[k] == 10.0 * (3 * i + j) + draw);
      }
    }
    // A reader rebuilding m from its columns' positions, first index fastest, gets the truth.
    for (int j = 0; j < 3; ++j)
      for (int i = 0; i < 2; ++i)
        CHECK(row[8 + 2 * j + i] == 10.0 * (3 * i + j) + draw);
  }
}

TEST_CASE("sampler library: cmdstan_order keeps fields in place and runs the first index fastest") {
  CHECK(sample::cmdstan_order({"q[0]", "q[1]", "q[2]"}) == std::vector<uint32_t>{0, 1, 2});
  CHECK(sample::cmdstan_order({"b[0][0]", "b[0][1]", "b[1][0]", "b[1][1]", "a"}) ==
        std::vector<uint32_t>{0, 2, 1, 3, 4});
  // [2][2][2]: t[i][j][k] is coordinate 4i + 2j + k; Stan's order runs i, then j, then k.
  std::vector<std::string> cube;
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 2; ++j)
      for (int k = 0; k < 2; ++k)
        cube.push_back("t[" + std::to_string(i) + "][" + std::to_string(j) + "][" +
                       std::to_string(k) + "]");
  CHECK(sample::cmdstan_order(cube) == std::vector<uint32_t>{0, 4, 2, 6, 1, 5, 3, 7});
}

TEST_CASE("sampler library: a control byte in the model's name stays inside its comment line") {
  sample::Fit fit;
  fit.chains = 1;
  fit.dimension = 1;
  fit.parameter_names = {"a"};
  fit.draws_per_chain = {0};
  const std::string text = sample::cmdstan_csv(fit, "two\nlines\r", 0, {});
  CHECK(text.find("# model = two\\x0alines\\x0d\n") != std::string::npos);
  // Every line before the header is a comment.
  const StanCsv csv = read_stan_csv(text);
  CHECK(csv.columns.size() == 8);
  CHECK(csv.columns[0] == "lp__");
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line) && line.rfind("lp__", 0) != 0)
    CHECK(line.rfind('#', 0) == 0);
}

TEST_CASE("sampler library: a parameter named like Stan's columns (ending in __) is refused") {
  for (const char* name : {"lp__", "stepsize__", "x__"}) {
    CAPTURE(name);
    const std::string source = std::string("struct Params {\n  mu: float,\n  ") + name +
                               ": float<lower=0>\n}\n"
                               "fn log_density(p: Params) -> float { return -p.mu * p.mu; }\n";
    auto model = sample::Model::compile(source, "reserved.ab");
    REQUIRE_FALSE(model.ok());
    CHECK(model.error() == fmt::format("reserved.ab:3:3: parameter '{}': names ending in '__' are "
                                       "reserved for the sampler's own columns (lp__, stepsize__, "
                                       "... in the CmdStan CSV), as in Stan; rename it",
                                       name));
  }
  // A name with "__" inside, or one underscore at the end, is the user's.
  auto fine = sample::Model::compile(
      "struct Params { a__b: float, c_: float }\n"
      "fn log_density(p: Params) -> float { return -p.a__b * p.a__b - p.c_ * p.c_; }\n",
      "fine.ab");
  CHECK_MESSAGE(fine.ok(), (fine.ok() ? std::string() : fine.error()));
}

TEST_CASE("sampler library: three draws per chain leave R-hat NaN, and a warning says why") {
  auto model = sample::Model::compile(kModel, "two_normals.ab");
  REQUIRE(model.ok());
  sample::Options options;
  options.chains = 4;
  options.draws = 3;
  options.warmup = 20;
  auto fit = sample::run(**model, {}, options, sample::cpu_runner(CpuBackend::Vm));
  REQUIRE(fit.ok());
  REQUIRE(fit->summary.size() == 2);
  CHECK(std::isnan(fit->summary[0].summary.rhat));
  bool warned = false;
  for (const sample::FitWarning& w : fit->warnings)
    if (w.kind == "undiagnosed") {
      warned = true;
      CHECK(w.message.find("with 3 draws per chain (they need at least 4): too few draws to "
                           "diagnose convergence") != std::string::npos);
    }
  CHECK(warned);
}
