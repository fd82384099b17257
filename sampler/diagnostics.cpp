#include "sampler/diagnostics.h"

#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "sampler/summary.h"

namespace ab::sample {
namespace {

// "3 of 4000 (0.075%)", "1999 of 2000 (99.9%)", "4000 of 4000 (100%)": two significant digits
// below 10%, one decimal above, never "1e+02%"; a part short of the whole never shows as 100%.
std::string share(uint64_t part, uint64_t whole) {
  const double percent =
      whole ? 100.0 * static_cast<double>(part) / static_cast<double>(whole) : 0.0;
  return fmt::format("{} of {} ({:.{}g}%)", part, whole,
                     percent < 10 ? percent : std::floor(percent * 10) / 10, percent < 10 ? 2 : 3);
}

// The parameters whose `value` fails `bad`, worst first as `worse` orders them: the count and the
// worst one's name and value, or nothing.
template <typename Value, typename Bad, typename Worse>
std::string worst(const std::vector<NamedSummary>& parameters, Value value, Bad bad, Worse worse,
                  uint32_t& count) {
  const NamedSummary* found = nullptr;
  count = 0;
  for (const NamedSummary& p : parameters) {
    const double v = value(p.summary);
    if (!bad(v)) continue;
    ++count;
    if (!found || worse(v, value(found->summary))) found = &p;
  }
  return found ? fmt::format("{} {:.3g}", found->name, value(found->summary)) : "";
}

// NaN fails the checks: why a parameter's R-hat or ESS is NaN (summarize() leaves them undefined):
// too few draws, draws that are not finite, or draws that never change.
enum class Undiagnosed { TooFewDraws, NotFinite, Constant };

std::vector<FitWarning> undiagnosed_warnings(uint32_t draws,
                                             const std::vector<NamedSummary>& parameters) {
  struct Found {
    uint32_t count = 0;
    const NamedSummary* first = nullptr;
  };
  Found found[3];
  for (const NamedSummary& p : parameters) {
    const ParameterSummary& v = p.summary;
    if (!std::isnan(v.rhat) && !std::isnan(v.ess_bulk) && !std::isnan(v.ess_tail)) continue;
    const Undiagnosed why = draws < kMinDrawsToDiagnose ? Undiagnosed::TooFewDraws
                            : !std::isfinite(v.mean)    ? Undiagnosed::NotFinite
                                                        : Undiagnosed::Constant;
    Found& f = found[static_cast<int>(why)];
    if (f.count++ == 0) f.first = &p;
  }
  const char* reasons[3] = {
      "too few draws to diagnose convergence: the chains may not have mixed; draw more",
      "some draws are NaN or infinite: the fit is not usable as it stands",
      "their draws never change: a chain stuck at one value, or a bound too narrow for float32 "
      "(docs/nuts.md); the fit cannot be checked"};
  std::vector<FitWarning> out;
  for (int why = 0; why < 3; ++why)
    if (found[why].count)
      out.push_back(
          {"undiagnosed",
           fmt::format("R-hat and ESS are undefined (NaN) for {} of {} parameters (first: {}) "
                       "with {} draws per chain{}: {}",
                       found[why].count, parameters.size(), found[why].first->name, draws,
                       why == 0 ? fmt::format(" (they need at least {})", kMinDrawsToDiagnose) : "",
                       reasons[why])});
  return out;
}

}  // namespace

double e_bfmi(const float* energy, uint32_t draws) {
  if (draws < 2) return std::numeric_limits<double>::quiet_NaN();
  double mean = 0;
  for (uint32_t i = 0; i < draws; ++i)
    mean += energy[i];
  mean /= draws;
  double steps = 0, spread = 0;
  for (uint32_t i = 0; i < draws; ++i) {
    if (i > 0) steps += (energy[i] - double{energy[i - 1]}) * (energy[i] - double{energy[i - 1]});
    spread += (energy[i] - mean) * (energy[i] - mean);
  }
  return steps / spread;
}

std::vector<FitWarning> fit_warnings(const FitStatistics& s,
                                     const std::vector<NamedSummary>& parameters) {
  std::vector<FitWarning> out;
  const uint64_t transitions = uint64_t{s.chains} * s.draws;
  uint64_t divergent = 0, at_max_depth = 0;
  for (uint64_t k = 0; k < transitions; ++k) {
    divergent += s.divergent[k] != 0;
    at_max_depth += s.tree_depth[k] >= static_cast<int32_t>(s.max_depth);
  }
  if (divergent)
    out.push_back({"divergences",
                   fmt::format("{} transitions after warm-up were divergent: the sampler could not "
                               "follow the posterior's curvature there and the fit may be biased; "
                               "raise --target-accept (e.g. 0.95) or reparameterise the model "
                               "(e.g. non-centred)",
                               share(divergent, transitions))});
  if (at_max_depth)
    out.push_back(
        {"max_tree_depth",
         fmt::format("{} transitions hit the maximum tree depth {}: the trajectories were "
                     "cut short (an efficiency problem, not a bias); raise --max-depth or "
                     "rescale the parameters",
                     share(at_max_depth, transitions), s.max_depth)});
  for (uint32_t chain = 0; chain < s.chains; ++chain) {
    const double bfmi = e_bfmi(s.energy.data() + uint64_t{chain} * s.draws, s.draws);
    if (bfmi < kMinEbfmi)
      out.push_back(
          {"e_bfmi",
           fmt::format("chain {}: E-BFMI {:.3f} is below {}: resampling the momentum "
                       "moves the energy too little to explore the posterior's tails; "
                       "reparameterise the model (heavy tails, funnels) or warm up longer",
                       chain, bfmi, kMinEbfmi)});
  }
  for (FitWarning& w : undiagnosed_warnings(s.draws, parameters))
    out.push_back(std::move(w));
  uint32_t count = 0;
  const auto rhat = [](const ParameterSummary& p) { return p.rhat; };
  std::string name = worst(
      parameters, rhat, [](double v) { return v > kMaxRhat; },
      [](double a, double b) { return a > b; }, count);
  if (count)
    out.push_back({"rhat", fmt::format("R-hat is above {} for {} of {} parameters (worst: {}): the "
                                       "chains do not agree yet; run more warm-up and draws, or "
                                       "look for multimodality or a poorly identified model",
                                       kMaxRhat, count, parameters.size(), name)});
  const double min_ess = kMinEssPerChain * s.chains;
  // rstan's rule is per chain; the bound the fit's ESS is held to is the total.
  const std::string bound = s.chains == 1 ? fmt::format("{}", kMinEssPerChain)
                                          : fmt::format("{:.0f} ({} per chain x {} chains)",
                                                        min_ess, kMinEssPerChain, s.chains);
  const auto low = [min_ess](double v) { return v < min_ess; };
  const auto smaller = [](double a, double b) { return a < b; };
  for (const auto& [kind, label, field] :
       {std::tuple{"ess_bulk", "bulk", &ParameterSummary::ess_bulk},
        std::tuple{"ess_tail", "tail", &ParameterSummary::ess_tail}}) {
    name = worst(
        parameters, [f = field](const ParameterSummary& p) { return p.*f; }, low, smaller, count);
    if (count)
      out.push_back({kind, fmt::format("{} ESS is below {} for {} of {} "
                                       "parameters (worst: {}): means, sds and {} are unreliable; "
                                       "draw more, or reparameterise",
                                       label, bound, count, parameters.size(), name,
                                       std::string(label) == "bulk" ? "medians" : "quantiles")});
  }
  return out;
}

}  // namespace ab::sample
