// Posterior summaries for `autobatch sample`: on draws whose true behaviour is known (iid normal,
// AR(1) with a known effective sample size, chains that disagree in location or in scale) the
// estimates land where theory says; degenerate draws give NaN instead of failing; the inverse
// normal CDF matches reference values; the table has aligned columns.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "sampler/summary.h"

namespace ab::sample {
namespace {

// Chain-major draws; chain c is normal with mean means[c] and standard deviation scales[c].
std::vector<double> normal_chains(const std::vector<double>& means,
                                  const std::vector<double>& scales, size_t draws_per_chain,
                                  uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal;
  std::vector<double> draws;
  for (size_t c = 0; c < means.size(); ++c)
    for (size_t i = 0; i < draws_per_chain; ++i)
      draws.push_back(means[c] + scales[c] * normal(rng));
  return draws;
}

std::vector<double> standard_normal_chains(size_t chains, size_t draws_per_chain, uint64_t seed) {
  return normal_chains(std::vector<double>(chains, 0.0), std::vector<double>(chains, 1.0),
                       draws_per_chain, seed);
}

// Stationary AR(1): x_i = rho x_{i-1} + e_i, started from the stationary distribution.
std::vector<double> ar1_chains(size_t chains, size_t draws_per_chain, double rho, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal;
  std::vector<double> draws;
  for (size_t c = 0; c < chains; ++c) {
    double x = normal(rng) / std::sqrt(1 - rho * rho);
    for (size_t i = 0; i < draws_per_chain; ++i) {
      draws.push_back(x);
      x = rho * x + normal(rng);
    }
  }
  return draws;
}

bool all_nan(const ParameterSummary& s) {
  for (double v : {s.mean, s.sd, s.mcse_mean, s.q5, s.q50, s.q95, s.rhat, s.ess_bulk, s.ess_tail})
    if (!std::isnan(v)) return false;
  return true;
}

// Standard normal CDF, independent of the code under test.
double normal_cdf(double x) {
  return 0.5 * std::erfc(-x / std::sqrt(2.0));
}

TEST_CASE("sample summary: inverse normal CDF matches reference values") {
  struct Known {
    double probability;
    double quantile;
  };
  // Reference quantiles of the standard normal (to double precision).
  for (const Known& k : {Known{0.975, 1.959963984540054}, Known{0.95, 1.6448536269514722},
                         Known{0.99, 2.3263478740408408}, Known{0.001, -3.090232306167813},
                         Known{1e-10, -6.361340902404056}, Known{0.8413447460685429, 1.0},
                         Known{0.02425, -1.9729610513118845}}) {
    CAPTURE(k.probability);
    CHECK(inverse_normal_cdf(k.probability) == doctest::Approx(k.quantile).epsilon(1e-12));
  }
  CHECK(inverse_normal_cdf(0.5) == 0.0);
  CHECK(inverse_normal_cdf(0.0) == -INFINITY);
  CHECK(inverse_normal_cdf(1.0) == INFINITY);
  CHECK(std::isnan(inverse_normal_cdf(-0.1)));
  CHECK(std::isnan(inverse_normal_cdf(1.1)));
  CHECK(std::isnan(inverse_normal_cdf(NAN)));
}

TEST_CASE("sample summary: inverse normal CDF inverts the CDF from the far tail to the centre") {
  // Phi(Phi^-1(p)) = p; the tolerance allows for the CDF's own slope, |x| relative at x.
  for (double p = 1e-300; p < 0.5; p *= 3.7) {
    CAPTURE(p);
    CHECK(normal_cdf(inverse_normal_cdf(p)) == doctest::Approx(p).epsilon(1e-12));
  }
  for (double p = 0.5; p < 1; p += 0.0173) {
    CAPTURE(p);
    CHECK(normal_cdf(inverse_normal_cdf(p)) == doctest::Approx(p).epsilon(1e-14));
    CHECK(inverse_normal_cdf(1 - p) == -inverse_normal_cdf(p));
  }
}

TEST_CASE("sample summary: quantiles interpolate linearly between order statistics") {
  const std::vector<double> sorted = {1, 2, 3, 4, 5};
  CHECK(quantile_of_sorted(sorted, 0.0) == 1);
  CHECK(quantile_of_sorted(sorted, 0.5) == 3);
  CHECK(quantile_of_sorted(sorted, 0.25) == 2);
  CHECK(quantile_of_sorted(sorted, 0.1) == doctest::Approx(1.4));
  CHECK(quantile_of_sorted(sorted, 0.95) == doctest::Approx(4.8));
  CHECK(quantile_of_sorted(sorted, 1.0) == 5);
  CHECK(quantile_of_sorted(std::vector<double>{7}, 0.3) == 7);
}

TEST_CASE("sample summary: iid standard normal draws") {
  const size_t chains = 4, draws_per_chain = 1000;
  const double total = chains * draws_per_chain;
  const std::vector<double> draws = standard_normal_chains(chains, draws_per_chain, 20240611);
  const ParameterSummary s = *summarize(draws, chains, draws_per_chain);

  CHECK(std::abs(s.mean) < 4 / std::sqrt(total));
  CHECK(s.sd == doctest::Approx(1).epsilon(0.05));
  CHECK(s.q5 == doctest::Approx(-1.645).epsilon(0.07));
  CHECK(std::abs(s.q50) < 0.08);
  CHECK(s.q95 == doctest::Approx(1.645).epsilon(0.07));
  std::vector<double> sorted = draws;
  std::sort(sorted.begin(), sorted.end());
  CHECK(s.q5 == quantile_of_sorted(sorted, 0.05));
  CHECK(s.q50 == quantile_of_sorted(sorted, 0.5));
  CHECK(s.q95 == quantile_of_sorted(sorted, 0.95));
  CHECK(s.rhat < 1.01);
  CHECK(s.rhat > 0.99);
  CHECK(s.ess_bulk > 0.7 * total);
  CHECK(s.ess_bulk < 1.3 * total);
  CHECK(s.ess_tail > 0.7 * total);
  CHECK(s.ess_tail < 1.3 * total);
  // Independent draws: the standard error of the mean is sd / sqrt(N).
  CHECK(s.mcse_mean == doctest::Approx(s.sd / std::sqrt(total)).epsilon(0.15));
}

TEST_CASE("sample summary: AR(1) chains have the theoretical effective sample size") {
  const double rho = 0.9;
  // Long enough that the estimate's own spread (about +-15% over seeds) sits inside the 30%.
  const size_t chains = 4, draws_per_chain = 10000;
  const double total = chains * draws_per_chain;
  const std::vector<double> draws = ar1_chains(chains, draws_per_chain, rho, 7);
  const ParameterSummary s = *summarize(draws, chains, draws_per_chain);

  // Integrated autocorrelation time of AR(1): (1 + rho) / (1 - rho).
  const double expected_ess = total * (1 - rho) / (1 + rho);
  CHECK(s.ess_bulk == doctest::Approx(expected_ess).epsilon(0.3));
  CHECK(split_ess(draws, chains, draws_per_chain) == doctest::Approx(expected_ess).epsilon(0.3));
  const double stationary_sd = 1 / std::sqrt(1 - rho * rho);
  CHECK(s.mcse_mean == doctest::Approx(stationary_sd / std::sqrt(expected_ess)).epsilon(0.3));
  CHECK(s.rhat < 1.05);
}

TEST_CASE("sample summary: bulk and tail ESS depend only on the ranks of the draws") {
  const std::vector<double> draws = ar1_chains(4, 500, 0.5, 19);
  const ParameterSummary original = *summarize(draws, 4, 500);
  // Strictly increasing transforms keep every rank, so rank-normalised diagnostics are unchanged
  // to the last bit; the sort meets negative, positive and very large values on the way.
  for (auto transform :
       {+[](double x) { return std::exp(3 * x); }, +[](double x) { return 1e200 * x - 7; },
        +[](double x) { return std::atan(x) - 2; }}) {
    std::vector<double> transformed;
    for (double x : draws)
      transformed.push_back(transform(x));
    const ParameterSummary s = *summarize(transformed, 4, 500);
    CHECK(s.ess_bulk == original.ess_bulk);
    CHECK(s.ess_tail == original.ess_tail);
  }
}

TEST_CASE("sample summary: tied draws share their rank, -0 and +0 included") {
  std::vector<double> draws;
  for (double x : ar1_chains(4, 500, 0.5, 20))
    draws.push_back(std::round(x));  // a few distinct values, each heavily tied
  std::vector<double> negative_zeros = draws;
  for (double& x : negative_zeros)
    if (x == 0) x = -0.0;
  std::vector<double> mixed_zeros = negative_zeros;
  for (size_t i = 0; i < mixed_zeros.size(); i += 3)
    if (mixed_zeros[i] == 0) mixed_zeros[i] = 0.0;
  const ParameterSummary s = *summarize(draws, 4, 500);
  CHECK(std::isfinite(s.ess_bulk));
  for (const auto& variant : {negative_zeros, mixed_zeros}) {
    const ParameterSummary v = *summarize(variant, 4, 500);
    CHECK(v.rhat == s.rhat);
    CHECK(v.ess_bulk == s.ess_bulk);
    CHECK(v.ess_tail == s.ess_tail);
  }
}

TEST_CASE("sample summary: chains centred at different places have a large R-hat") {
  const std::vector<double> draws = normal_chains({0, 0, 3, 3}, {1, 1, 1, 1}, 1000, 11);
  const ParameterSummary s = *summarize(draws, 4, 1000);
  CHECK(s.rhat > 1.1);
  CHECK(s.ess_bulk < 0.1 * 4000);
}

TEST_CASE(
    "sample summary: chains with the same centre but different scales are caught by folding") {
  const std::vector<double> draws = normal_chains({0, 0, 0, 0}, {1, 1, 5, 5}, 1000, 12);
  // Split R-hat on the raw draws compares locations only and misses it ...
  CHECK(split_rhat(draws, 4, 1000) < 1.02);
  // ... the folded, rank-normalised part does not.
  CHECK(summarize(draws, 4, 1000)->rhat > 1.05);
}

TEST_CASE("sample summary: a drift within every chain is caught by splitting") {
  // Each chain moves from about -1.5 to 1.5; the chains agree with each other, their halves don't.
  const size_t chains = 4, draws_per_chain = 1000;
  std::vector<double> draws = standard_normal_chains(chains, draws_per_chain, 13);
  for (size_t c = 0; c < chains; ++c)
    for (size_t i = 0; i < draws_per_chain; ++i)
      draws[c * draws_per_chain + i] += 3.0 * i / draws_per_chain - 1.5;
  CHECK(summarize(draws, chains, draws_per_chain)->rhat > 1.1);
}

TEST_CASE("sample summary: one chain and odd chain lengths still work") {
  const ParameterSummary one_chain = *summarize(standard_normal_chains(1, 4000, 14), 1, 4000);
  CHECK(one_chain.rhat < 1.05);
  CHECK(one_chain.ess_bulk > 0.7 * 4000);
  CHECK(one_chain.ess_bulk < 1.3 * 4000);

  const ParameterSummary odd = *summarize(standard_normal_chains(4, 1001, 15), 4, 1001);
  CHECK(odd.rhat < 1.01);
  CHECK(odd.ess_bulk > 0.7 * 4000);
  CHECK(odd.ess_tail > 0.7 * 4000);

  // Four draws: two split chains of two draws, enough for every diagnostic.
  const ParameterSummary four = *summarize(std::vector<double>{0.3, -1.2, 0.8, 2.0}, 1, 4);
  CHECK(std::isfinite(four.rhat));
  CHECK(std::isfinite(four.ess_bulk));
  CHECK(std::isfinite(four.mcse_mean));
}

TEST_CASE("sample summary: degenerate draws give NaN where documented") {
  SUBCASE("fewer than 4 draws per chain: no R-hat or ESS, the plain statistics remain") {
    const ParameterSummary s = *summarize(std::vector<double>{1, 2, 3, 4, 5, 6}, 2, 3);
    CHECK(s.mean == doctest::Approx(3.5));
    CHECK(s.sd == doctest::Approx(std::sqrt(3.5)));
    CHECK(s.q50 == doctest::Approx(3.5));
    CHECK(std::isnan(s.rhat));
    CHECK(std::isnan(s.ess_bulk));
    CHECK(std::isnan(s.ess_tail));
    CHECK(std::isnan(s.mcse_mean));
  }
  SUBCASE("constant draws: sd 0, no R-hat or ESS") {
    const std::vector<double> draws(4 * 100, 0.1);
    const ParameterSummary s = *summarize(draws, 4, 100);
    CHECK(s.mean == 0.1);
    CHECK(s.sd == 0);
    CHECK(s.q5 == 0.1);
    CHECK(s.q95 == 0.1);
    CHECK(std::isnan(s.rhat));
    CHECK(std::isnan(s.ess_bulk));
    CHECK(std::isnan(s.ess_tail));
    CHECK(std::isnan(s.mcse_mean));
    CHECK(std::isnan(split_rhat(draws, 4, 100)));
    CHECK(std::isnan(split_ess(draws, 4, 100)));
  }
  SUBCASE("a NaN or an infinity anywhere: every statistic NaN") {
    std::vector<double> draws = standard_normal_chains(4, 100, 16);
    draws[137] = NAN;
    CHECK(all_nan(*summarize(draws, 4, 100)));
    CHECK(std::isnan(split_rhat(draws, 4, 100)));
    CHECK(std::isnan(split_ess(draws, 4, 100)));
    draws[137] = -INFINITY;
    CHECK(all_nan(*summarize(draws, 4, 100)));
  }
  SUBCASE("no draws at all") {
    CHECK(all_nan(*summarize({}, 0, 0)));
    CHECK(all_nan(*summarize({}, 4, 0)));
    CHECK(std::isnan(summarize(std::vector<double>{2.5}, 1, 1)->sd));
  }
  SUBCASE("draws that do not fill the chains are an error") {
    const auto s = summarize(std::vector<double>(10, 1.0), 4, 3);
    REQUIRE(!s.ok());
    CHECK(s.error() == "10 draws do not make 4 chains of 3 draws");
    CHECK(std::isnan(split_rhat(std::vector<double>(10, 1.0), 4, 3)));
  }
  SUBCASE("every chain stuck at its own value: R-hat infinite, ESS tiny") {
    std::vector<double> draws;
    for (double value : {1.0, 2.0, 3.0, 4.0})
      draws.insert(draws.end(), 1000, value);
    const ParameterSummary s = *summarize(draws, 4, 1000);
    CHECK(s.rhat == INFINITY);
    CHECK(s.ess_bulk < 10);
  }
  SUBCASE("a balanced two-valued parameter: folding carries no information, bulk R-hat remains") {
    std::mt19937_64 rng(17);
    std::vector<double> draws;
    for (int i = 0; i < 4000; ++i)
      draws.push_back(i % 2);
    std::shuffle(draws.begin(), draws.end(), rng);
    const ParameterSummary s = *summarize(draws, 4, 1000);
    CHECK(s.rhat < 1.01);
    CHECK(s.ess_bulk > 0.7 * 4000);
    CHECK(std::isfinite(s.ess_tail));
  }
}

TEST_CASE("sample summary: the table has a header and one aligned row per parameter") {
  const std::vector<double> draws = standard_normal_chains(4, 200, 18);
  std::vector<double> shifted = draws;
  for (double& v : shifted)
    v = 1234.5 + 100 * v;
  const std::vector<NamedSummary> parameters = {
      {"mu", *summarize(draws, 4, 200)},
      {"a_much_longer_name", *summarize(shifted, 4, 200)},
      {"constant", *summarize(std::vector<double>(800, 2.0), 4, 200)}};
  const std::string table = format_summary_table(parameters);

  std::vector<std::string> lines;
  std::istringstream stream(table);
  for (std::string line; std::getline(stream, line);)
    lines.push_back(line);
  REQUIRE(lines.size() == parameters.size() + 1);

  std::vector<std::string> header_words;
  std::istringstream header(lines[0]);
  for (std::string word; header >> word;)
    header_words.push_back(word);
  CHECK(header_words == std::vector<std::string>{"name", "mean", "sd", "mcse", "q5", "q50", "q95",
                                                 "rhat", "ess_bulk", "ess_tail"});

  for (size_t row = 0; row < lines.size(); ++row) {
    CAPTURE(lines[row]);
    CHECK(lines[row].size() == lines[0].size());
    // Every row has ten cells, and each right-aligned cell ends where its header does.
    std::vector<size_t> cell_ends;
    for (size_t i = 0; i < lines[row].size(); ++i)
      if (lines[row][i] != ' ' && (i + 1 == lines[row].size() || lines[row][i + 1] == ' '))
        cell_ends.push_back(i);
    REQUIRE(cell_ends.size() == 10);
    if (row > 0) {
      std::vector<size_t> header_ends;
      for (size_t i = 0; i < lines[0].size(); ++i)
        if (lines[0][i] != ' ' && (i + 1 == lines[0].size() || lines[0][i + 1] == ' '))
          header_ends.push_back(i);
      for (size_t col = 1; col < 10; ++col)
        CHECK(cell_ends[col] == header_ends[col]);
    }
  }
  CHECK(lines[1].rfind("mu ", 0) == 0);
  CHECK(lines[3].find("nan") != std::string::npos);
}

}  // namespace
}  // namespace ab::sample
