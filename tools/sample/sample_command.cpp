#include "tools/sample/sample_command.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "tools/commands.h"
#include "tools/file_io.h"
#include "tools/npy.h"
#include "tools/sample/summary.h"
#include "tools/uniforms.h"

namespace ab::cli {
namespace {

const char* const kContract =
    "a model defines const D: int and fn log_density(q: float[D]) -> float, or with a hand-written "
    "gradient struct LogDensity { value: float, grad: float[D] } and fn log_density(q: float[D]) "
    "-> LogDensity (docs/nuts.md)";

// What nuts.ab calls for the value and gradient at q: the model's own LogDensity, or the one
// automatic differentiation derives from a float-valued log_density (docs/language.md).
const char* const kHandGradient =
    "\nfn nuts_density(q: float[D]) -> LogDensity { return log_density(q); }\n";
const char* const kDerivedGradient =
    "\nstruct nuts_Density { value: float, grad: float[D] }\n"
    "fn nuts_density(q: float[D]) -> nuts_Density {\n"
    "    let d = value_and_grad(log_density, q);\n"
    "    return nuts_Density { value: d.value, grad: d.grad };\n}\n";

// `text` compiled as `file`; `entry` empty: only checked.
Expected<std::shared_ptr<const Module>> compile_text(const std::string& text,
                                                     const std::string& file,
                                                     const std::string& entry,
                                                     std::vector<std::string> first = {}) {
  CompileOptions options;
  options.file = file;
  options.entry = entry;
  options.functions_first = std::move(first);
  return Module::compile(text, options);
}

bool is_float_array(const ValueType& t) {
  return t.is_array() && t.elem().is_scalar() && t.elem().scalar == Scalar::Float;
}

// Writes each draw straight into DIR/draws.npy ([chains, draws, D] float32) at its place, so
// memory holds no more than the device's stream, whatever the number of draws.
class DrawsFile {
 public:
  Status open(const std::string& path, uint32_t chains, uint32_t draws, uint32_t dimension) {
    path_ = path;
    const std::string header = encode_npy("<f4", {chains, draws, dimension}, "");
    header_bytes_ = header.size();
    dimension_ = dimension;
    draws_ = draws;
    fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC, 0644);
    if (fd_ < 0) return Error{fmt::format("cannot write '{}': {}", path, std::strerror(errno))};
    const uint64_t bytes = header_bytes_ + uint64_t{chains} * draws * dimension * 4;
    if (::ftruncate(fd_, static_cast<off_t>(bytes)) != 0 ||
        ::pwrite(fd_, header.data(), header.size(), 0) != static_cast<ssize_t>(header.size()))
      return Error{fmt::format("cannot write '{}': {}", path, std::strerror(errno))};
    return Ok{};
  }
  bool write(uint32_t chain, uint32_t draw, const uint32_t* q) {
    const uint64_t at = header_bytes_ + (uint64_t{chain} * draws_ + draw) * dimension_ * 4;
    return ::pwrite(fd_, q, dimension_ * 4, static_cast<off_t>(at)) ==
           static_cast<ssize_t>(dimension_ * 4);
  }
  // The draws of parameter `j`, chain-major, as doubles.
  std::vector<double> parameter(const float* mapped, uint32_t chains, uint32_t j) const {
    std::vector<double> out(uint64_t{chains} * draws_);
    for (uint64_t k = 0; k < out.size(); ++k)
      out[k] = mapped[k * dimension_ + j];
    return out;
  }
  int fd() const { return fd_; }
  uint64_t header_bytes() const { return header_bytes_; }
  ~DrawsFile() {
    if (fd_ >= 0) ::close(fd_);
  }

