// The checks `sample` prints after a fit (sampler/diagnostics.h), each on statistics made to
// trigger it and on a clean fit that must trigger none; the parameter layout and its transforms
// (sampler/parameters.h) against their closed forms.
#include <doctest/doctest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "sampler/diagnostics.h"
#include "sampler/parameters.h"

namespace {

using namespace ab::sample;

ParameterSummary clean_summary() {
  return {.mean = 0,
          .sd = 1,
          .mcse_mean = 0.01,
          .q5 = -1.6,
          .q50 = 0,
          .q95 = 1.6,
          .rhat = 1.001,
          .ess_bulk = 4000,
          .ess_tail = 3000};
}

// Four chains of 1000 draws: no divergence, depth 3, energies independent normal draws.
FitStatistics clean_statistics() {
  FitStatistics s;
  s.chains = 4;
  s.draws = 1000;
  s.divergent.assign(4000, 0);
  s.tree_depth.assign(4000, 3);
  std::mt19937 rng(5);
  std::normal_distribution<float> normal(10.0f, 2.0f);
  for (int i = 0; i < 4000; ++i)
    s.energy.push_back(normal(rng));
  return s;
}

std::vector<std::string> kinds(const std::vector<FitWarning>& warnings) {
  std::vector<std::string> out;
  for (const FitWarning& w : warnings)
    out.push_back(w.kind);
  return out;
}

TEST_CASE("sample diagnostics: E-BFMI is the energy's step variance over its spread") {
  // Alternating 0, 1: each step moves 1, the spread is 1/4 per draw: 3 / 1 = 3.
  const float alternating[] = {0, 1, 0, 1};
  CHECK(e_bfmi(alternating, 4) == doctest::Approx(3.0));
  // Independent draws: about 2 (E[(a - b)^2] = 2 var).
  const FitStatistics clean = clean_statistics();
  CHECK(e_bfmi(clean.energy.data(), 1000) == doctest::Approx(2.0).epsilon(0.15));
  // A slow random walk: steps far smaller than the spread.
  std::vector<float> walk(1000);
  for (size_t i = 1; i < walk.size(); ++i)
    walk[i] = walk[i - 1] + (i % 3 == 0 ? 0.1f : -0.05f) + 0.02f;
  CHECK(e_bfmi(walk.data(), 1000) < 0.01);
  CHECK(std::isnan(e_bfmi(walk.data(), 1)));
}

TEST_CASE("sample diagnostics: a clean fit warns of nothing") {
  const std::vector<NamedSummary> parameters = {{"a", clean_summary()}, {"b", clean_summary()}};
  CHECK(fit_warnings(clean_statistics(), parameters).empty());
}

TEST_CASE("sample diagnostics: each problem gives its warning, with counts and the worst name") {
  FitStatistics s = clean_statistics();
  s.divergent[17] = s.divergent[2500] = 1;
  s.tree_depth[5] = 10;  // the default maximum
  // Chain 2's energies: a slow walk, E-BFMI far below 0.3.
  for (uint32_t i = 0; i < 1000; ++i)
    s.energy[2000 + i] = 0.01f * static_cast<float>(i);
  std::vector<NamedSummary> parameters = {
      {"mu", clean_summary()}, {"tau", clean_summary()}, {"theta[3]", clean_summary()}};
  parameters[1].summary.rhat = 1.2;
  parameters[2].summary.rhat = 1.02;
  parameters[2].summary.ess_bulk = 150;  // below 100 per chain (400)
  parameters[1].summary.ess_tail = 80;
  const std::vector<FitWarning> warnings = fit_warnings(s, parameters);
  CHECK(kinds(warnings) == std::vector<std::string>{"divergences", "max_tree_depth", "e_bfmi",
                                                    "rhat", "ess_bulk", "ess_tail"});
  CHECK(warnings[0].message.find("2 of 4000 (0.05%) transitions after warm-up were divergent") ==
        0);
  CHECK(warnings[0].message.find("--target-accept") != std::string::npos);
  CHECK(warnings[1].message.find("1 of 4000 (0.025%) transitions hit the maximum tree depth 10") ==
        0);
  CHECK(warnings[2].message.find("chain 2: E-BFMI 0.000 is below 0.3") == 0);
  CHECK(warnings[3].message.find("R-hat is above 1.01 for 2 of 3 parameters (worst: tau 1.2)") ==
        0);
  CHECK(warnings[4].message.find("bulk ESS is below 400 (100 per chain x 4 chains) for 1 of 3 "
                                 "parameters (worst: theta[3] 150)") == 0);
  CHECK(warnings[5].message.find("(worst: tau 80)") != std::string::npos);
}

TEST_CASE("sample diagnostics: the ESS bound is the fit's total, the rule per chain beside it") {
  FitStatistics s = clean_statistics();
  std::vector<NamedSummary> parameters = {{"mu", clean_summary()}};
  parameters[0].summary.ess_bulk = 350;
  std::vector<FitWarning> warnings = fit_warnings(s, parameters);
  REQUIRE(kinds(warnings) == std::vector<std::string>{"ess_bulk"});
  CHECK(warnings[0].message.find("bulk ESS is below 400 (100 per chain x 4 chains) for 1 of 1") ==
        0);
  // One chain: the bound is the rule.
  s.chains = 1;
  s.draws = 4000;
  parameters[0].summary.ess_bulk = 50;
  warnings = fit_warnings(s, parameters);
  REQUIRE(kinds(warnings) == std::vector<std::string>{"ess_bulk"});
  CHECK(warnings[0].message.find("bulk ESS is below 100 for 1 of 1 parameters (worst: mu 50)") ==
        0);
}

TEST_CASE("sample diagnostics: shares print in plain percents, 100% included") {
  FitStatistics s = clean_statistics();
  s.divergent.assign(4000, 1);
  s.tree_depth.assign(4000, 10);
  s.tree_depth[0] = 3;
  const std::vector<NamedSummary> parameters = {{"mu", clean_summary()}};
  const std::vector<FitWarning> warnings = fit_warnings(s, parameters);
  REQUIRE(kinds(warnings) == std::vector<std::string>{"divergences", "max_tree_depth"});
  CHECK(warnings[0].message.find("4000 of 4000 (100%) transitions") == 0);
  // One short of all is not rounded up to 100%.
  CHECK(warnings[1].message.find("3999 of 4000 (99.9%) transitions") == 0);
  s.divergent.assign(4000, 0);
  for (int k = 0; k < 500; ++k)
    s.divergent[k] = 1;
  CHECK(fit_warnings(s, parameters)[0].message.find("500 of 4000 (12.5%)") == 0);
}

TEST_CASE("sample diagnostics: NaN R-hat or ESS fails the checks and says why") {
  ParameterSummary undefined = clean_summary();
  undefined.rhat = undefined.ess_bulk = undefined.ess_tail = undefined.mcse_mean = std::nan("");
  // Three draws per chain: too few for split R-hat; every parameter is undefined.
  FitStatistics s = clean_statistics();
  s.draws = 3;
  s.divergent.resize(12);
  s.tree_depth.resize(12);
  s.energy.resize(12);
  std::vector<NamedSummary> parameters = {{"mu", undefined}, {"tau", undefined}};
  std::vector<FitWarning> warnings = fit_warnings(s, parameters);
  REQUIRE(kinds(warnings) == std::vector<std::string>{"undiagnosed"});
  CHECK(warnings[0].message ==
        "R-hat and ESS are undefined (NaN) for 2 of 2 parameters (first: mu) with 3 draws per "
        "chain (they need at least 4): too few draws to diagnose convergence: the chains may not "
        "have mixed; draw more");
  // Enough draws, but a parameter that never moved (all draws equal: sd 0).
  ParameterSummary constant = undefined;
  constant.sd = 0;
  parameters = {{"mu", clean_summary()}, {"c", constant}};
  warnings = fit_warnings(clean_statistics(), parameters);
  REQUIRE(kinds(warnings) == std::vector<std::string>{"undiagnosed"});
  CHECK(warnings[0].message.find("undefined (NaN) for 1 of 2 parameters (first: c) with 1000 "
                                 "draws per chain: their draws never change") != std::string::npos);
  // Draws that are not finite (every field NaN).
  ParameterSummary broken = undefined;
  broken.mean = broken.sd = std::nan("");
  parameters = {{"b", broken}, {"c", constant}};
  warnings = fit_warnings(clean_statistics(), parameters);
  REQUIRE(kinds(warnings) == std::vector<std::string>{"undiagnosed", "undiagnosed"});
  CHECK(warnings[0].message.find("(first: b) with 1000 draws per chain: some draws are NaN") !=
        std::string::npos);
  CHECK(warnings[1].message.find("(first: c)") != std::string::npos);
}

TEST_CASE("sample parameters: a struct's floats become named coordinates with their bounds") {
  ab::ValueType scalar{
      .kind = ab::ValueType::Kind::Scalar, .scalar = ab::Scalar::Float, .words = 1};
  ab::ValueType row{
      .kind = ab::ValueType::Kind::Array, .count = 2, .element = {scalar}, .words = 2};
  ab::ValueType matrix{
      .kind = ab::ValueType::Kind::Array, .count = 2, .element = {row}, .words = 4};
  ab::ValueType params{.kind = ab::ValueType::Kind::Struct, .struct_name = "P", .words = 6};
  params.fields = {{"tau", 0, scalar, {0.0f, std::nullopt}},
                   {"m", 1, matrix, {}},
                   {"p", 5, scalar, {0.0f, 1.0f}}};
  auto layout = struct_layout(params);
  REQUIRE(layout.ok());
  CHECK(layout->names ==
        std::vector<std::string>{"tau", "m[0][0]", "m[0][1]", "m[1][0]", "m[1][1]", "p"});
  CHECK(layout->bounds[0].lower == 0.0f);
  CHECK_FALSE(layout->bounds[2].any());
  CHECK(layout->constrained());
  CHECK_FALSE(flat_layout(3).constrained());
  CHECK(flat_layout(3).names[2] == "q[2]");

  ab::ValueType with_int = params;
  with_int.fields[1].type =
      ab::ValueType{.kind = ab::ValueType::Kind::Scalar, .scalar = ab::Scalar::Int, .words = 1};
  auto refused = struct_layout(with_int);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error() ==
        "field 'm: int' of 'P': a struct of parameters holds floats and arrays of floats");
}

