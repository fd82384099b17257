// FitWriter and write_fit (autobatch/sampler.h): a fit's files as one set, for the CLI, Python
// and an embedding app alike.
#include <cmath>
#include <filesystem>
#include <type_traits>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "autobatch/npy.h"
#include "autobatch/sampler.h"
#include "autobatch/user_input.h"
#include "sampler/fit_files.h"

namespace ab::sample {
namespace {

// The per-draw statistics beside draws.npy, [chains, draws] each: the file, its type and its
// words (a missing draw holds NaN, -1 or false, as the sampler left it).
struct DrawStatisticFile {
  const char* file;
  Scalar type;
  std::vector<uint32_t> words;
};
template <typename T>
std::vector<uint32_t> as_words(const std::vector<T>& values) {
  std::vector<uint32_t> out(values.size());
  for (size_t k = 0; k < values.size(); ++k) {
    if constexpr (std::is_same_v<T, float>)
      out[k] = float_bits(values[k]);
    else
      out[k] = static_cast<uint32_t>(values[k]);
  }
  return out;
}
std::vector<DrawStatisticFile> statistic_files(const DrawStatistics& s) {
  return {{"accept_stat.npy", Scalar::Float, as_words(s.accept_stat)},
          {"step_size.npy", Scalar::Float, as_words(s.step_size)},
          {"energy.npy", Scalar::Float, as_words(s.energy)},
          {"tree_depth.npy", Scalar::Int, as_words(s.tree_depth)},
          {"n_grad.npy", Scalar::Int, as_words(s.n_leapfrog)},
          {"divergent.npy", Scalar::Bool, as_words(s.divergent)},
          {"lp.npy", Scalar::Float, as_words(s.lp)}};
}
constexpr uint64_t kStatisticFiles = 7;
constexpr uint64_t kNpyHeaderAllowance = 4096;

// The bytes the set needs at most: the .npy files, and a CSV row's at most 16 characters per
// value.
uint64_t set_bytes(const Options& o, uint32_t dimension, const FitFileOptions& files) {
  const uint64_t cells = uint64_t{o.chains} * o.draws;
  const uint64_t npy = files.npy ? kNpyHeaderAllowance * (kStatisticFiles + 2) +
                                       cells * (uint64_t{dimension} * 4 + kStatisticFiles * 4)
                                 : 0;
  return npy + (files.csv ? cells * (dimension + kStatisticFiles) * 16 : 0);
}

std::string csv_name(const FitFileOptions& files, uint32_t chain) {
  return fmt::format("{}-{}.csv", files.model_name, chain + 1);
}

nlohmann::ordered_json number(double v) {
  return std::isfinite(v) ? nlohmann::ordered_json(v) : nlohmann::ordered_json(nullptr);
}
nlohmann::ordered_json optional_number(const std::optional<double>& v) {
  return v ? nlohmann::ordered_json(*v) : nlohmann::ordered_json(nullptr);
}

nlohmann::ordered_json parameters_json(const Fit& fit) {
  nlohmann::ordered_json params = nlohmann::ordered_json::array();
  for (const auto& [name, s] : fit.summary)
    params.push_back({{"name", name},
                      {"mean", number(s.mean)},
                      {"sd", number(s.sd)},
                      {"mcse_mean", number(s.mcse_mean)},
                      {"q5", number(s.q5)},
                      {"q50", number(s.q50)},
                      {"q95", number(s.q95)},
                      {"rhat", number(s.rhat)},
                      {"ess_bulk", number(s.ess_bulk)},
                      {"ess_tail", number(s.ess_tail)}});
  return params;
}

// The chains that faulted or were refused, and each chain's step size.
void add_chains_json(const Fit& fit, nlohmann::ordered_json& doc) {
  nlohmann::ordered_json faults = nlohmann::ordered_json::array();
  for (const LaneError& e : fit.faults)
    faults.push_back({{"chain", e.lane},
                      {"fault", fault_name(e.code)},
                      {"detail", e.detail},
                      {"function", e.function},
                      {"line", e.line},
                      {"draws", fit.draws_per_chain[e.lane]}});
  doc["faults"] = std::move(faults);
  nlohmann::ordered_json refused = nlohmann::ordered_json::array();
  for (const RefusedChain& r : fit.refused)
    refused.push_back(
        {{"chain", r.chain}, {"init_tries", r.init_tries}, {"log_density", r.log_density}});
  doc["refused_chains"] = std::move(refused);
  nlohmann::ordered_json sizes = nlohmann::ordered_json::array();
  for (double v : fit.step_sizes)
    sizes.push_back(number(v));
  doc["step_sizes"] = std::move(sizes);
}

}  // namespace

std::string summary_json(const Fit& fit, const FitFileOptions& files, const RunFacts& facts,
                         const std::vector<std::string>& file_names, int indent) {
  const Options& o = fit.options;
  nlohmann::ordered_json doc;
  doc["model"] = files.model;
  doc["backend"] = facts.backend;
  doc["chains"] = o.chains;
  doc["draws"] = o.draws;
  doc["warmup"] = o.warmup;
  doc["seed"] = o.seed;
  doc["complete"] =
      facts.interrupted_by.empty() && !fit.stopped && fit.summary_chains.size() == o.chains;
  doc["interrupted_by"] = facts.interrupted_by.empty()
                              ? nlohmann::ordered_json(nullptr)
                              : nlohmann::ordered_json(facts.interrupted_by);
  doc["draws_per_chain"] = fit.draws_per_chain;
  doc["summary_chains"] = fit.summary_chains;
  doc["summary_draws_per_chain"] = fit.summary_draws;
  doc["parameters"] = parameters_json(fit);
  nlohmann::ordered_json warned = nlohmann::ordered_json::array();
  for (const FitWarning& w : fit.warnings)
    warned.push_back({{"kind", w.kind}, {"message", w.message}});
  doc["warnings"] = std::move(warned);
  doc["gradient_evaluations"] = fit.gradient_evaluations;
  doc["gradients_per_second"] =
      facts.run_seconds > 0 ? fit.gradient_evaluations / facts.run_seconds : 0.0;
  doc["utilization"] = fit.run_stats.utilization;
  doc["gradient_utilization"] = optional_number(facts.gradient_utilization);
  doc["gradient_utilization_live"] = optional_number(facts.gradient_utilization_live);
  doc["local_static_utilization"] = facts.local_static_utilization;
  doc["divergences"] = fit.divergences;
  doc["faulted_chains"] = fit.faults.size();
  add_chains_json(fit, doc);
  doc["run_seconds"] = facts.run_seconds;
  doc["wall_seconds"] = facts.wall_seconds;
  if (facts.compile_seconds) doc["compile_seconds"] = *facts.compile_seconds;
  if (!facts.kernels_json.empty())
    doc["kernels"] = nlohmann::ordered_json::parse(facts.kernels_json);
  doc["files"] = file_names;  // what a later fit into the folder may replace and remove
  return doc.dump(indent);
}

struct FitWriter::Impl {
  FitFileOptions options;
  std::unique_ptr<FitFiles> files;
  DrawsFile draws;  // open when options.npy
  uint32_t chains = 0, draw_count = 0;

