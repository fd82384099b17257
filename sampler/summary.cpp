#include "sampler/summary.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numbers>
#include <utility>

#include <fmt/format.h>

namespace ab::sample {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

bool all_finite(std::span<const double> values) {
  return std::all_of(values.begin(), values.end(), [](double v) { return std::isfinite(v); });
}

// Mean taken relative to the first value: exact for constant input (so a constant chain has a
// variance of exactly 0, not rounding noise) and less cancellation-prone otherwise.
double shifted_mean(std::span<const double> values) {
  const double origin = values[0];
  double sum = 0;
  for (double v : values)
    sum += v - origin;
  return origin + sum / static_cast<double>(values.size());
}

double sum_of_squared_deviations(std::span<const double> values, double mean) {
  double sum = 0;
  for (double v : values)
    sum += (v - mean) * (v - mean);
  return sum;
}

double sample_variance(std::span<const double> values) {
  return sum_of_squared_deviations(values, shifted_mean(values)) /
         static_cast<double>(values.size() - 1);
}

// Split chains: each chain's first and last floor(n / 2) draws become two chains, so that a trend
// within a chain shows up as a difference between chains. With odd n the middle draw is left out.
// Split chain 2c is the first half of chain c, 2c + 1 its second half; they are stored
// contiguously, `length` draws each.
struct SplitLayout {
  size_t chains = 0;  // number of split chains, twice the input's
  size_t length = 0;  // draws per split chain

  SplitLayout(size_t input_chains, size_t draws_per_chain)
      : chains(2 * input_chains), length(draws_per_chain / 2) {}

  size_t size() const { return chains * length; }

  // Position in the split layout of draw `draw` of chain `chain`; size() when it is left out.
  size_t position(size_t chain, size_t draw, size_t draws_per_chain) const {
    if (draw < length) return 2 * chain * length + draw;
    const size_t second_half_start = draws_per_chain - length;
    if (draw >= second_half_start) return (2 * chain + 1) * length + (draw - second_half_start);
    return size();
  }