 private:
  std::string path_;
  int fd_ = -1;
  uint64_t header_bytes_ = 0;
  uint32_t dimension_ = 0, draws_ = 0;
};

std::string format_seconds(double s) {
  return s < 1 ? fmt::format("{:.0f} ms", s * 1000) : fmt::format("{:.2f} s", s);
}

// The sampler's functions (main, then every nuts_ function in source order) ahead of the model's
// (CompileOptions::functions_first). Blocks are numbered in function order and the schedulers run
// the earliest block with lanes waiting (Radul et al. 2020, Algorithm 1), so with the log density
// last a chain between gradients always runs on until it reaches the next one: the gradient then
// runs for every live chain at once, whichever trajectory each is in (Figure 7). With the model
// first, a chain that finished its trajectory would wait at main's blocks until every chain had
// finished theirs: synchronised on trajectory boundaries, no better than local static batching.
const std::vector<std::string> kSamplerFirst = {"main", "nuts_*"};

// A refusal before anything runs (a model off the contract, data of the wrong shape, a bad
// option): one message and exit code 2, as for any bad usage of `sample`.
int refuse(const Error& error) {
  report_error(error);
  return 2;
}

}  // namespace

uint32_t field_offset(const ValueType& t, const std::string& name) {
  const ValueField* field = t.field(name);
  if (!field) throw std::out_of_range("no field " + name);  // the sampler's own types: a bug
  return field->offset;
}

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

Expected<SampleProgram> load_sample_program(const std::string& model_path) {
  auto text = read_file(model_path);
  if (!text) return text.failure();
  // The model alone first: its errors point at its own lines.
  auto model = compile_text(*text, model_path, "");
  if (!model) return model.failure();
  for (const FunctionInfo& f : (*model)->functions()) {
    if (f.name.rfind("nuts_", 0) == 0)
      return Error{fmt::format("{}: function '{}': names starting with 'nuts_' are the sampler's",
                               model_path, f.name)};
    if (f.name == "main")
      return Error{fmt::format("{}: a model has no 'main' (the sampler's entry); {}", model_path,
                               kContract)};
  }
  for (const ValueInfo& u : (*model)->uniforms())
    if (u.name.rfind("nuts_", 0) == 0)
      return Error{fmt::format("{}: uniform '{}': names starting with 'nuts_' are the sampler's",
                               model_path, u.name)};
  const auto& functions = (*model)->functions();
  const auto density = std::find_if(functions.begin(), functions.end(),
                                    [](const FunctionInfo& f) { return f.name == "log_density"; });
  if (density == functions.end())
    return Error{fmt::format("{}: no function 'log_density'; {}", model_path, kContract)};
  const FunctionInfo& fn = *density;
  const ValueType& result = fn.result.value_type;
  const bool derived = result.is_scalar() && result.scalar == Scalar::Float;
  bool fits = fn.params.size() == 1 && is_float_array(fn.params[0].value_type) &&
              (derived || (result.is_struct() && result.struct_name == "LogDensity"));
  if (fits && !derived) {
    const ValueField *value = result.field("value"), *grad = result.field("grad");
    fits = result.fields.size() == 2 && value && grad && value->type.is_scalar() &&
           value->type.scalar == Scalar::Float && grad->type.spelling() == fn.params[0].type;
  }
  if (!fits)
    return Error{fmt::format("{}:{}:{}: 'log_density' does not fit the model contract: {}",
                             model_path, fn.line, fn.col, kContract)};
  const uint32_t length = fn.params[0].value_type.count;
  // D: a probe function returning it.
  auto probe = compile_text(*text + "\nfn nuts_dimension() -> int { return D; }\n", model_path,
                            "nuts_dimension");
  if (!probe)
    return Error{fmt::format("{}: no 'const D: int' (the dimension); {}", model_path, kContract)};
  Batch one;
  one.lanes = 1;
  for (const ValueInfo& u : (*probe)->uniforms())
    one.uniforms.emplace_back(u.words, 0u);
  auto d = (*probe)->run_cpu(one, RunOptions{}, CpuBackend::Interpreter);
  if (!d) return d.failure();
  const auto dimension = static_cast<int32_t>(d->outputs.at(0));
  if (dimension <= 0 || static_cast<uint32_t>(dimension) != length)
    return Error{fmt::format("{}: D is {} but log_density takes float[{}]; {}", model_path,
                             dimension, length, kContract)};

  auto combined = compile_text(*text + (derived ? kDerivedGradient : kHandGradient) + kNutsSource,
                               model_path + " + nuts.ab", "main", kSamplerFirst);
  if (!combined) return combined.failure();
  SampleProgram out;
  out.module = std::move(*combined);
  out.dimension = length;
  return out;
}

