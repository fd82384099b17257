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
#include "autobatch/npy.h"
#include "autobatch/shards.h"
#include "tools/commands.h"
#include "tools/file_io.h"
#include "tools/interrupts.h"
#include "tools/mpi_ranks.h"
#include "tools/uniforms.h"
#include "tools/values.h"

namespace ab::cli {
namespace {

// Per-draw statistics kept in memory until the end: lp, accept_stat, step_size, energy,
// tree_depth, n_leapfrog, divergent, 4 bytes a draw each at most.
constexpr uint64_t kStatisticBytesPerDraw = 7 * 4;

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
int interrupted_without_draws(int signal, const sample::FitWriter& writer) {
  fmt::print(stderr, "stopped by {} before any draw; the files in '{}' are unchanged\n",
             ::strsignal(signal), writer.path(""));
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
    if (c_.format != "table" || !root_rank()) return;  // under mpirun, rank 0 speaks for all
    const auto now = std::chrono::steady_clock::now();
    const double elapsed = std::chrono::duration<double>(now - started_).count();
    if (elapsed < 1.0 || now - last_shown_at_ < std::chrono::milliseconds(500) ||
        !progress_due(elapsed, last_shown_))
      return;
    last_shown_at_ = now;
    shown_ = true;
    // Under mpirun rank 0 sees its own chains' draws until the others' arrive with their results:
    // the line counts its block, the first, and says so.
    const uint32_t chains = cut_lanes(c_.options.chains, ranks().size)[0].lanes;
    const uint64_t cells = uint64_t{chains} * c_.options.draws;
    const std::string whose =
        distributed() ? fmt::format(" (rank 0's {} chains of {} ranks)", chains, ranks().size) : "";
    std::string line = received == 0
                           ? fmt::format("sampling: warming up, {:.0f} s{}", elapsed, whose)
                           : fmt::format("sampling: {} of {} draws ({:.0f}%){}", received, cells,
                                         100.0 * static_cast<double>(received) / cells, whose);
    const double silent = std::chrono::duration<double>(now - last_draw_).count();
    if (received > 0 && silent >= kSilentSeconds) {
      std::vector<uint32_t> waiting;
      for (uint32_t chain = 0; chain < chains; ++chain)
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
  const uint32_t D = model.parameter_count();
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
sample::FitFileOptions fit_file_options(const SampleCommand& c) {
  sample::FitFileOptions files;
  files.model = c.model;
  files.model_name = std::filesystem::path(c.model).stem().string();
  files.csv = c.csv;
  return files;
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
  auto uniforms = bind_uniforms(model.data_module(), c.uniforms, c.data_files, &rounded);
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
    const uint32_t D = model.parameter_count();
    for (uint32_t chain = 0; chain < c.options.chains; ++chain) {
      auto u = model.unconstrain(std::span(*values).subspan(uint64_t{chain} * D, D), in.data);
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
  if (vulkan_option_given(c.device)) return {"vulkan", ""};  // the user wants it
  if (has_gpu()) return {"vulkan", ""};
  return {"vm",
          "note: sampling on the vm: no GPU was found, and on a CPU's Vulkan (lavapipe) the "
          "sampler's kernels compile for seconds to minutes and then run no faster; --backend "
          "vulkan uses it anyway"};
}

namespace {

// What the sampler needs, checked before anything runs or any file is touched.
struct Prepared {
  const Backend* backend = nullptr;
  std::string backend_note;  // why auto chose the vm, for stderr
  std::shared_ptr<const sample::Model> model;
  SampleInputs inputs;
};

Expected<Prepared> prepare(const SampleCommand& c) {
  // The library's one check of the options, in the CLI's spelling (--leaf-steps).
  if (auto s = sample::check_options(c.options, sample::OptionNames::Cli); !s) return s.failure();
  Prepared p;
  const BackendChoice chosen = choose_sample_backend(c);
  p.backend = find_backend(chosen.name);
  if (!p.backend) return Error{fmt::format("unknown backend '{}'", chosen.name)};
  p.backend_note = chosen.note;
  auto sizes = data_constants(c.data_files);
  if (!sizes) return sizes.failure();
  auto loaded = sample::Model::load(c.model, true, *sizes);
  if (!loaded) return loaded.failure();
  p.model = *loaded;
  auto inputs = sample_inputs(*p.model, c);
  if (!inputs) return inputs.failure();
  if (auto batch = sample::make_batch(*p.model, inputs->data, inputs->options); !batch)
    return batch.failure();
  p.inputs = std::move(*inputs);
  // Per-draw statistics, [chains, draws] each, kept in memory until the end: check they fit.
  const uint64_t cells = uint64_t{c.options.chains} * c.options.draws;
  const uint64_t stats_bytes = cells * kStatisticBytesPerDraw;
  const uint64_t available = uint64_t(::sysconf(_SC_AVPHYS_PAGES)) * ::sysconf(_SC_PAGESIZE);
  if (stats_bytes > available)
    return Error{fmt::format(
        "{} chains x {} draws keep {:.1f} GiB of per-draw statistics in memory, more than the "
        "{:.1f} GiB available: use fewer draws or chains",
        c.options.chains, c.options.draws, static_cast<double>(stats_bytes) / (1u << 30),
        static_cast<double>(available) / (1u << 30))};
  return p;
}

// Where the draws of a rank other than 0 go: nowhere, its chains' draws travel to rank 0 with
// its results (tools/mpi_ranks.h).
class DiscardDraws : public sample::DrawSink {
 public:
  bool write(uint32_t, uint32_t, const float*) override { return true; }
  bool fill_missing(uint32_t, uint32_t) override { return true; }
  std::string error() const override { return ""; }
  Expected<std::vector<double>> parameter(uint32_t, uint32_t,
                                          const std::vector<uint32_t>&) override {
    return std::vector<double>{};
  }
};

// The chains run, the draws streaming into `sink` (the writer's draws.npy), the progress line on
// stderr and Ctrl-C polled at step boundaries; `run` gets the backend's own report. Under mpirun
// (tools/mpi_ranks.h) every rank runs its block of chains and rank 0 gets them all; a signal then
// ends the process at once, so that no rank writes a fit that lacks another's chains.
Expected<sample::Fit> run_chains(const SampleCommand& c, Prepared& p, sample::DrawSink& sink,
                                 std::chrono::steady_clock::time_point started, BackendRun& run) {
  std::vector<uint32_t> next_draw(c.options.chains, 0);
  uint64_t received = 0;
  SampleProgress progress(c, started);
  sample::Options options = p.inputs.options;
  options.on_draw = [&](uint32_t chain, uint32_t draw, uint64_t in_all) {
    next_draw[chain] = draw + 1;
    received = in_all;
    progress.drew(received, next_draw);
  };
  // Polled at step boundaries: Ctrl-C, and the progress line while no draw comes.
  options.should_stop = [&] {
    // A signal now keeps what the run made; under mpirun it ends every rank at once.
    if (distributed())
      ranks_stop_at_once(root_rank());
    else
      stop_at_step_boundaries();
    progress.tick(received, next_draw);
    return interrupt_signal() != 0;
  };
  DeviceOptions device = c.device;
  device.progress = c.format == "table" && root_rank();
  const Backend* backend = p.backend;
  const sample::Runner runner = [&](const std::shared_ptr<const Module>& module, const Batch& batch,
                                    const RunOptions& run_options) -> Expected<RunResult> {
    auto ran = run_over_ranks(*backend, module, batch, run_options, device);
    if (!ran) return ran.failure();
    run = std::move(*ran);
    return run.result;
  };
  auto sampled = sample::run(*p.model, std::move(p.inputs.data), options, runner, &sink);
  progress.finish();
  return sampled;
}

// What summary.json says of the run beyond the fit: the backend's report and the times.
sample::RunFacts run_facts(const SampleCommand& c, const sample::Fit& fit, const Backend& backend,
                           const BackendRun& run, int signal,
                           std::chrono::steady_clock::time_point started) {
  sample::RunFacts facts;
  facts.backend = std::string(backend.name);
  if (signal) facts.interrupted_by = ::strsignal(signal);
  facts.run_seconds = cli::run_seconds(run);
  facts.wall_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  const GradientUtilization grad_utilization = gradient_utilization(run, c.options.chains);
  if (grad_utilization.known) {
    facts.gradient_utilization = grad_utilization.all;
    facts.gradient_utilization_live = grad_utilization.live;
  }
  std::vector<uint32_t> grads(fit.stats.n_leapfrog.begin(), fit.stats.n_leapfrog.end());
  facts.local_static_utilization =
      local_static_utilization(grads, c.options.chains, c.options.draws);
  // Vulkan: the kernels' build, each kernel's times (VulkanStats::kernels).
  for (const ExtraStat& s : run.extra_stats) {
    if (s.key == "compile_seconds") facts.compile_seconds = s.value.get<double>();
    if (s.key == "kernels") facts.kernels_json = s.value.dump();
  }
  return facts;
}

std::string kernels_text(const BackendRun& run) {
  for (const ExtraStat& s : run.extra_stats)
    if (s.key == "kernels") return s.text;
  return "";
}

// The table after the summary: what ran, how well the chains were batched, where the files are.
void print_run_table(const SampleCommand& c, const sample::Fit& fit, const sample::RunFacts& facts,
                     const BackendRun& run, const sample::FitWriter& writer) {
  fmt::print("{}", sample::format_summary_table(fit.summary));
  fmt::print("\n{} chains x {} draws ({} warm-up) on {}\n", c.options.chains, c.options.draws,
             c.options.warmup, facts.backend);
  if (fit.summary_chains.size() < c.options.chains || fit.summary_draws < c.options.draws)
    fmt::print("  summary over          {} of {} chains, {} draws each\n",
               fit.summary_chains.size(), c.options.chains, fit.summary_draws);
  const uint64_t total_grads = fit.gradient_evaluations;
  fmt::print("  gradient evaluations  {} ({:.3g} per second)\n", total_grads,
             facts.run_seconds > 0 ? total_grads / facts.run_seconds : 0.0);
  fmt::print("  batch utilization     {:.1f}%\n", fit.run_stats.utilization * 100);
  if (facts.gradient_utilization)
    fmt::print(
        "  gradient utilization  {:.1f}% of chains, {:.1f}% of live chains (local static "
        "batching: {:.1f}%)\n",
        *facts.gradient_utilization * 100, *facts.gradient_utilization_live * 100,
        facts.local_static_utilization * 100);
  fmt::print("  divergences           {}\n", fit.divergences);
  if (!fit.faults.empty()) fmt::print("  faulted chains        {}\n", fit.faults.size());
  fmt::print("  run time              {}, wall {}\n", format_seconds(facts.run_seconds),
             format_seconds(facts.wall_seconds));
  if (facts.compile_seconds && !facts.kernels_json.empty())
    fmt::print("  kernel compile        {}: {}\n", format_seconds(*facts.compile_seconds),
               kernels_text(run));
  fmt::print("  written               {}, summary.json and per-draw statistics{}\n",
             writer.path("draws.npy"),
             c.csv ? fmt::format(", {}", writer.path(fmt::format("{}-1.csv",
                                                                 fit_file_options(c).model_name)) +
                                             (c.options.chains > 1 ? " ..." : ""))
                   : "");
}

// A fit the run could not make, or one with no draw or no summary: nothing is written, the
// previous fit stays. 0 when the fit is to be written.
int refuse_fit(const SampleCommand& c, const Expected<sample::Fit>& sampled, int signal,
               const sample::FitWriter& writer) {
  if (!sampled) {
    if (signal) return interrupted_without_draws(signal, writer);
    return report_error(sampled.failure());
  }
  const sample::Fit& fit = *sampled;
  for (const std::string& line : fit.chain_messages)
    fmt::print(stderr, "{}\n", line);
  if (fit.received == 0) {
    if (signal) return interrupted_without_draws(signal, writer);
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
        fit.received, uint64_t{c.options.chains} * c.options.draws,
        c.out_dir.empty() ? "." : c.out_dir)});
  return 0;
}

// A rank other than 0: its block of chains, sent to rank 0; nothing printed or written.
int run_rank_chains(const SampleCommand& c, Prepared& p,
                    std::chrono::steady_clock::time_point started) {
  // Rank 0's output folder, opened or refused: every rank learns it here.
  if (agree_to_run(true) != Ready::Go) return 2;
  DiscardDraws sink;
  BackendRun run;
  auto sampled = run_chains(c, p, sink, started, run);
  if (sampled || sampled.error() == kSentToRoot) return 0;
  fmt::print(stderr, "rank {}: ", ranks().rank);
  return report_error(sampled.failure());
}

}  // namespace

int sample_command(const SampleCommand& c) {
  const auto started = std::chrono::steady_clock::now();
  catch_interrupts();  // until the first step, a Ctrl-C or SIGTERM ends the process at once
  auto prepared = prepare(c);
  if (const Ready ready = agree_to_run(bool(prepared)); ready != Ready::Go)
    return ready == Ready::Report ? refuse(prepared.failure()) : 2;
  if (!root_rank()) return run_rank_chains(c, *prepared, started);
  auto opened = sample::FitWriter::open(c.out_dir.empty() ? "." : c.out_dir, c.options,
                                        prepared->model->dimension(), fit_file_options(c));
  if (const Ready ready = agree_to_run(bool(opened)); ready != Ready::Go)
    return refuse(opened.failure());
  sample::FitWriter& writer = **opened;
  if (!prepared->backend_note.empty()) fmt::print(stderr, "{}\n", prepared->backend_note);
  warn_about_short_warmup(c);

  BackendRun run;  // the backend's own report (block names, run time) beside the fit
  auto sampled = run_chains(c, *prepared, writer.draws(), started, run);
  const int signal = interrupt_signal();
  if (!writer.draws().error().empty()) return report_error(Error{writer.draws().error()});
  if (const int refused = refuse_fit(c, sampled, signal, writer)) return refused;
  const sample::Fit& fit = *sampled;
  const sample::RunFacts facts = run_facts(c, fit, *prepared->backend, run, signal, started);
  if (auto s = writer.finish(fit, facts); !s) return report_error(s.failure());

  const int exit_code = signal ? 128 + signal : 0;  // every chain faulted: returned above
  if (signal)
    fmt::print(stderr,
               "stopped by {}: {} of {} draws written (per chain: {}); the missing draws are NaN\n",
               ::strsignal(signal), fit.received, uint64_t{c.options.chains} * c.options.draws,
               fmt::join(fit.draws_per_chain, " "));
  if (fit.summary_chains.empty())
    fmt::print(stderr, "error: every chain faulted or was refused: there is no summary\n");
  for (const sample::FitWarning& w : fit.warnings)
    fmt::print(stderr, "warning: {}\n", w.message);
  if (c.format == "json") {
    fmt::print("{}\n", sample::summary_json(fit, fit_file_options(c), facts, writer.files()));
    return exit_code;
  }
  print_run_table(c, fit, facts, run, writer);
  return exit_code;
}

}  // namespace ab::cli