  std::span<const double> chain(std::span<const double> split, size_t index) const {
    return split.subspan(index * length, length);
  }
};

std::vector<double> split_copy(std::span<const double> draws, size_t chains,
                               size_t draws_per_chain) {
  const SplitLayout layout(chains, draws_per_chain);
  std::vector<double> split(layout.size());
  for (size_t c = 0; c < chains; ++c)
    for (size_t i = 0; i < draws_per_chain; ++i) {
      const size_t position = layout.position(c, i, draws_per_chain);
      if (position < split.size()) split[position] = draws[c * draws_per_chain + i];
    }
  return split;
}

// Potential scale reduction of split chains (the paper's eq. 3-4): sqrt(var+ / W) with W the mean
// within-chain variance and var+ = (n - 1) / n W + B / n. 0/0 (no variance at all) gives NaN and
// W = 0 < var+ (every chain stuck at its own value) gives +inf, both by IEEE arithmetic.
double rhat_of_split(std::span<const double> split, const SplitLayout& layout) {
  const double n = static_cast<double>(layout.length);
  std::vector<double> chain_means(layout.chains);
  double within = 0;
  for (size_t k = 0; k < layout.chains; ++k) {
    const std::span<const double> chain = layout.chain(split, k);
    chain_means[k] = shifted_mean(chain);
    within += sum_of_squared_deviations(chain, chain_means[k]) / (n - 1);
  }
  within /= static_cast<double>(layout.chains);
  const double between_over_n = sample_variance(chain_means);  // B / n
  const double pooled = (n - 1) / n * within + between_over_n;
  return std::sqrt(pooled / within);
}

// sum_i a[i] * b[i] with four partial sums, so the loop is not one long dependency chain.
double dot(const double* a, const double* b, size_t count) {
  std::array<double, 4> partial{};
  size_t i = 0;
  for (; i + 4 <= count; i += 4)
    for (size_t j = 0; j < 4; ++j)
      partial[j] += a[i + j] * b[i + j];
  for (; i < count; ++i)
    partial[0] += a[i] * b[i];
  return (partial[0] + partial[1]) + (partial[2] + partial[3]);
}

// Effective sample size of split chains (the paper's section 3.2 and appendix; Geyer 1992,
// "Practical Markov chain Monte Carlo", for the truncation). The combined autocorrelation at lag t
// is rho_t = 1 - (W - mean over chains of acov_t) / var+, acov_t with divisor n. Lags are summed
// in pairs P_k = rho_2k + rho_2k+1 up to the first pair that is not positive (initial positive
// sequence), each pair capped by the one before (initial monotone sequence). Autocovariances are
// computed only up to about that truncation point, which for well-mixing chains is a handful of
// lags.
double ess_of_split(std::span<const double> split, const SplitLayout& layout) {
  const size_t n = layout.length;
  const double n_real = static_cast<double>(n);
  const double chains_real = static_cast<double>(layout.chains);

  std::vector<double> centred(split.size());
  std::vector<double> chain_means(layout.chains);
  double mean_acov0 = 0;
  for (size_t k = 0; k < layout.chains; ++k) {
    const std::span<const double> chain = layout.chain(split, k);
    chain_means[k] = shifted_mean(chain);
    for (size_t i = 0; i < n; ++i)
      centred[k * n + i] = chain[i] - chain_means[k];
    mean_acov0 += dot(&centred[k * n], &centred[k * n], n) / n_real;
  }
  mean_acov0 /= chains_real;
  const double within = mean_acov0 * n_real / (n_real - 1);
  const double pooled = (n_real - 1) / n_real * within + sample_variance(chain_means);
  if (!(pooled > 0) || !std::isfinite(pooled)) return kNaN;

  // Pairs go up to lag n - 3 at most (pair 0 always, n >= 2): the last lags average only one or
  // two products per chain. Stan and the posterior package stop there too.
  const size_t last_lag = n >= 4 ? n - 3 : 1;
  // lag_sums[t] = sum over chains and i of d_i d_{i+t}, filled a block of lags at a time: each
  // chain is visited once per block while it sits in L1 cache, where one pass per lag would
  // stream every chain from memory again for each lag. Blocks double from 8 to 64 lags, so the
  // lags computed past the truncation point are at most about as many as those before it.
  std::vector<double> lag_sums;
  auto autocorrelation = [&](size_t lag) {
    if (lag >= lag_sums.size()) {
      const size_t first = lag_sums.size();
      const size_t count = std::min(std::clamp<size_t>(first, 8, 64), last_lag + 1 - first);
      lag_sums.resize(first + count, 0.0);
      // With every chain constant all autocovariances are 0; skipping the sums keeps stuck chains
      // (rho_t = 1 at every lag, so no truncation) from costing n^2 per chain.
      if (within > 0)
        for (size_t k = 0; k < layout.chains; ++k)
          for (size_t t = first; t < first + count; ++t)
            lag_sums[t] += dot(&centred[k * n], &centred[k * n + t], n - t);
    }
    return 1 - (within - lag_sums[lag] / n_real / chains_real) / pooled;
  };

  double pair_sum = 0;  // sum of the accepted (monotone) pairs
  double previous_pair = std::numeric_limits<double>::infinity();
  // Like Stan, count the even term of the first rejected pair when it is positive: antithetic
  // chains (negative odd lags) are otherwise truncated just before a large positive term.
  double rejected_even_term = 0;
  // When every pair up to last_lag is positive (chains far from mixed), all of them count.
  for (size_t lag = 0; lag + 1 <= last_lag; lag += 2) {
    const double even = lag == 0 ? 1.0 : autocorrelation(lag);
    const double pair = even + autocorrelation(lag + 1);
    if (!(pair > 0)) {
      if (even > 0) rejected_even_term = even;
      break;
    }
    previous_pair = std::min(pair, previous_pair);
    pair_sum += previous_pair;
  }
  const double draws = chains_real * n_real;
  // tau = 1 + 2 sum_{t >= 1} rho_t; the cap keeps antithetic chains' ESS at most S log10 S.
  const double tau = std::max(-1 + 2 * pair_sum + rejected_even_term, 1 / std::log10(draws));
  return draws / tau;
}

struct SortedDraw {
  double value;
  size_t position;  // position in the split layout; SplitLayout::size() when left out
};

// Unsigned key in the order of the (finite) doubles: flip every bit of negatives, the sign bit of
// the rest. -0 gets the key just below +0; they stay adjacent, so ties still group them.
uint64_t order_key(double value) {
  const uint64_t bits = std::bit_cast<uint64_t>(value);
  return bits >> 63 ? ~bits : bits | (uint64_t{1} << 63);
}

// Sorts by value with a least-significant-digit radix sort, 11 bits a pass: about 2.5 times
// faster than std::sort for millions of draws (4096 chains x 1000), where sorting dominates.
void sort_by_value(std::vector<SortedDraw>& draws) {
  constexpr unsigned kDigitBits = 11;
  constexpr unsigned kPasses = (64 + kDigitBits - 1) / kDigitBits;
  constexpr size_t kBuckets = size_t{1} << kDigitBits;
  auto digit = [](const SortedDraw& d, unsigned pass) {
    return (order_key(d.value) >> (pass * kDigitBits)) & (kBuckets - 1);
  };
  std::vector<std::array<size_t, kBuckets>> starts(kPasses);
  for (auto& counts : starts)
    counts.fill(0);
  for (const SortedDraw& d : draws)
    for (unsigned pass = 0; pass < kPasses; ++pass)
      ++starts[pass][digit(d, pass)];

  std::vector<SortedDraw> scratch(draws.size());
  for (unsigned pass = 0; pass < kPasses; ++pass) {
    std::array<size_t, kBuckets>& counts = starts[pass];
    // A digit shared by every draw (the high exponent bits, usually) would only copy.
    if (std::find(counts.begin(), counts.end(), draws.size()) != counts.end()) continue;
    size_t start = 0;
    for (size_t& count : counts)
      start += std::exchange(count, start);
    for (const SortedDraw& d : draws)
      scratch[counts[digit(d, pass)]++] = d;
    draws.swap(scratch);
  }
}

// Rank normalisation: ranks r from 1 with ties averaged, then the normal score
// Phi^-1((r - 3/8) / (S + 1/4)) (Blom's offset) of each of the S draws.
double normal_score(double rank, double count) {
  return inverse_normal_cdf((rank - 0.375) / (count + 0.25));
}

// Normal scores of the integer ranks 1..S, computed once for the bulk and the folded draws.
std::vector<double> integer_rank_scores(size_t count) {
  std::vector<double> scores(count);
  for (size_t i = 0; i < count; ++i)
    scores[i] = normal_score(static_cast<double>(i + 1), static_cast<double>(count));
  return scores;
}

// Writes the normal scores of the kept draws, given in ascending order of `value`, into `scores`
// at their split-layout positions.
void write_normal_scores(const std::vector<SortedDraw>& ascending,
                         const std::vector<double>& integer_scores, std::vector<double>& scores) {
  size_t begin = 0;
  while (begin < ascending.size()) {
    size_t end = begin + 1;
    while (end < ascending.size() && ascending[end].value == ascending[begin].value)
      ++end;
    // Ranks begin + 1 .. end share their average.
    const double score = end == begin + 1 ? integer_scores[begin]
                                          : normal_score(0.5 * static_cast<double>(begin + 1 + end),
                                                         static_cast<double>(ascending.size()));
    for (size_t i = begin; i < end; ++i)
      scores[ascending[i].position] = score;
    begin = end;
  }
}

// Kept draws in ascending order of |x - median|: the draws below the median, walked backwards,
// merged with those from the median up. No second sort is needed.
std::vector<SortedDraw> folded_ascending(const std::vector<SortedDraw>& ascending, double median) {
  const auto upper_begin =
      std::partition_point(ascending.begin(), ascending.end(),
                           [median](const SortedDraw& d) { return d.value < median; });
  std::vector<SortedDraw> folded;
  folded.reserve(ascending.size());
  auto below = std::make_reverse_iterator(upper_begin);
  auto upper = upper_begin;
  while (below != ascending.rend() || upper != ascending.end()) {
    const bool take_below =
        upper == ascending.end() ||
        (below != ascending.rend() && median - below->value <= upper->value - median);
    const SortedDraw& next = take_below ? *below++ : *upper++;
    folded.push_back({std::abs(next.value - median), next.position});
  }
  return folded;
}

std::vector<double> quantile_indicators(const std::vector<SortedDraw>& ascending, double bound,
                                        size_t size) {
  std::vector<double> indicators(size);
  for (const SortedDraw& d : ascending)
    indicators[d.position] = d.value <= bound ? 1.0 : 0.0;
  return indicators;
}

// Max (for R-hat) or min (for tail ESS) over the parts that are defined; NaN when none is.
double max_defined(double a, double b) {
  return std::isnan(a) ? b : std::isnan(b) ? a : std::max(a, b);
}
double min_defined(double a, double b) {
  return std::isnan(a) ? b : std::isnan(b) ? a : std::min(a, b);
}

template <typename ValueAt>
double interpolated_quantile(size_t count, double probability, ValueAt value_at) {
  const double h = static_cast<double>(count - 1) * probability;
  const size_t below = static_cast<size_t>(std::floor(h));
  if (below + 1 >= count) return value_at(count - 1);
  const double fraction = h - static_cast<double>(below);
  return value_at(below) + fraction * (value_at(below + 1) - value_at(below));
}

}  // namespace