Expected<Batch> sampler_batch(const SampleProgram& loaded, const SampleCommand& c) {
  const Module& module = *loaded.module;
  const uint32_t D = loaded.dimension;
  Batch batch;
  batch.lanes = c.chains;
  auto uniforms = bind_uniforms(module.uniforms(), c.uniforms);
  if (!uniforms) return uniforms.failure();
  batch.uniforms = std::move(*uniforms);
  // main(init: float[D], random_init: bool, settings: nuts_Settings)
  std::vector<uint32_t> init(uint64_t{c.chains} * D, 0u);
  const bool random_init = c.init.empty();
  if (!random_init) {
    auto array = read_npy(c.init);
    if (!array) return array.failure();
    if (array->shape != std::vector<uint64_t>{c.chains, D})
      return Error{fmt::format("--init '{}' must have shape ({}, {}) for {} chains of dimension {}",
                               c.init, c.chains, D, c.chains, D)};
    for (uint64_t k = 0; k < init.size(); ++k) {
      auto word = encode_number(array->at(k), Scalar::Float);
      if (!word) return Error{fmt::format("--init '{}': {}", c.init, word.error())};
      init[k] = *word;
    }
  }
  const ValueType& settings_type = module.inputs().at(2).value_type;
  std::vector<uint32_t> settings(settings_type.words, 0u);
  auto set = [&](const char* field, uint32_t word) {
    settings[field_offset(settings_type, field)] = word;
  };
  set("warmup", c.warmup);
  set("draws", c.draws);
  set("leaf_steps", c.leaf_steps);
  set("max_depth", c.max_depth);
  set("target_accept", float_bits(static_cast<float>(c.target_accept)));
  set("step_size", float_bits(static_cast<float>(c.step_size)));
  set("adapt_metric", c.adapt_metric ? 1u : 0u);
  set("search_step", c.search_step ? 1u : 0u);
  batch.inputs.push_back(init);
  batch.inputs.emplace_back(c.chains, random_init ? 1u : 0u);
  batch.inputs.emplace_back();
  for (uint32_t chain = 0; chain < c.chains; ++chain)
    batch.inputs.back().insert(batch.inputs.back().end(), settings.begin(), settings.end());
  return batch;
}