  // Chain `chain`'s received draws, [n, D]: read back from draws.npy, or from the fit's memory.
  Expected<std::vector<float>> chain_rows(const Fit& fit, uint32_t chain);
  Status write_statistics(const Fit& fit);
  Status write_csv_files(const Fit& fit);
};

FitWriter::FitWriter(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
FitWriter::~FitWriter() = default;

Expected<std::unique_ptr<FitWriter>> FitWriter::open(const std::string& folder,
                                                     const Options& options, uint32_t dimension,
                                                     const FitFileOptions& files) {
  auto impl = std::make_unique<Impl>();
  impl->options = files;
  impl->chains = options.chains;
  impl->draw_count = options.draws;
  auto opened = FitFiles::open(folder, set_bytes(options, dimension, files));
  if (!opened) return opened.failure();
  impl->files = std::move(*opened);
  if (files.npy)
    if (auto s = impl->draws.open(impl->files->staged("draws.npy"), options.chains, options.draws,
                                  dimension);
        !s)
      return s.failure();
  return std::unique_ptr<FitWriter>(new FitWriter(std::move(impl)));
}

DrawSink& FitWriter::draws() {
  return impl_->draws;
}

std::vector<std::string> FitWriter::files() const {
  return impl_->files->files();
}

std::string FitWriter::path(const std::string& name) const {
  return impl_->files->final_path(name);
}

Expected<std::vector<float>> FitWriter::Impl::chain_rows(const Fit& fit, uint32_t chain) {
  const uint32_t D = fit.dimension, n = fit.draws_per_chain[chain];
  if (!options.npy) {
    const auto first =
        fit.draws_data.begin() + static_cast<std::ptrdiff_t>(uint64_t{chain} * fit.draws * D);
    return std::vector<float>(first, first + static_cast<std::ptrdiff_t>(uint64_t{n} * D));
  }
  std::vector<float> rows(uint64_t{n} * D);
  for (uint32_t j = 0; j < D; ++j) {
    auto column = draws.parameter(j, n, {chain});
    if (!column) return column.failure();
    for (uint32_t i = 0; i < n; ++i)
      rows[uint64_t{i} * D + j] = static_cast<float>((*column)[i]);
  }
  return rows;
}

Status FitWriter::Impl::write_statistics(const Fit& fit) {
  for (const DrawStatisticFile& f : statistic_files(fit.stats))
    if (auto s = write_npy(files->staged(f.file), f.type, {chains, draw_count}, f.words); !s)
      return s;
  return Ok{};
}

Status FitWriter::Impl::write_csv_files(const Fit& fit) {
  for (uint32_t chain = 0; chain < fit.chains; ++chain) {
    auto rows = chain_rows(fit, chain);
    if (!rows) return rows.failure();
    const std::string path = files->staged(csv_name(options, chain));
    const std::string error =
        write_whole_file(path, {cmdstan_csv(fit, options.model_name, chain, *rows)});
    if (!error.empty()) return Error{fmt::format("cannot write '{}': {}", path, error)};
  }
  return Ok{};
}

Status FitWriter::finish(const Fit& fit, const RunFacts& facts) {
  Impl& w = *impl_;
  if (w.options.npy)
    if (auto s = w.write_statistics(fit); !s) return s;
  if (w.options.csv)
    if (auto s = w.write_csv_files(fit); !s) return s;
  if (w.options.npy) {
    const std::string path = w.files->staged("summary.json");
    const std::string text = summary_json(fit, w.options, facts, w.files->files(), 2) + "\n";
    if (const std::string error = write_whole_file(path, {text}); !error.empty())
      return Error{fmt::format("cannot write '{}': {}", path, error)};
  }
  return w.files->commit();
}

Status write_fit(const Fit& fit, const std::string& folder, const FitFileOptions& files,
                 const RunFacts& facts) {
  auto writer = FitWriter::open(folder, fit.options, fit.dimension, files);
  if (!writer) return writer.failure();
  if (files.npy && !fit.draws_data.empty()) {
    DrawSink& sink = (*writer)->draws();
    for (uint32_t chain = 0; chain < fit.chains; ++chain)
      for (uint32_t draw = 0; draw < fit.draws; ++draw)
        if (!sink.write(
                chain, draw,
                fit.draws_data.data() + (uint64_t{chain} * fit.draws + draw) * fit.dimension))
          return Error{sink.error()};
  }
  return (*writer)->finish(fit, facts);
}

}  // namespace ab::sample