double quantile_of_sorted(std::span<const double> sorted, double probability) {
  return interpolated_quantile(sorted.size(), probability, [&](size_t i) { return sorted[i]; });
}

double split_rhat(std::span<const double> draws, size_t chains, size_t draws_per_chain) {
  if (draws.size() != chains * draws_per_chain) return kNaN;
  if (chains == 0 || draws_per_chain < kMinDrawsToDiagnose || !all_finite(draws)) return kNaN;
  return rhat_of_split(split_copy(draws, chains, draws_per_chain),
                       SplitLayout(chains, draws_per_chain));
}

double split_ess(std::span<const double> draws, size_t chains, size_t draws_per_chain) {
  if (draws.size() != chains * draws_per_chain) return kNaN;
  if (chains == 0 || draws_per_chain < kMinDrawsToDiagnose || !all_finite(draws)) return kNaN;
  return ess_of_split(split_copy(draws, chains, draws_per_chain),
                      SplitLayout(chains, draws_per_chain));
}

Expected<ParameterSummary> summarize(std::span<const double> draws, size_t chains,
                                     size_t draws_per_chain) {
  if (draws.size() != chains * draws_per_chain)
    return Error{fmt::format("{} draws do not make {} chains of {} draws", draws.size(), chains,
                             draws_per_chain)};
  ParameterSummary summary{kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN};
  if (draws.empty() || !all_finite(draws)) return summary;

  summary.mean = shifted_mean(draws);
  if (draws.size() > 1) summary.sd = std::sqrt(sample_variance(draws));

  const SplitLayout layout(chains, draws_per_chain);
  std::vector<SortedDraw> ascending(draws.size());
  for (size_t c = 0; c < chains; ++c)
    for (size_t i = 0; i < draws_per_chain; ++i)
      ascending[c * draws_per_chain + i] = {draws[c * draws_per_chain + i],
                                            layout.position(c, i, draws_per_chain)};
  sort_by_value(ascending);
  auto sorted_value = [&](size_t i) { return ascending[i].value; };
  summary.q5 = interpolated_quantile(ascending.size(), 0.05, sorted_value);
  summary.q50 = interpolated_quantile(ascending.size(), 0.50, sorted_value);
  summary.q95 = interpolated_quantile(ascending.size(), 0.95, sorted_value);

  if (draws_per_chain < kMinDrawsToDiagnose || ascending.front().value == ascending.back().value)
    return summary;

  // From here on only the draws the split chains keep take part, as in the paper.
  std::erase_if(ascending, [&](const SortedDraw& d) { return d.position == layout.size(); });

  const std::vector<double> integer_scores = integer_rank_scores(layout.size());
  std::vector<double> bulk_scores(layout.size());
  write_normal_scores(ascending, integer_scores, bulk_scores);
  std::vector<double> folded_scores(layout.size());
  write_normal_scores(folded_ascending(ascending, summary.q50), integer_scores, folded_scores);

  summary.rhat =
      max_defined(rhat_of_split(bulk_scores, layout), rhat_of_split(folded_scores, layout));
  summary.ess_bulk = ess_of_split(bulk_scores, layout);
  summary.ess_tail =
      min_defined(ess_of_split(quantile_indicators(ascending, summary.q5, layout.size()), layout),
                  ess_of_split(quantile_indicators(ascending, summary.q95, layout.size()), layout));
  summary.mcse_mean =
      summary.sd / std::sqrt(ess_of_split(split_copy(draws, chains, draws_per_chain), layout));
  return summary;
}

