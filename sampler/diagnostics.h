// What a fit's numbers say about its trustworthiness: the checks Stan prints after sampling
// (divergences, the tree depth limit, E-BFMI, R-hat, effective sample size), each as one warning
// with one line of advice. Pure functions over the per-draw statistics and the summary, so each
// is tested on arrays made to trigger it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "autobatch/sampler.h"  // FitWarning, NamedSummary

namespace ab::sample {

// The per-draw statistics of the chains the summary uses, [chain][draw] flattened per chain.
struct FitStatistics {
  uint32_t chains = 0, draws = 0;
  std::vector<uint8_t> divergent;  // chains * draws
  std::vector<int32_t> tree_depth;
  std::vector<float> energy;
  uint32_t max_depth = 10;
};

// Stan's thresholds (the Stan Reference Manual, "Diagnostic warnings"; rstan's monitor).
constexpr double kMinEbfmi = 0.3;
constexpr double kMaxRhat = 1.01;
constexpr double kMinEssPerChain = 100;

// E-BFMI of one chain's energies: sum of squared successive differences over the sum of squared
// deviations from the mean (Betancourt 2016). NaN with fewer than 2 draws.
double e_bfmi(const float* energy, uint32_t draws);

std::vector<FitWarning> fit_warnings(const FitStatistics& stats,
                                     const std::vector<NamedSummary>& parameters);

}  // namespace ab::sample
