#include "tools/sample/sample_command.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <functional>
#include <type_traits>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "autobatch/context.h"
#include "tools/commands.h"
#include "tools/file_io.h"
#include "tools/interrupts.h"
#include "tools/npy.h"
#include "tools/sample/fit_files.h"
#include "tools/uniforms.h"

namespace ab::cli {
namespace {

// The per-draw statistics `sample` writes beside draws.npy, [chains, draws] each: the file, its
// type and its words (a missing draw holds NaN, -1 or false, as the sampler left it).
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
std::vector<DrawStatisticFile> statistic_files(const sample::DrawStatistics& s) {
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

// Stan's windowed adaptation needs 150 warm-up iterations (75 + 25 + 50) to adapt the metric,
// and the step size's dual averaging a few dozen to settle: fewer is allowed but said.
constexpr uint32_t kWarmupToAdapt = 150;
void warn_about_short_warmup(const SampleCommand& c) {
  if (c.options.warmup == 0 || c.options.warmup >= kWarmupToAdapt) return;
  fmt::print(stderr,
             "warning: --warmup {} is too short to adapt: the metric needs {} iterations{} and "
             "the step size may not settle (expect divergences or a poor step size)\n",
             c.options.warmup, kWarmupToAdapt,
             c.options.adapt_metric ? " (it stays the unit metric)" : "");
}

// A run stopped by a signal before any draw: nothing is written, the previous fit stays.
int interrupted_without_draws(int signal, const FitFiles& fit) {
  fmt::print(stderr, "stopped by {} before any draw; the files in '{}' are unchanged\n",
             ::strsignal(signal), fit.final_path(""));
  return 128 + signal;
}

// The progress line on stderr: draws so far, and, when no draw has come for a while, which
// chains are still silent (a log density that never returns shows here, not as a hang).
class SampleProgress {
 public:
  SampleProgress(const SampleCommand& c, std::chrono::steady_clock::time_point started)
      : c_(c), started_(started), last_draw_(started) {}
  void drew(uint64_t received, const std::vector<uint32_t>& next_draw) {
    last_draw_ = std::chrono::steady_clock::now();
    tick(received, next_draw);
  }
  void tick(uint64_t received, const std::vector<uint32_t>& next_draw) {
    if (c_.format != "table") return;
    const auto now = std::chrono::steady_clock::now();
    const double elapsed = std::chrono::duration<double>(now - started_).count();
    if (elapsed < 1.0 || now - last_shown_at_ < std::chrono::milliseconds(500) ||
        !progress_due(elapsed, last_shown_))
      return;
    last_shown_at_ = now;
    shown_ = true;
    const uint64_t cells = uint64_t{c_.options.chains} * c_.options.draws;
    std::string line = received == 0
                           ? fmt::format("sampling: warming up, {:.0f} s", elapsed)
                           : fmt::format("sampling: {} of {} draws ({:.0f}%)", received, cells,
                                         100.0 * static_cast<double>(received) / cells);
    const double silent = std::chrono::duration<double>(now - last_draw_).count();
    if (received > 0 && silent >= kSilentSeconds) {
      std::vector<uint32_t> waiting;
      for (uint32_t chain = 0; chain < c_.options.chains; ++chain)
        if (next_draw[chain] < c_.options.draws) waiting.push_back(chain);
      const size_t shown = std::min<size_t>(waiting.size(), 8);
      line += fmt::format(
          "; no draw for {:.0f} s from chain{} {}{}{}", silent, waiting.size() == 1 ? "" : "s",
          fmt::join(waiting.begin(), waiting.begin() + shown, ", "),
          waiting.size() > shown ? ", ..." : "", " (--max-steps bounds a chain's work)");
    }
    fmt::print(stderr, "{}{:<110}{}", progress_start(), line, progress_end());
    std::fflush(stderr);
  }
  void finish() {
    if (shown_ && stderr_is_terminal()) fmt::print(stderr, "\n");
  }

 private:
  static constexpr double kSilentSeconds = 10;
  const SampleCommand& c_;
  std::chrono::steady_clock::time_point started_, last_draw_, last_shown_at_{};
  double last_shown_ = -1e9;
  bool shown_ = false;
};

std::string format_seconds(double s) {
  return s < 1 ? fmt::format("{:.0f} ms", s * 1000) : fmt::format("{:.2f} s", s);
}

// A refusal before anything runs (a model off the contract, data of the wrong shape, a bad
// option): one message and exit code 2, as for any bad usage of `sample`.
int refuse(const Error& error) {
  report_error(error);
  return 2;
}

// --init: the chains' initial points in the model's space. FILE.npy holds [chains, D];
// FILE.json one object of parameters by name for every chain or a list of one per chain, as
// CmdStan's init files (a field's value a number or nested lists in its shape).
Expected<std::vector<float>> read_init(const std::string& path, const sample::Model& model,
                                       uint32_t chains) {
  const uint32_t D = model.dimension();
  std::vector<float> out;
  if (path.size() < 5 || path.substr(path.size() - 5) != ".json") {
    auto array = read_npy(path);
    if (!array) return array.failure();
    if (array->shape != std::vector<uint64_t>{chains, D})
      return Error{fmt::format("--init '{}' must have shape ({}, {}) for {} chains of dimension {}",
                               path, chains, D, chains, D)};
    for (uint64_t k = 0; k < array->elements(); ++k) {
      auto word = encode_number(array->at(k), Scalar::Float);
      if (!word) return Error{fmt::format("--init '{}': {}", path, word.error())};
      out.push_back(bits_float(*word));
    }
    return out;
  }
  auto text = read_file(path);
  if (!text) return text.failure();
  nlohmann::json doc = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return Error{fmt::format("--init '{}': not valid JSON", path)};
  if (doc.is_object()) doc = nlohmann::json(std::vector<nlohmann::json>(chains, doc));
  if (!doc.is_array() || doc.size() != chains)
    return Error{
        fmt::format("--init '{}': expected an object of parameters by name, or a list "
                    "of {} such objects (one per chain)",
                    path, chains)};
  // The fields in declaration order, each with its coordinates' count.
  std::vector<std::pair<std::string, uint32_t>> fields;
  for (const sample::Model::Field& f : model.fields())
    fields.emplace_back(f.name, f.coordinates);
  std::string known;
  for (const auto& [name, count] : fields)
    known += (known.empty() ? "" : ", ") + name;
  for (uint32_t chain = 0; chain < chains; ++chain) {
    const nlohmann::json& object = doc[chain];
    if (!object.is_object())
      return Error{fmt::format("--init '{}': entry {} is not an object", path, chain)};
    for (const auto& [key, value] : object.items())
      if (std::none_of(fields.begin(), fields.end(), [&](const auto& f) { return f.first == key; }))
        return Error{
            fmt::format("--init '{}': unknown parameter '{}' (the model's: {})", path, key, known)};
    for (const auto& [name, count] : fields) {
      if (!object.contains(name))
        return Error{
            fmt::format("--init '{}': chain {} has no '{}' (every parameter needs a "
                        "value: {})",
                        path, chain, name, known)};
      std::vector<float> flat;
      std::function<bool(const nlohmann::json&)> flatten = [&](const nlohmann::json& v) {
        if (v.is_number()) {
          flat.push_back(v.get<float>());
          return true;
        }
        if (!v.is_array()) return false;
        for (const nlohmann::json& e : v)
          if (!flatten(e)) return false;
        return true;
      };
      if (!flatten(object[name]) || flat.size() != count)
        return Error{fmt::format("--init '{}': '{}' must be {} number{}", path, name, count,
                                 count == 1 ? "" : "s (nested lists in the field's shape)")};
      out.insert(out.end(), flat.begin(), flat.end());
    }
  }
  return out;
}

// --csv: chain k's file, CmdStan's MODEL-k.csv (k from 1).
std::string model_name(const SampleCommand& c) {
  return std::filesystem::path(c.model).stem().string();
}
std::string csv_name(const SampleCommand& c, uint32_t chain) {
  return fmt::format("{}-{}.csv", model_name(c), chain + 1);
}
Status write_csv_files(const SampleCommand& c, const sample::Fit& fit, DrawsFile& draws,
                       FitFiles& files) {
  const uint32_t D = fit.dimension;
  for (uint32_t chain = 0; chain < fit.chains; ++chain) {
    const uint32_t n = fit.draws_per_chain[chain];
    std::vector<float> rows(uint64_t{n} * D);
    for (uint32_t j = 0; j < D; ++j) {
      auto column = draws.parameter(j, n, {chain});
      if (!column) return column.failure();
      for (uint32_t i = 0; i < n; ++i)
        rows[uint64_t{i} * D + j] = static_cast<float>((*column)[i]);
    }
    if (auto s = write_file(files.staged(csv_name(c, chain)),
                            sample::cmdstan_csv(fit, model_name(c), chain, rows));
        !s)
      return s;
  }
  return Ok{};
}

}  // namespace

double local_static_utilization(const std::vector<uint32_t>& grads, uint32_t chains,
                                uint32_t draws) {
  uint64_t done = 0, slots = 0;
  for (uint32_t t = 0; t < draws; ++t) {
    uint32_t longest = 0;
    for (uint32_t chain = 0; chain < chains; ++chain) {
      const uint32_t g = grads[uint64_t{chain} * draws + t];
      done += g;
      longest = std::max(longest, g);
    }
    slots += uint64_t{longest} * chains;
  }
  return slots ? static_cast<double>(done) / static_cast<double>(slots) : 0.0;
}

GradientUtilization gradient_utilization(const BackendRun& run, uint32_t chains) {
  const RunStats& stats = run.result.stats;
  for (size_t b = 0; b < run.block_names.size(); ++b)
    if ((run.block_names[b] == "log_density.b0" ||
         run.block_names[b] == "log_density.value_and_grad.b0") &&
        b < stats.block_utilization.size() && b < stats.block_lanes.size() &&
        stats.block_executions[b] > 0)
      return {true, stats.block_utilization[b],
              static_cast<double>(stats.block_lanes[b]) /
                  (static_cast<double>(chains) * static_cast<double>(stats.block_executions[b]))};
  return {};
}

Expected<SampleInputs> sample_inputs(const sample::Model& model, const SampleCommand& c) {
  SampleInputs in;
  in.options = c.options;
  std::vector<Rounding> rounded;
  auto uniforms = bind_uniforms(model.data(), c.uniforms, &rounded);
  if (!uniforms) return uniforms.failure();
  // The model computes in float32: say once how much that changed the data.
  for (const Rounding& r : rounded)
    fmt::print(stderr,
               "note: uniform '{}' was rounded from float64 to float32 (largest relative change "
               "{:.2g}, at element {})\n",
               r.uniform, r.relative_change, r.element);
  in.data = std::move(*uniforms);
  if (!c.init_file.empty()) {
    auto values = read_init(c.init_file, model, c.options.chains);
    if (!values) return values.failure();
    // A chain started at NaN, infinity or on a bound never moves: every proposal diverges.
    const uint32_t D = model.dimension();
    for (uint32_t chain = 0; chain < c.options.chains; ++chain) {
      auto u = model.unconstrain(std::span(*values).subspan(uint64_t{chain} * D, D));
      if (!u) return Error{fmt::format("--init '{}', chain {}: {}", c.init_file, chain, u.error())};
    }
    in.options.init = std::move(*values);
  }
  return in;
}

Expected<Batch> sampler_batch(const sample::Model& model, const SampleCommand& c) {
  auto in = sample_inputs(model, c);
  if (!in) return in.failure();
  return sample::make_batch(model, std::move(in->data), in->options);
}

BackendChoice choose_sample_backend(const SampleCommand& c) {
  if (c.backend != "auto") return {c.backend, ""};
  DeviceOptions plain;
  plain.progress = c.device.progress;
  if (c.device != plain) return {"vulkan", ""};  // a Vulkan option was given: the user wants it
  if (has_gpu()) return {"vulkan", ""};
  return {"vm",
          "note: sampling on the vm: no GPU was found, and on a CPU's Vulkan (lavapipe) the "
          "sampler's kernels compile for seconds to minutes and then run no faster; --backend "
          "vulkan uses it anyway"};
}

int sample_command(const SampleCommand& c) {
  const auto started = std::chrono::steady_clock::now();
  catch_interrupts();  // until the first step, a Ctrl-C or SIGTERM ends the process at once
  // The library's one check of the options, in the CLI's spelling (--leaf-steps).
  if (auto s = sample::check_options(c.options, sample::OptionNames::Cli); !s)
    return refuse(s.failure());
  const BackendChoice chosen = choose_sample_backend(c);
  const Backend* backend = find_backend(chosen.name);
  if (!backend) return refuse(Error{fmt::format("unknown backend '{}'", chosen.name)});
  auto loaded = sample::Model::load(c.model);
  if (!loaded) return refuse(loaded.failure());
  const sample::Model& model = **loaded;
  const uint32_t D = model.dimension();

  auto inputs = sample_inputs(model, c);
  if (!inputs) return refuse(inputs.failure());
  if (auto batch = sample::make_batch(model, inputs->data, inputs->options); !batch)
    return refuse(batch.failure());

  // Per-draw statistics, [chains, draws] each, kept in memory until the end: check they fit
  // before anything runs or any file is touched.
  const uint64_t cells = uint64_t{c.options.chains} * c.options.draws;
  const uint64_t stats_bytes = cells * 4 * kStatisticFiles;
  const uint64_t available = uint64_t(::sysconf(_SC_AVPHYS_PAGES)) * ::sysconf(_SC_PAGESIZE);
  if (stats_bytes > available)
    return refuse(Error{fmt::format(
        "{} chains x {} draws keep {:.1f} GiB of per-draw statistics in memory, more than the "
        "{:.1f} GiB available: use fewer draws or chains",
        c.options.chains, c.options.draws, static_cast<double>(stats_bytes) / (1u << 30),
        static_cast<double>(available) / (1u << 30))});
  // A CSV row holds at most 16 characters per value.
  const uint64_t file_bytes = kNpyHeaderAllowance * (kStatisticFiles + 2) +
                              cells * (uint64_t{D} * 4 + kStatisticFiles * 4) +
                              (c.csv ? cells * (D + kStatisticFiles) * 16 : 0);
  auto files = FitFiles::open(c.out_dir.empty() ? "." : c.out_dir, file_bytes);
  if (!files) return refuse(files.failure());
  FitFiles& fit_files = **files;
  if (!chosen.note.empty()) fmt::print(stderr, "{}\n", chosen.note);
  warn_about_short_warmup(c);

  DrawsFile draws_file;
  if (auto s = draws_file.open(fit_files.staged("draws.npy"), c.options.chains, c.options.draws, D);
      !s)
    return refuse(s.failure());

  std::vector<uint32_t> next_draw(c.options.chains, 0);
  uint64_t received = 0;
  SampleProgress progress(c, started);
  sample::Options options = inputs->options;
  options.on_draw = [&](uint32_t chain, uint32_t draw, uint64_t in_all) {
    next_draw[chain] = draw + 1;
    received = in_all;
    progress.drew(received, next_draw);
  };
  // Polled at step boundaries: Ctrl-C, and the progress line while no draw comes.
  options.should_stop = [&] {
    stop_at_step_boundaries();  // the run has begun: a signal now keeps what it made
    progress.tick(received, next_draw);
    return interrupt_signal() != 0;
  };
  DeviceOptions device = c.device;
  device.progress = c.format == "table";
  BackendRun run;  // the backend's own report (block names, run time) beside the fit
  const sample::Runner runner = [&](const std::shared_ptr<const Module>& module, const Batch& batch,
                                    const RunOptions& run_options) -> Expected<RunResult> {
    run = backend->run(module, batch, run_options, device);
    if (!run.error.empty()) return Error{run.error};
    return run.result;
  };
  auto sampled = sample::run(model, std::move(inputs->data), options, runner, &draws_file);
  progress.finish();
  const int signal = interrupt_signal();
  if (!draws_file.error().empty()) return report_error(Error{draws_file.error()});
  if (!sampled) {
    if (signal) return interrupted_without_draws(signal, fit_files);
    return report_error(sampled.failure());
  }
  const sample::Fit& fit = *sampled;
  for (const std::string& line : fit.chain_messages)
    fmt::print(stderr, "{}\n", line);
  if (fit.received == 0) {
    if (signal) return interrupted_without_draws(signal, fit_files);
    return report_error(Error{fmt::format(
        "no chain produced a draw (every chain faulted or was refused); the files in '{}' are "
        "unchanged",
        c.out_dir.empty() ? "." : c.out_dir)});
  }
  // Every chain faulted or was refused after some draws: a failure, which keeps the previous
  // fit (a stopped run still writes what it made).
  if (fit.summary_chains.empty() && !signal)
    return report_error(Error{fmt::format(
        "every chain faulted or was refused ({} of {} draws made): there is no summary; the "
        "files in '{}' are unchanged",
        fit.received, cells, c.out_dir.empty() ? "." : c.out_dir)});
  const std::vector<DrawStatisticFile> stat_files = statistic_files(fit.stats);
  for (const DrawStatisticFile& f : stat_files)
    if (auto s = write_npy(fit_files.staged(f.file), f.type, {c.options.chains, c.options.draws},
                           f.words);
        !s)
      return report_error(s.failure());
  if (c.csv)
    if (auto s = write_csv_files(c, fit, draws_file, fit_files); !s)
      return report_error(s.failure());
  const std::vector<uint32_t> grads = as_words(fit.stats.n_leapfrog);
  const std::vector<uint32_t>& used_chains = fit.summary_chains;
  const uint32_t used_draws = fit.summary_draws;
  const uint64_t total_grads = fit.gradient_evaluations, divergences = fit.divergences;

  const double wall =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  const double run_seconds = cli::run_seconds(run);
  const auto num = [](double v) {
    return std::isfinite(v) ? nlohmann::ordered_json(v) : nlohmann::ordered_json(nullptr);
  };
  nlohmann::ordered_json doc;
  doc["model"] = c.model;
  doc["backend"] = backend->name;
  doc["chains"] = c.options.chains;
  doc["draws"] = c.options.draws;
  doc["warmup"] = c.options.warmup;
  doc["seed"] = c.options.seed;
  doc["complete"] = !signal && !fit.stopped && used_chains.size() == c.options.chains;
  doc["interrupted_by"] = signal ? nlohmann::ordered_json(::strsignal(signal)) : nullptr;
  doc["draws_per_chain"] = fit.draws_per_chain;
  doc["summary_chains"] = used_chains;
  doc["summary_draws_per_chain"] = used_draws;
  nlohmann::ordered_json params = nlohmann::ordered_json::array();
  for (const auto& [name, s] : fit.summary) {
    params.push_back({{"name", name},
                      {"mean", num(s.mean)},
                      {"sd", num(s.sd)},
                      {"mcse_mean", num(s.mcse_mean)},
                      {"q5", num(s.q5)},
                      {"q50", num(s.q50)},
                      {"q95", num(s.q95)},
                      {"rhat", num(s.rhat)},
                      {"ess_bulk", num(s.ess_bulk)},
                      {"ess_tail", num(s.ess_tail)}});
  }
  doc["parameters"] = std::move(params);
  nlohmann::ordered_json warned = nlohmann::ordered_json::array();
  for (const sample::FitWarning& w : fit.warnings)
    warned.push_back({{"kind", w.kind}, {"message", w.message}});
  doc["warnings"] = std::move(warned);
  doc["gradient_evaluations"] = total_grads;
  doc["gradients_per_second"] = run_seconds > 0 ? total_grads / run_seconds : 0.0;
  doc["utilization"] = fit.run_stats.utilization;
  const GradientUtilization grad_utilization = gradient_utilization(run, c.options.chains);
  const double static_utilization =
      local_static_utilization(grads, c.options.chains, c.options.draws);
  doc["gradient_utilization"] =
      grad_utilization.known ? nlohmann::ordered_json(grad_utilization.all) : nullptr;
  doc["gradient_utilization_live"] =
      grad_utilization.known ? nlohmann::ordered_json(grad_utilization.live) : nullptr;
  doc["local_static_utilization"] = static_utilization;
  doc["divergences"] = divergences;
  doc["faulted_chains"] = fit.faults.size();
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
  for (const sample::RefusedChain& r : fit.refused)
    refused.push_back(
        {{"chain", r.chain}, {"init_tries", r.init_tries}, {"log_density", r.log_density}});
  doc["refused_chains"] = std::move(refused);
  nlohmann::ordered_json sizes = nlohmann::ordered_json::array();
  for (double v : fit.step_sizes)
    sizes.push_back(num(v));
  doc["step_sizes"] = std::move(sizes);
  doc["run_seconds"] = run_seconds;
  doc["wall_seconds"] = wall;
  // Vulkan: the kernels' build, each kernel's times (VulkanStats::kernels).
  const ExtraStat* compiled = nullptr;
  const ExtraStat* kernels = nullptr;
  for (const ExtraStat& s : run.extra_stats) {
    if (s.key == "compile_seconds") compiled = &s;
    if (s.key == "kernels") kernels = &s;
  }
  if (compiled) doc["compile_seconds"] = compiled->value;
  if (kernels) doc["kernels"] = kernels->value;
  const std::string summary_path = fit_files.staged("summary.json");
  doc["files"] = fit_files.files();  // what a later run into --out may replace and remove
  if (auto s = write_file(summary_path, doc.dump(2) + "\n"); !s) return report_error(s.failure());
  if (auto s = fit_files.commit(); !s) return report_error(s.failure());

  const int exit_code = signal ? 128 + signal : 0;  // every chain faulted: returned above
  if (signal)
    fmt::print(stderr,
               "stopped by {}: {} of {} draws written (per chain: {}); the missing draws are NaN\n",
               ::strsignal(signal), fit.received, cells, fmt::join(fit.draws_per_chain, " "));
  if (used_chains.empty())
    fmt::print(stderr, "error: every chain faulted or was refused: there is no summary\n");
  for (const sample::FitWarning& w : fit.warnings)
    fmt::print(stderr, "warning: {}\n", w.message);
  if (c.format == "json") {
    fmt::print("{}\n", doc.dump());
    return exit_code;
  }
  fmt::print("{}", sample::format_summary_table(fit.summary));
  fmt::print("\n{} chains x {} draws ({} warm-up) on {}\n", c.options.chains, c.options.draws,
             c.options.warmup, backend->name);
  if (used_chains.size() < c.options.chains || used_draws < c.options.draws)
    fmt::print("  summary over          {} of {} chains, {} draws each\n", used_chains.size(),
               c.options.chains, used_draws);
  fmt::print("  gradient evaluations  {} ({:.3g} per second)\n", total_grads,
             run_seconds > 0 ? total_grads / run_seconds : 0.0);
  fmt::print("  batch utilization     {:.1f}%\n", fit.run_stats.utilization * 100);
  if (grad_utilization.known)
    fmt::print(
        "  gradient utilization  {:.1f}% of chains, {:.1f}% of live chains (local static "
        "batching: {:.1f}%)\n",
        grad_utilization.all * 100, grad_utilization.live * 100, static_utilization * 100);
  fmt::print("  divergences           {}\n", divergences);
  if (!fit.faults.empty()) fmt::print("  faulted chains        {}\n", fit.faults.size());
  fmt::print("  run time              {}, wall {}\n", format_seconds(run_seconds),
             format_seconds(wall));
  if (compiled && kernels)
    fmt::print("  kernel compile        {}: {}\n", format_seconds(compiled->value.get<double>()),
               kernels->text);
  fmt::print("  written               {}, summary.json and per-draw statistics{}\n",
             fit_files.final_path("draws.npy"),
             c.csv ? fmt::format(", {}", fit_files.final_path(csv_name(c, 0)) +
                                             (c.options.chains > 1 ? " ..." : ""))
                   : "");
  return exit_code;
}

}  // namespace ab::cli