// Acklam's rational approximation ("An algorithm for computing the inverse normal cumulative
// distribution function", 2003; relative error below 1.15e-9), then one Halley step on
// Phi(x) - p with Phi from std::erf / std::erfc. The step's cubic convergence leaves only
// rounding error: within 1.1e-15 relative of Wichura's AS241 (measured on 27,800 points over
// [1e-300, 1 - 1e-16]). Values above 1/2 are mirrored (1 - p is exact there) so the upper tail is
// as accurate as the lower. For subnormal p the step overflows and Acklam's value stands.
double inverse_normal_cdf(double probability) {
  if (std::isnan(probability) || probability < 0 || probability > 1) return kNaN;
  if (probability == 0) return -std::numeric_limits<double>::infinity();
  if (probability == 1) return std::numeric_limits<double>::infinity();
  if (probability > 0.5) return -inverse_normal_cdf(1 - probability);

  static constexpr std::array<double, 6> a = {-3.969683028665376e+01, 2.209460984245205e+02,
                                              -2.759285104469687e+02, 1.383577518672690e+02,
                                              -3.066479806614716e+01, 2.506628277459239e+00};
  static constexpr std::array<double, 5> b = {-5.447609879822406e+01, 1.615858368580409e+02,
                                              -1.556989798598866e+02, 6.680131188771972e+01,
                                              -1.328068155288572e+01};
  static constexpr std::array<double, 6> c = {-7.784894002430293e-03, -3.223964580411365e-01,
                                              -2.400758277161838e+00, -2.549732539343734e+00,
                                              4.374664141464968e+00,  2.938163982698783e+00};
  static constexpr std::array<double, 4> d = {7.784695709041462e-03, 3.224671290700398e-01,
                                              2.445134137142996e+00, 3.754408661907416e+00};
  constexpr double kLowerRegion = 0.02425;

  double x;
  if (probability < kLowerRegion) {
    const double q = std::sqrt(-2 * std::log(probability));
    x = (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
        ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
  } else {
    const double q = probability - 0.5;
    const double r = q * q;
    x = (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q /
        (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1);
  }

  // Residual Phi(x) - p. Near the centre through erf and p - 1/2 (exact for p >= 1/4), so that
  // small quantiles keep their relative accuracy; in the tail through erfc, whose argument is
  // >= 0 here (x <= 0), where it stays accurate down to the smallest p.
  const double error = probability >= 0.25
                           ? 0.5 * std::erf(x / std::numbers::sqrt2) - (probability - 0.5)
                           : 0.5 * std::erfc(-x / std::numbers::sqrt2) - probability;
  const double step = error * std::sqrt(2 * std::numbers::pi) * std::exp(0.5 * x * x);
  const double refined = x - step / (1 + 0.5 * x * step);
  // exp overflows for |x| > 37.6 (p below about 1e-309, subnormal); keep Acklam's value there.
  return std::isfinite(refined) ? refined : x;
}

std::string format_summary_table(const std::vector<NamedSummary>& parameters) {
  const std::vector<std::string> header = {"name", "mean", "sd",   "mcse",     "q5",
                                           "q50",  "q95",  "rhat", "ess_bulk", "ess_tail"};
  std::vector<std::vector<std::string>> rows = {header};
  for (const auto& [name, s] : parameters) {
    // 4 significant digits for values; ESS is a count; R-hat matters in its third decimal.
    rows.push_back({name, fmt::format("{:.4g}", s.mean), fmt::format("{:.4g}", s.sd),
                    fmt::format("{:.4g}", s.mcse_mean), fmt::format("{:.4g}", s.q5),
                    fmt::format("{:.4g}", s.q50), fmt::format("{:.4g}", s.q95),
                    fmt::format("{:.3f}", s.rhat), fmt::format("{:.0f}", s.ess_bulk),
                    fmt::format("{:.0f}", s.ess_tail)});
  }

  std::vector<size_t> widths(header.size(), 0);
  for (const auto& row : rows)
    for (size_t col = 0; col < row.size(); ++col)
      widths[col] = std::max(widths[col], row[col].size());

  std::string table;
  for (const auto& row : rows) {
    // Names are left-aligned, numbers right-aligned so their digits line up.
    table += fmt::format("{:<{}}", row[0], widths[0]);
    for (size_t col = 1; col < row.size(); ++col)
      table += fmt::format("  {:>{}}", row[col], widths[col]);
    table += '\n';
  }
  return table;
}

}  // namespace ab::sample