int sample_command(const SampleCommand& c) {
  const auto started = std::chrono::steady_clock::now();
  if (c.chains == 0) {
    fmt::print(stderr, "error: --chains must be at least 1\n");
    return 2;
  }
  const Backend* backend = find_backend(c.backend);
  if (!backend) return refuse(Error{fmt::format("unknown backend '{}'", c.backend)});
  auto loaded = load_sample_program(c.model);
  if (!loaded) return refuse(loaded.failure());
  const Module& module = *loaded->module;
  const uint32_t D = loaded->dimension;

  auto built = sampler_batch(*loaded, c);
  if (!built) return refuse(built.failure());
  const Batch& batch = *built;

  const std::string out_dir = c.out_dir.empty() ? "." : c.out_dir;
  std::error_code ec;
  std::filesystem::create_directories(out_dir, ec);
  if (ec || !std::filesystem::is_directory(out_dir, ec))
    return report_error(Error{fmt::format("cannot write into '{}'", out_dir)});
  const auto path = [&](const char* name) {
    return (std::filesystem::path(out_dir) / name).string();
  };
  DrawsFile draws_file;
  if (auto s = draws_file.open(path("draws.npy"), c.chains, c.draws, D); !s)
    return report_error(s.failure());

  // Per draw statistics, [chains, draws] each.
  const ValueType& record = module.emit_record().value_type;
  const uint32_t at_accept = field_offset(record, "accept"),
                 at_step = field_offset(record, "step_size"),
                 at_energy = field_offset(record, "energy"),
                 at_depth = field_offset(record, "depth"), at_grads = field_offset(record, "grads"),
                 at_divergent = field_offset(record, "divergent"), at_q = field_offset(record, "q");
  const uint64_t cells = uint64_t{c.chains} * c.draws;
  std::vector<uint32_t> accept(cells), step(cells), energy(cells), depth(cells), grads(cells),
      divergent(cells);
  std::vector<uint32_t> next_draw(c.chains, 0);
  bool write_failed = false;
  uint64_t received = 0;
  auto last_progress = started;
  double last_shown = -1e9;
  bool progress_shown = false;
  RunOptions options;
  options.seed = c.seed;
  options.threads = c.threads;
  options.stack_depth = c.max_depth + 8;
  options.max_steps = UINT32_MAX;
  options.on_emit = [&](uint32_t chain, const uint32_t* r) {
    const uint32_t i = next_draw[chain]++;
    if (i >= c.draws) return;
    write_failed |= !draws_file.write(chain, i, r + at_q);
    const uint64_t k = uint64_t{chain} * c.draws + i;
    accept[k] = r[at_accept];
    step[k] = r[at_step];
    energy[k] = r[at_energy];
    depth[k] = r[at_depth];
    grads[k] = r[at_grads];
    divergent[k] = r[at_divergent];
    ++received;
    const auto now = std::chrono::steady_clock::now();
    const double elapsed = std::chrono::duration<double>(now - started).count();
    if (c.format == "table" && elapsed > 1.0 &&
        now - last_progress > std::chrono::milliseconds(500) && progress_due(elapsed, last_shown)) {
      last_progress = now;
      progress_shown = true;
      fmt::print(stderr, "{}sampling: {} of {} draws ({:.0f}%){}", progress_start(), received,
                 cells, 100.0 * static_cast<double>(received) / static_cast<double>(cells),
                 progress_end());
    }
  };
  DeviceOptions device = c.device;
  device.progress = c.format == "table";
  const BackendRun run = backend->run(loaded->module, batch, options, device);
  if (progress_shown && stderr_is_terminal()) fmt::print(stderr, "\n");
  if (!run.error.empty()) return report_error(Error{run.error});
  if (write_failed) return report_error(Error{fmt::format("cannot write '{}'", path("draws.npy"))});
  for (const LaneError& e : run.result.errors)
    fmt::print(stderr, "chain {} faulted: {} in {} at line {} (its draws stop there)\n", e.lane,
               fault_name(e.code), e.function, e.line);

  // Chain totals from main's result.
  const ValueType& chain_type = module.output().value_type;
  const uint32_t chain_words = chain_type.words;
  uint64_t total_grads = 0, divergences = 0;
  std::vector<double> step_sizes;
  for (uint32_t chain = 0; chain < c.chains; ++chain) {
    const uint32_t* w = run.result.outputs.data() + uint64_t{chain} * chain_words;
    total_grads += w[field_offset(chain_type, "grads")];
    divergences += w[field_offset(chain_type, "divergences")];
    step_sizes.push_back(bits_float(w[field_offset(chain_type, "step_size")]));
  }
  for (auto [name, words, type] : {std::tuple{"accept_stat.npy", &accept, Scalar::Float},
                                   std::tuple{"step_size.npy", &step, Scalar::Float},
                                   std::tuple{"energy.npy", &energy, Scalar::Float},
                                   std::tuple{"tree_depth.npy", &depth, Scalar::Int},
                                   std::tuple{"n_grad.npy", &grads, Scalar::Int},
                                   std::tuple{"divergent.npy", &divergent, Scalar::Bool}})
    if (auto s = write_npy(path(name), type, {c.chains, c.draws}, *words); !s)
      return report_error(s.failure());

  // The summary, from the draws file (mapped: the draws never sit in memory twice).
  const uint64_t file_bytes = draws_file.header_bytes() + cells * D * 4;
  void* mapped = ::mmap(nullptr, file_bytes, PROT_READ, MAP_SHARED, draws_file.fd(), 0);
  if (mapped == MAP_FAILED) return report_error(Error{"cannot read back draws.npy"});
  const auto* values =
      reinterpret_cast<const float*>(static_cast<const char*>(mapped) + draws_file.header_bytes());
  std::vector<std::string> names;
  std::vector<sample::ParameterSummary> summaries;
  for (uint32_t j = 0; j < D; ++j) {
    names.push_back(fmt::format("q[{}]", j));
    summaries.push_back(
        sample::summarize(draws_file.parameter(values, c.chains, j), c.chains, c.draws));
  }
  ::munmap(mapped, file_bytes);

  const double wall =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  const double run_seconds = cli::run_seconds(run);
  nlohmann::ordered_json doc;
  doc["model"] = c.model;
  doc["backend"] = backend->name;
  doc["chains"] = c.chains;
  doc["draws"] = c.draws;
  doc["warmup"] = c.warmup;
  doc["seed"] = c.seed;
  nlohmann::ordered_json params = nlohmann::ordered_json::array();
  for (uint32_t j = 0; j < D; ++j) {
    const auto& s = summaries[j];
    auto num = [](double v) { return std::isfinite(v) ? nlohmann::ordered_json(v) : nullptr; };
    params.push_back({{"name", names[j]},
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
  doc["gradient_evaluations"] = total_grads;
  doc["gradients_per_second"] = run_seconds > 0 ? total_grads / run_seconds : 0.0;
  doc["utilization"] = run.result.stats.utilization;
  const GradientUtilization grad_utilization = gradient_utilization(run, c.chains);
  const double static_utilization = local_static_utilization(grads, c.chains, c.draws);
  doc["gradient_utilization"] =
      grad_utilization.known ? nlohmann::ordered_json(grad_utilization.all) : nullptr;
  doc["gradient_utilization_live"] =
      grad_utilization.known ? nlohmann::ordered_json(grad_utilization.live) : nullptr;
  doc["local_static_utilization"] = static_utilization;
  doc["divergences"] = divergences;
  doc["faulted_chains"] = run.result.errors.size();
  doc["step_sizes"] = step_sizes;
  doc["run_seconds"] = run_seconds;
  doc["wall_seconds"] = wall;
  {
    std::ofstream f(path("summary.json"));
    f << doc.dump(2) << "\n";
    if (!f) return report_error(Error{fmt::format("cannot write '{}'", path("summary.json"))});
  }
  if (c.format == "json") {
    fmt::print("{}\n", doc.dump());
    return 0;
  }
  fmt::print("{}", sample::format_summary_table(names, summaries));
  fmt::print("\n{} chains x {} draws ({} warm-up) on {}\n", c.chains, c.draws, c.warmup,
             backend->name);
  fmt::print("  gradient evaluations  {} ({:.3g} per second)\n", total_grads,
             run_seconds > 0 ? total_grads / run_seconds : 0.0);
  fmt::print("  batch utilization     {:.1f}%\n", run.result.stats.utilization * 100);
  if (grad_utilization.known)
    fmt::print(
        "  gradient utilization  {:.1f}% of chains, {:.1f}% of live chains (local static "
        "batching: {:.1f}%)\n",
        grad_utilization.all * 100, grad_utilization.live * 100, static_utilization * 100);
  fmt::print("  divergences           {}\n", divergences);
  if (!run.result.errors.empty())
    fmt::print("  faulted chains        {}\n", run.result.errors.size());
  fmt::print("  run time              {}, wall {}\n", format_seconds(run_seconds),
             format_seconds(wall));
  fmt::print("  written               {}, summary.json and per-draw statistics\n",
             path("draws.npy"));
  return 0;
}

}  // namespace ab::cli