TEST_CASE("sample parameters: unconstrain inverts constrain and refuses values off the bounds") {
  ParameterLayout layout;
  layout.names = {"free", "low", "high", "both"};
  layout.bounds = {{}, {1.0f, std::nullopt}, {std::nullopt, -2.0f}, {-1.0f, 3.0f}};
  const std::vector<float> x = {-7.5f, 1.25f, -4.0f, 2.5f};
  auto u = unconstrain(layout, x);
  REQUIRE(u.ok());
  CHECK((*u)[1] == doctest::Approx(std::log(0.25)));
  CHECK((*u)[2] == doctest::Approx(std::log(2.0)));
  for (size_t i = 0; i < x.size(); ++i)
    CHECK(constrain(layout.bounds[i], (*u)[i]) == doctest::Approx(x[i]).epsilon(1e-6));
  auto on_bound = unconstrain(layout, {0.0f, 1.0f, -3.0f, 0.0f});
  REQUIRE_FALSE(on_bound.ok());
  CHECK(on_bound.error() == "low = 1 is not above its lower bound 1");
  auto outside = unconstrain(layout, {0.0f, 2.0f, -3.0f, 3.5f});
  REQUIRE_FALSE(outside.ok());
  CHECK(outside.error() == "both = 3.5 is not inside (-1, 3)");
  auto not_finite = unconstrain(layout, {INFINITY, 2.0f, -3.0f, 0.0f});
  REQUIRE_FALSE(not_finite.ok());
  CHECK(not_finite.error() == "free = inf is not finite");
}

}  // namespace
