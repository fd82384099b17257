// Posterior summary statistics for MCMC draws, as `autobatch sample` prints them: mean, sd,
// quantiles, split rank-normalised R-hat, bulk and tail effective sample size and the Monte Carlo
// standard error of the mean. The diagnostics follow Vehtari, Gelman, Simpson, Carpenter and
// Bürkner (2021), "Rank-normalization, folding, and localization: an improved R-hat for assessing
// convergence of MCMC", Bayesian Analysis 16(2).
//
// Draws of one scalar parameter are laid out chain-major: draw i of chain c is at
// [c * draws_per_chain + i].
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include "autobatch/expected.h"
#include "autobatch/sampler.h"  // ParameterSummary, NamedSummary, format_summary_table

namespace ab::sample {

// Split R-hat and ESS need this many draws per chain (each split half needs 2).
constexpr size_t kMinDrawsToDiagnose = 4;

// Summarises `chains` x `draws_per_chain` draws of one parameter; an Error when draws.size() !=
// chains * draws_per_chain. Degenerate input gives NaN instead of failing:
//  - no draws: every field NaN; a single draw: sd NaN.
//  - fewer than 4 draws per chain (each split half needs 2): rhat, ess_* and mcse_mean NaN.
//  - all draws equal: sd 0, rhat, ess_* and mcse_mean NaN (there is no variance to compare).
//  - any NaN or infinite draw: every field NaN.
// A part of a diagnostic that has no variance of its own (the folded draws of a two-valued
// parameter, or one quantile indicator that is constant) is skipped; the diagnostic is NaN only
// when every part is. Each chain stuck at its own value gives rhat = +inf. With an odd number of
// draws per chain the rank-based diagnostics leave each chain's middle draw out (see split chains
// in the paper); mean, sd and quantiles use every draw. No shared state: parameters can be
// summarised in parallel.
Expected<ParameterSummary> summarize(std::span<const double> draws, size_t chains,
                                     size_t draws_per_chain);

// Sample quantile by linear interpolation between order statistics (Hyndman and Fan's type 7,
// R's default): with sorted x[0..n-1], h = (n - 1) p, the result is
// x[floor h] + (h - floor h) (x[floor h + 1] - x[floor h]). `sorted` must be ascending, non-empty.
double quantile_of_sorted(std::span<const double> sorted, double probability);

// Split R-hat and effective sample size of draws used as they are (no rank normalisation, no
// folding): the building blocks of summarize(). NaN when the draws do not make `chains` x
// `draws_per_chain`, when draws_per_chain < 4, when a value is not
// finite or when the draws are all equal; R-hat is +inf when each split chain is constant but they
// differ.
double split_rhat(std::span<const double> draws, size_t chains, size_t draws_per_chain);
double split_ess(std::span<const double> draws, size_t chains, size_t draws_per_chain);

// Inverse of the standard normal CDF. -inf at 0, +inf at 1, NaN outside [0, 1].
double inverse_normal_cdf(double probability);

}  // namespace ab::sample
