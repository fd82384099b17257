// One chain of a fit as a Stan CSV file, the format CmdStan writes and cmdstanpy, ArviZ's
// from_cmdstan and R's posterior read (the CmdStan User's Guide, "Stan CSV File Format"): the
// configuration as `#` comments, the header row, the adaptation's result, one row per draw, the
// timing. Values are written with 9 significant digits (`sig_figs = 9`), so every float32 draw
// reads back exactly.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "autobatch/sampler.h"

namespace ab::sample {
namespace {

// A float as CmdStan writes one: shortest exact text, nan and inf as C++ streams them.
std::string number(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return fmt::format("{:.9g}", v);
}

// A coordinate's name split into its field and indices: "m[1][2]" is ("m", {1, 2}).
struct IndexedName {
  std::string field;
  std::vector<unsigned long> indices;
};
IndexedName split_name(const std::string& name) {
  IndexedName out{name.substr(0, name.find('[')), {}};
  for (size_t open = name.find('['); open != std::string::npos; open = name.find('[', open + 1))
    out.indices.push_back(std::stoul(name.substr(open + 1)));
  return out;
}

// Comment text on one line: a control byte (a newline in a file name) as \xNN, so the `#` block
// stays one comment per line.
std::string one_line(const std::string& text) {
  std::string out;
  for (const char c : text)
    out += static_cast<unsigned char>(c) < 0x20 || c == 0x7f
               ? fmt::format("\\x{:02x}", static_cast<unsigned char>(c))
               : std::string(1, c);
  return out;
}

}  // namespace

std::vector<uint32_t> cmdstan_order(const std::vector<std::string>& names) {
  std::vector<IndexedName> split;
  for (const std::string& name : names)
    split.push_back(split_name(name));
  // A field's coordinates are contiguous (row-major); Stan's columns run its first index fastest.
  std::vector<uint32_t> field_of(names.size());
  for (size_t j = 1; j < names.size(); ++j)
    field_of[j] = field_of[j - 1] + (split[j].field != split[j - 1].field);
  std::vector<uint32_t> order(names.size());
  std::iota(order.begin(), order.end(), 0u);
  std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
    if (field_of[a] != field_of[b]) return field_of[a] < field_of[b];
    return std::lexicographical_compare(split[a].indices.rbegin(), split[a].indices.rend(),
                                        split[b].indices.rbegin(), split[b].indices.rend());
  });
  return order;
}

std::string cmdstan_name(const std::string& name) {
  std::string out;
  size_t i = 0;
  while (i < name.size()) {
    if (name[i] != '[') {
      out += name[i++];
      continue;
    }
    const size_t close = name.find(']', i);
    out += fmt::format(".{}", std::stoul(name.substr(i + 1, close - i - 1)) + 1);
    i = close + 1;
  }
  return out;
}

std::string cmdstan_csv(const Fit& fit, const std::string& model_name, uint32_t chain,
                        std::span<const float> draws) {
  if (chain >= fit.chains || chain >= fit.draws_per_chain.size())
    throw std::out_of_range(fmt::format("cmdstan_csv: no chain {} in a fit of {} chains (0 to {})",
                                        chain, fit.chains, fit.chains - 1));
  if (draws.size() < uint64_t{fit.draws_per_chain[chain]} * fit.dimension)
    throw std::out_of_range(
        fmt::format("cmdstan_csv: chain {} has {} draws of {} parameters but {} values were given",
                    chain, fit.draws_per_chain[chain], fit.dimension, draws.size()));
  const Options& o = fit.options;
  const bool adapt = o.warmup > 0;
  std::string out;
  // The configuration, in CmdStan's layout (the keys its readers look for).
  out += "# stan_version_major = 2\n# stan_version_minor = 33\n# stan_version_patch = 0\n";
  out += fmt::format("# model = {}\n", one_line(model_name));
  out += "# method = sample (Default)\n#   sample\n";
  out += fmt::format("#     num_samples = {}\n#     num_warmup = {}\n", o.draws, o.warmup);
  out += "#     save_warmup = 0 (Default)\n#     thin = 1 (Default)\n";
  out += fmt::format("#     adapt\n#       engaged = {}\n", adapt ? 1 : 0);
  out += "#       gamma = 0.05 (Default)\n";
  out += fmt::format("#       delta = {}\n", number(o.target_accept));
  out += "#       kappa = 0.75 (Default)\n#       t0 = 10 (Default)\n";
  out += "#       init_buffer = 75 (Default)\n#       term_buffer = 50 (Default)\n";
  out += "#       window = 25 (Default)\n";
  out += "#     algorithm = hmc (Default)\n#       hmc\n#         engine = nuts (Default)\n";
  out += fmt::format("#           nuts\n#             max_depth = {}\n", o.max_depth);
  out += fmt::format("#         metric = {}\n", o.adapt_metric ? "diag_e" : "unit_e");
  out += fmt::format("#         stepsize = {}\n", number(o.step_size));
  out += o.step_jitter == 0.0
             ? std::string("#         stepsize_jitter = 0 (Default)\n")
             : fmt::format("#         stepsize_jitter = {}\n", number(o.step_jitter));
  out += fmt::format("#     num_chains = {}\n", fit.chains);
  out += fmt::format("# id = {}\n", chain + 1);
  out += fmt::format("# init = {}\n", o.init.empty() ? "2 (Default)" : "user");
  out += fmt::format("# random\n#   seed = {}\n", o.seed);
  out += "# output\n#   sig_figs = 9\n";
  out += fmt::format("# autobatch: leaf_steps = {}, lanes = {} chains in one batch\n", o.leaf_steps,
                     fit.chains);

  const std::vector<uint32_t> columns = cmdstan_order(fit.parameter_names);
  out += "lp__,accept_stat__,stepsize__,treedepth__,n_leapfrog__,divergent__,energy__";
  for (const uint32_t j : columns)
    out += "," + cmdstan_name(fit.parameter_names[j]);
  out += "\n";

  if (chain < fit.inv_metrics.size() && !fit.inv_metrics[chain].empty()) {
    out +=
        fmt::format("# Adaptation terminated\n# Step size = {}\n", number(fit.step_sizes[chain]));
    out += fmt::format("# Diagonal elements of inverse mass matrix:\n# ");
    for (size_t j = 0; j < fit.inv_metrics[chain].size(); ++j)
      out += (j ? ", " : "") + number(fit.inv_metrics[chain][j]);
    out += "\n";
  }

  const DrawStatistics& s = fit.stats;
  const uint32_t D = fit.dimension;
  for (uint32_t i = 0; i < fit.draws_per_chain[chain]; ++i) {
    const uint64_t k = uint64_t{chain} * fit.draws + i;
    out += fmt::format("{},{},{},{},{},{},{}", number(s.lp[k]), number(s.accept_stat[k]),
                       number(s.step_size[k]), s.tree_depth[k], s.n_leapfrog[k],
                       s.divergent[k] ? 1 : 0, number(s.energy[k]));
    for (const uint32_t j : columns)
      out += "," + number(draws[uint64_t{i} * D + j]);
    out += "\n";
  }

  // The chains run together in one batch: warm-up and sampling are not timed apart.
  const double seconds = fit.run_stats.wall_seconds;
  out += fmt::format("# \n#  Elapsed Time: {} seconds (Total)\n# \n", number(seconds));
  return out;
}

}  // namespace ab::sample
