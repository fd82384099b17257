#include "tools/sample/nuts_bench.h"

#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <map>
#include <thread>
#include <tuple>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "autobatch/npy.h"
#include "bench/harness.h"
#include "bench/native_nuts.h"
#include "tools/commands.h"
#include "tools/file_io.h"
#include "tools/sample/sample_command.h"

namespace ab::cli {
namespace {

namespace fs = std::filesystem;
using bench::NutsModel;
using bench::NutsSettings;

// Chains whose draws every row checks against the native sampler (the same chain gives the same
// draws at every batch size, so one reference serves every row).
constexpr uint32_t kCheckedChains = 4;
constexpr uint64_t kSeed = 1;

struct BenchModel {
  std::string name;                                           // what --programs takes
  std::string model;                                          // under samples/models/
  std::vector<std::pair<std::string, std::string>> uniforms;  // name, file under samples/data/
  uint32_t draws = 0, quick_draws = 0;                        // transitions per chain
  float step_size = 0;  // every chain's, fixed (no search, no warm-up), as in the paper's runs
  std::string about;
  // The native sampler's model (bench/native_nuts.h) computes the same float operations in the
  // same order as the .ab model's gradient (written by hand, or the product forms' derived one),
  // so the draws equal native's bit for bit; `loop` picks the scalar loop's order.
  bool loop = false;
  // For a gradient derived through a loop, which rounds differently from the hand-written loop
  // that native mirrors: the hand-written row it mirrors. Its chains leave native's after a few
  // steps and are not compared; the bench reports what the derived gradient costs against it.
  std::string derived_from;
  // The Stan model, bench/stan/STAN.stan: one per target, shared by its forms (and run once).
  std::string stan;
  // The native sampler has this model (bench/native_nuts.h); without it the native rows are
  // skipped and the draws are not compared.
  bool native = true;
  // Warm-up iterations per chain (Stan's adaptation of the step size and a diagonal metric, on
  // every system), counted in the rates like the draws; 0: none, the fixed step_size throughout.
  // A model whose scales differ by orders of magnitude (earnings: beta[1] ~ 0.006 wide, sigma
  // ~ 0.02) diverges or crawls at any one step size from a random start.
  uint32_t warmup = 0;
};

const std::vector<BenchModel>& bench_models() {
  using Uniforms = std::vector<std::pair<std::string, std::string>>;
  const Uniforms logreg = {{"X", "logreg_X.npy"}, {"y", "logreg_y.npy"}};
  const Uniforms gaussian = {{"precision", "gaussian_precision.npy"}};
  static const std::vector<BenchModel> models = {
      {"nuts_logreg", "logistic_regression.ab", logreg, 2, 1, 0.03f,
       "logistic regression, D = 100, N = 10000, z = X @ w, derived gradient", false, "",
       "logistic_regression"},
      {"nuts_gaussian", "correlated_gaussian.ab", gaussian, 10, 10, 0.1f,
       "correlated Gaussian, D = 100, P @ q, derived gradient", false, "", "correlated_gaussian"},
      {"nuts_logreg_loop", "logistic_regression_loop.ab", logreg, 2, 1, 0.03f,
       "logistic regression, D = 100, N = 10000, a loop over the rows, gradient by hand", true, "",
       "logistic_regression"},
      {"nuts_gaussian_loop", "correlated_gaussian_loop.ab", gaussian, 10, 10, 0.1f,
       "correlated Gaussian, D = 100, a loop of row dot products, gradient by hand", true, "",
       "correlated_gaussian"},
      {"nuts_logreg_loop_ad", "logistic_regression_loop_ad.ab", logreg, 2, 1, 0.03f,
       "logistic regression, D = 100, N = 10000, a loop over the rows, derived gradient", true,
       "nuts_logreg_loop", "logistic_regression"},
      {"nuts_gaussian_loop_ad", "correlated_gaussian_loop_ad.ab", gaussian, 10, 10, 0.1f,
       "correlated Gaussian, D = 100, a loop of row dot products, derived gradient", true,
       "nuts_gaussian_loop", "correlated_gaussian"},
      {"nuts_earnings",
       "earnings_logearn_height.ab",
       {{"log_earn", "earnings_log_earn.npy"}, {"height", "earnings_height.npy"}},
       30,
       10,
       0.01f,
       "posteriordb's earnings-logearn_height, N = 1192, a row loop, derived gradient",
       false,
       "",
       "earnings_logearn_height",
       false,
       30},
  };
  return models;
}

// samples/ next to the working directory, else beside the executable's build folder.
std::string find_samples() {
  std::vector<fs::path> candidates = {fs::current_path() / "samples"};
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    candidates.push_back(exe.parent_path().parent_path() / "samples");
    candidates.push_back(exe.parent_path() / "samples");
  }
  for (const fs::path& p : candidates)
    if (fs::exists(p / "models" / "logistic_regression.ab", ec)) return p.string();
  return "";
}

Expected<std::vector<float>> read_floats(const std::string& path) {
  auto array = read_npy(path);
  if (!array) return array.failure();
  if (array->type != NpyType::Float32) return Error{fmt::format("'{}' is not float32", path)};
  std::vector<float> out(array->elements());
  std::memcpy(out.data(), array->data.data(), out.size() * sizeof(float));
  return out;
}

Expected<NutsModel> native_model(const BenchModel& m, const std::string& data) {
  if (m.stan == "logistic_regression") {
    auto X = read_floats(data + "/logreg_X.npy");
    if (!X) return X.failure();
    auto y = read_floats(data + "/logreg_y.npy");
    if (!y) return y.failure();
    if (m.loop)
      return bench::nuts_logistic_regression_loop_model(std::move(*X), std::move(*y), 100, 100);
    return bench::nuts_logistic_regression_model(std::move(*X), std::move(*y), 100);
  }
  auto precision = read_floats(data + "/gaussian_precision.npy");
  if (!precision) return precision.failure();
  if (m.loop) return bench::nuts_correlated_gaussian_loop_model(std::move(*precision), 100);
  return bench::nuts_correlated_gaussian_model(std::move(*precision), 100);
}

struct SystemSpec {
  std::string name;
  std::string backend;  // "native", "vm", "vulkan" or "stan"
  DeviceOptions device;
  // vm: RunOptions::loop_tiles (on: "vm-tiles", to measure them against one block per step)
  bool loop_tiles = false;
  // Off: "vm-loops", the model compiled with every loop left a loop (CompileOptions::
  // vectorize_loops), to measure what running loops as array code buys.
  bool vectorize_loops = true;
};

std::vector<SystemSpec> all_systems(int device_index) {
  auto vulkan = [&](const char* name, Schedule schedule, std::optional<LocalScope> scope) {
    SystemSpec s{name, "vulkan", {}};
    s.device.schedule = schedule;
    s.device.local_scope = scope;
    if (schedule == Schedule::Global) s.device.global_mode = GlobalMode::Compacted;
    s.device.vulkan.context.device_index = device_index;
    return s;
  };
  return {{"stan", "stan", {}},
          {"native", "native", {}},
          {"vm", "vm", {}},
          {"vm-tiles", "vm", {}, true},
          {"vm-loops", "vm", {}, false, false},
          vulkan("local-lane", Schedule::Local, LocalScope::Lane),
          vulkan("local-subgroup", Schedule::Local, LocalScope::Subgroup),
          vulkan("global-compacted", Schedule::Global, std::nullopt)};
}

// One row: a system's gradients per second at a number of chains, its check, and (vm) the
// gradient utilization.
struct Row {
  std::string model, system;
  uint32_t chains = 0, draws = 0;
  uint64_t grads = 0;
  double seconds = 0;         // wall
  double cpu_seconds = 0;     // the process's CPU time (all its threads; Stan: its own timers)
  std::string status = "ok";  // ok | FAILED: ... | skipped: ... | error: ...
  int runs = 1;               // the seconds are the medians of this many runs (--repeats)
  GradientUtilization pc{};
  double local_static = 0;
};

// CPU seconds this process has used (all its threads).
double process_cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

// The first chains' draws (q and the per-draw statistics), as words, per chain.
using ChainWords = std::vector<std::vector<uint32_t>>;

ChainWords native_reference(const NutsModel& model, const NutsSettings& settings, uint32_t chains) {
  ChainWords out(chains);
  for (uint32_t c = 0; c < chains; ++c) {
    const bench::NutsChainResult r = bench::native_nuts_chain(model, settings, kSeed, c, nullptr);
    for (const bench::NutsDraw& d : r.draws) {
      for (float x : d.q)
        out[c].push_back(std::bit_cast<uint32_t>(x));
      out[c].push_back(std::bit_cast<uint32_t>(d.accept));
      out[c].push_back(std::bit_cast<uint32_t>(d.energy));
      out[c].push_back(static_cast<uint32_t>(d.grads));
    }
  }
  return out;
}

// Whether `got` equals `want` (bit for bit, or floats within 1e-4 relative when `tolerant`); an
// Error names the first difference.
Status compare(const ChainWords& want, const ChainWords& got, uint32_t dimension, bool tolerant) {
  for (size_t c = 0; c < want.size() && c < got.size(); ++c) {
    if (want[c].size() != got[c].size())
      return Error{fmt::format("chain {}: {} words of draws, expected {}", c, got[c].size(),
                               want[c].size())};
    const size_t per_draw = dimension + 3;
    for (size_t i = 0; i < want[c].size(); ++i) {
      if (want[c][i] == got[c][i]) continue;
      const bool is_float = i % per_draw != per_draw - 1;
      if (tolerant && is_float &&
          bench::within_float_tolerance(std::bit_cast<float>(want[c][i]),
                                        std::bit_cast<float>(got[c][i])))
        continue;
      return Error{fmt::format("chain {} draw {} word {} differs from the native sampler's", c,
                               i / per_draw, i % per_draw)};
    }
  }
  return Ok{};
}

struct Loaded {
  std::shared_ptr<const sample::Model> program;
  SampleCommand command;
  Batch batch;
  uint32_t at_q = 0, at_accept = 0, at_energy = 0, at_grads = 0, chain_grads = 0;
};

Expected<Loaded> load(const BenchModel& m, const std::string& samples, uint32_t chains,
                      uint32_t draws, bool vectorize_loops = true) {
  Loaded l;
  l.command.model = samples + "/models/" + m.model;
  l.command.options.chains = chains;
  l.command.options.draws = draws;
  l.command.options.warmup = m.warmup;
  l.command.options.leaf_steps = 4;  // the paper's (Radul et al. 2020, §4.1), as the native sampler
  l.command.options.step_size = m.step_size;
  l.command.options.search_step = m.warmup > 0;
  l.command.options.seed = kSeed;
  for (const auto& [name, file] : m.uniforms)
    l.command.uniforms.push_back(name + "=@" + samples + "/data/" + file);
  auto program = sample::Model::load(l.command.model, vectorize_loops);
  if (!program) return program.failure();
  l.program = std::move(*program);
  auto batch = sampler_batch(*l.program, l.command);
  if (!batch) return batch.failure();
  l.batch = std::move(*batch);
  const ValueType& record = l.program->module()->emit_record().value_type;
  l.at_q = sample::field_offset(record, "q");
  l.at_accept = sample::field_offset(record, "accept");
  l.at_energy = sample::field_offset(record, "energy");
  l.at_grads = sample::field_offset(record, "grads");
  l.chain_grads = sample::field_offset(l.program->module()->output().value_type, "grads");
  return l;
}

// Runs the sampler on a CPU or Vulkan backend; fills the row and the checked chains' words.
void run_program_row(const Loaded& l, const SystemSpec& system, Row& row, ChainWords& checked,
                     std::vector<uint32_t>& grads_per_draw, uint32_t threads) {
  const uint32_t D = l.program->dimension(), chains = l.command.options.chains,
                 draws = l.command.options.draws;
  checked.assign(std::min(chains, kCheckedChains), {});
  grads_per_draw.assign(uint64_t{chains} * draws, 0);
  std::vector<uint32_t> next(chains, 0);
  RunOptions options;
  options.seed = kSeed;
  options.stack_depth = l.command.options.max_depth + 8;
  options.max_steps = UINT32_MAX;
  options.threads = threads;
  options.loop_tiles = system.loop_tiles;
  options.on_emit = [&](uint32_t chain, const uint32_t* r) {
    const uint32_t i = next[chain]++;
    if (i < draws) grads_per_draw[uint64_t{chain} * draws + i] = r[l.at_grads];
    if (chain >= checked.size()) return;
    checked[chain].insert(checked[chain].end(), r + l.at_q, r + l.at_q + D);
    checked[chain].push_back(r[l.at_accept]);
    checked[chain].push_back(r[l.at_energy]);
    checked[chain].push_back(r[l.at_grads]);
  };
  const Backend* backend = find_backend(system.backend);
  const double cpu_start = process_cpu_seconds();
  const auto ran = backend->run(l.program->module(), l.batch, options, system.device);
  row.cpu_seconds = process_cpu_seconds() - cpu_start;
  if (!ran) {
    row.status = "error: " + ran.error();
    return;
  }
  const BackendRun& run = *ran;
  if (!run.result.errors.empty()) {
    row.status = fmt::format("FAILED: chain {} faulted", run.result.errors.front().lane);
    return;
  }
  const uint32_t words = l.program->module()->output().words;
  for (uint32_t c = 0; c < chains; ++c)
    row.grads += run.result.outputs[uint64_t{c} * words + l.chain_grads];
  row.seconds = run_seconds(run);
  row.pc = gradient_utilization(run, chains);
  row.local_static = local_static_utilization(grads_per_draw, chains, draws);
}

// The row's gradients per wall second and per CPU second.
std::string cell(const Row& r) {
  if (r.status == "ok")
    return fmt::format("{:.3g} {:.3g}", r.seconds > 0 ? r.grads / r.seconds : 0.0,
                       r.cpu_seconds > 0 ? r.grads / r.cpu_seconds : 0.0);
  if (r.status.rfind("skipped", 0) == 0) return "-";
  return r.status.substr(0, r.status.find(':'));
}

constexpr const char* kStanInstall =
    "needs R and rstan: apt-get install r-cran-rstan (Debian/Ubuntu), or "
    "install.packages(\"rstan\") "
    "in R; docs/nuts.md, \"Stan\"";

// Real Stan (rstan) on the same model written in Stan (bench/stan/), the same data, draws,
// step size and tree depth, one chain per core: bench/stan/run_stan.R. Skipped, saying how to
// install it, where R or rstan is missing.
void run_stan_row(const BenchModel& m, const std::string& samples, uint32_t chains, uint32_t draws,
                  Row& row) {
  const fs::path dir = fs::path(samples).parent_path() / "bench" / "stan";
  const std::string stan_file = (dir / (m.stan + ".stan")).string();
  std::error_code ec;
  if (!fs::exists(stan_file, ec)) {
    row.status = "skipped: no Stan model for " + m.name;
    return;
  }
  const char* home = std::getenv("HOME");
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  const std::string cache = xdg && *xdg ? std::string(xdg) + "/autobatch/stan"
                            : home && *home
                                ? std::string(home) + "/.cache/autobatch/stan"
                                : (fs::temp_directory_path() / "autobatch-stan").string();
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  const SampleCommand defaults;
  auto quote = [](const std::string& s) {
    std::string out = "'";
    for (char c : s)
      out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return out + "'";
  };
  const std::string command = fmt::format(
      "Rscript {} {} {} {} {} {} {} {} {} {} {} {} 2>&1", quote((dir / "run_stan.R").string()),
      quote(stan_file), quote(samples + "/data"), m.stan, chains, draws, m.step_size,
      defaults.options.max_depth, kSeed, cores, quote(cache), m.warmup);
  FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) {
    row.status = std::string("skipped: ") + kStanInstall;
    return;
  }
  std::string output;
  char buffer[4096];
  while (size_t n = std::fread(buffer, 1, sizeof buffer, pipe))
    output.append(buffer, n);
  const int status = pclose(pipe);
  const size_t at = output.find("stan_result ");
  double grads = 0;
  if (at != std::string::npos &&
      std::sscanf(output.c_str() + at, "stan_result gradients=%lf cpu_seconds=%lf wall_seconds=%lf",
                  &grads, &row.cpu_seconds, &row.seconds) == 3) {
    row.grads = static_cast<uint64_t>(grads);
    return;
  }
  const bool missing = (WIFEXITED(status) && WEXITSTATUS(status) == 127) ||
                       output.find("no package called") != std::string::npos;
  if (missing) {
    row.status = std::string("skipped: ") + kStanInstall;
    return;
  }
  std::string last = output.substr(0, output.find_last_not_of('\n') + 1);
  last = last.substr(last.find_last_of('\n') + 1);
  row.status = "error: Stan: " + (last.empty() ? std::string("no result") : last);
}

}  // namespace

bool is_nuts_bench_program(const std::string& name) {
  return std::any_of(bench_models().begin(), bench_models().end(),
                     [&](const BenchModel& m) { return m.name == name; });
}

namespace {

// One run of the NUTS rows: what the options chose and what the rows gave so far.
struct NutsBenchRun {
  explicit NutsBenchRun(const NutsBenchOptions& given) : options(given) {}
  const NutsBenchOptions& options;
  std::string samples;  // holding models/ and data/
  std::vector<SystemSpec> systems;
  nlohmann::ordered_json doc = nlohmann::ordered_json::array();  // the JSON's rows
  bool failed = false;
  std::map<std::tuple<std::string, std::string, uint32_t>, double> rates;  // model, system, chains
  std::map<std::tuple<std::string, std::string, uint32_t>, double> cpu_rates;  // per CPU second
  std::vector<uint32_t> chain_counts;
  // Stan's rows by Stan model, chains and transitions: a target's forms share one Stan model, so
  // it samples once per run and each form's row shows it.
  std::map<std::tuple<std::string, uint32_t, uint32_t>, Row> stan_rows;
};

// The systems --systems names (none: native and vm); an Error names an unknown one.
Expected<std::vector<SystemSpec>> select_nuts_systems(const bench::BenchOptions& given) {
  const auto asked = [&](const std::string& name) {
    return std::find(given.systems.begin(), given.systems.end(), name) != given.systems.end();
  };
  const auto& known = all_systems(given.device);
  for (const std::string& name : given.systems)
    if (name != "vulkan" && name != "all" &&
        std::none_of(known.begin(), known.end(),
                     [&](const SystemSpec& s) { return s.name == name; }))
      return Error{fmt::format(
          "unknown system '{}' for the NUTS rows (known: stan, native, vm, vm-tiles, vm-loops, "
          "local-lane, local-subgroup, global-compacted, vulkan, all)",
          name)};
  std::vector<SystemSpec> systems;
  for (const SystemSpec& s : known)
    if (given.systems.empty()
            ? s.backend != "vulkan" && s.backend != "stan" && !s.loop_tiles && s.vectorize_loops
            : asked(s.name) || asked("all") || (s.backend == "vulkan" && asked("vulkan")))
      systems.push_back(s);
  return systems;
}

// The native sampler's row: every chain one after another on the cores.
void run_native_row(const NutsModel& model, const NutsSettings& settings, Row& row) {
  const double cpu_start = process_cpu_seconds();
  const bench::NutsRunResult r =
      bench::native_nuts_chains(model, settings, kSeed, row.chains, nullptr);
  row.cpu_seconds = process_cpu_seconds() - cpu_start;
  row.grads = r.grads;
  row.seconds = r.seconds;
  std::vector<uint32_t> per_draw;
  for (const bench::NutsChainResult& chain : r.chains)
    for (const bench::NutsDraw& d : chain.draws)
      per_draw.push_back(static_cast<uint32_t>(d.grads));
  row.local_static = local_static_utilization(per_draw, row.chains, row.draws);
}

// A system's row of model `m` at `row.chains`; the sampler's draws checked against `reference`
// (the hand-written gradient's rows). An Error: the model could not be loaded.
Status run_system_row(NutsBenchRun& run, const BenchModel& m, const SystemSpec& s,
                      const NutsModel& model, const NutsSettings& settings,
                      const ChainWords& reference, Row& row) {
  if (s.backend == "stan") {
    run_stan_row(m, run.samples, row.chains, row.draws, row);
    return Ok{};
  }
  if (s.backend == "native") {
    if (m.native)
      run_native_row(model, settings, row);
    else
      row.status = "skipped: no native sampler for " + m.name;
    return Ok{};
  }
  auto loaded = load(m, run.samples, row.chains, row.draws, s.vectorize_loops);
  if (!loaded) return loaded.failure();
  ChainWords checked;
  std::vector<uint32_t> per_draw;
  run_program_row(*loaded, s, row, checked, per_draw, run.options.bench.threads);
  if (run.options.tamper_for_test) run.options.tamper_for_test(s.name, checked);
  if (row.status == "ok" && m.derived_from.empty() && m.native) {
    const Status same =
        compare(reference, checked, loaded->program->dimension(), s.backend == "vulkan");
    if (!same) row.status = "FAILED: " + same.error();
  }
  return Ok{};
}

// The system's row run --repeats times (default once): the median wall and CPU seconds (the
// gradients are the same in every run, as the draws are). A run that is not ok is the row.
// Stan's row is shared by a target's forms (run.stan_rows): run for the first, copied after.
Status run_repeated_row(NutsBenchRun& run, const BenchModel& m, const SystemSpec& s,
                        const NutsModel& model, const NutsSettings& settings,
                        const ChainWords& reference, Row& row) {
  const auto key = std::make_tuple(m.stan, row.chains, row.draws);
  if (s.backend == "stan")
    if (const auto done = run.stan_rows.find(key); done != run.stan_rows.end()) {
      const Row& shared = done->second;
      row.grads = shared.grads;
      row.seconds = shared.seconds;
      row.cpu_seconds = shared.cpu_seconds;
      row.status = shared.status;
      row.runs = shared.runs;
      return Ok{};
    }
  const int repeats = std::max(1, run.options.bench.repeats);
  std::vector<double> wall, cpu;
  const Row first = row;
  for (int i = 0; i < repeats; ++i) {
    row = first;
    if (auto done = run_system_row(run, m, s, model, settings, reference, row); !done) return done;
    if (row.status != "ok") break;
    wall.push_back(row.seconds);
    cpu.push_back(row.cpu_seconds);
  }
  if (row.status == "ok") {
    row.seconds = bench::median(wall);
    row.cpu_seconds = bench::median(cpu);
    row.runs = repeats;
  }
  if (s.backend == "stan") run.stan_rows.emplace(key, row);
  return Ok{};
}

void print_model_header(const BenchModel& m, uint32_t draws, const std::vector<SystemSpec>& systems,
                        bool with_stan) {
  fmt::print(
      "\n{} ({}): gradient evaluations over all chains per wall second and per CPU second "
      "(the process's, all threads; Stan's own timers); {} transition{} per chain, {}\n",
      m.name, m.about, draws, draws == 1 ? "" : "s",
      m.warmup ? fmt::format("after {} of warm-up (counted)", m.warmup) : "no warm-up");
  fmt::print("{:>7}", "chains");
  for (const SystemSpec& s : systems)
    fmt::print("  {:>19}", s.name + " wall cpu");
  fmt::print("  {:>12}", "best/native");
  if (with_stan) fmt::print("  {:>12}  {:>12}", "vm/stan cpu", "vm/stan wall");
  fmt::print("\n");
  std::fflush(stdout);
}

// A chain count's line of Figure 6: each system's rates, the best against native, vm against
// Stan; the rates kept for the derived-gradient costs.
void print_rates_line(NutsBenchRun& run, uint32_t chains, const std::vector<Row>& rows,
                      bool with_stan) {
  fmt::print("{:>7}", chains);
  double native = 0, best = 0;
  const Row* stan = nullptr;
  const Row* vm = nullptr;
  for (const Row& r : rows) {
    fmt::print("  {:>19}", cell(r));
    if (r.status != "ok" || r.seconds <= 0) continue;
    const double rate = r.grads / r.seconds;
    run.rates[{r.model, r.system, r.chains}] = rate;
    if (r.cpu_seconds > 0) run.cpu_rates[{r.model, r.system, r.chains}] = r.grads / r.cpu_seconds;
    if (r.system == "stan")
      stan = &r;
    else if (r.system == "vm")
      vm = &r;
    if (r.system == "native")
      native = rate;
    else if (r.system != "stan")
      best = std::max(best, rate);
  }
  if (native > 0 && best > 0)
    fmt::print("  {:>11.2f}x", best / native);
  else
    fmt::print("  {:>12}", "-");
  if (with_stan && stan && vm && stan->cpu_seconds > 0 && vm->cpu_seconds > 0)
    fmt::print("  {:>11.2f}x  {:>11.2f}x",
               (vm->grads / vm->cpu_seconds) / (stan->grads / stan->cpu_seconds),
               (vm->grads / vm->seconds) / (stan->grads / stan->seconds));
  else if (with_stan)
    fmt::print("  {:>12}  {:>12}", "-", "-");
  fmt::print("\n");
  std::fflush(stdout);
}

// The rows' notes (errors, skips, Stan's install) and their JSON.
void record_rows(NutsBenchRun& run, uint32_t chains, const std::vector<Row>& rows) {
  for (const Row& r : rows) {
    if (r.status != "ok" && r.status.rfind("skipped", 0) != 0)
      fmt::print(stderr, "  {} at {} chains: {}\n", r.system, chains, r.status);
    else if (r.system == "stan" && r.status.find("rstan") != std::string::npos)
      fmt::print("  stan: {}\n", r.status);
    else if (r.status.rfind("skipped: would take", 0) == 0)
      fmt::print("  {} at {} chains: {}\n", r.system, chains, r.status);
    nlohmann::ordered_json j = {
        {"program", r.model},
        {"system", r.system},
        {"chains", r.chains},
        {"transitions", r.draws},
        {"status", r.status},
        {"gradients", r.grads},
        {"seconds", r.seconds},
        {"cpu_seconds", r.cpu_seconds},
        {"runs", r.runs},
        {"gradients_per_second", r.seconds > 0 ? r.grads / r.seconds : 0.0},
        {"gradients_per_cpu_second", r.cpu_seconds > 0 ? r.grads / r.cpu_seconds : 0.0},
        {"local_static_utilization", r.local_static}};
    if (r.pc.known) {
      j["gradient_utilization"] = r.pc.all;
      j["gradient_utilization_live"] = r.pc.live;
    }
    run.doc.push_back(std::move(j));
  }
}

// Figure 6 for one model: a line per chain count, a row per system.
Status run_model_rows(NutsBenchRun& run, const BenchModel& m,
                      const std::vector<uint32_t>& chain_counts) {
  const bench::BenchOptions& given = run.options.bench;
  const uint32_t draws = given.transitions ? given.transitions
                         : given.quick     ? m.quick_draws
                                           : m.draws;
  Expected<NutsModel> model = m.native ? native_model(m, run.samples + "/data") : NutsModel{};
  if (!model) return model.failure();
  NutsSettings settings;
  settings.warmup = 0;
  settings.draws = draws;
  settings.step_size = m.step_size;
  settings.search_step = false;
  const ChainWords reference =
      m.native ? native_reference(*model, settings, kCheckedChains) : ChainWords{};
  const bool with_stan = std::any_of(run.systems.begin(), run.systems.end(),
                                     [](const SystemSpec& s) { return s.backend == "stan"; });
  print_model_header(m, draws, run.systems, with_stan);
  std::vector<double> last_seconds(run.systems.size(), 0);
  std::vector<uint32_t> last_chains(run.systems.size(), 0);
  for (uint32_t chains : chain_counts) {
    std::vector<Row> rows;
    for (size_t k = 0; k < run.systems.size(); ++k) {
      Row row{m.name, run.systems[k].name, chains, draws};
      const double predicted = last_chains[k] ? last_seconds[k] * chains / last_chains[k] : 0.0;
      if (predicted > run.options.row_budget_seconds) {
        row.status = fmt::format(
            "skipped: would take about {:.0f} s, over the {:.0f} s a row may take when "
            "--batches is not given",
            predicted, run.options.row_budget_seconds);
        rows.push_back(row);
        continue;
      }
      if (auto s = run_repeated_row(run, m, run.systems[k], *model, settings, reference, row); !s)
        return s;
      if (row.status.rfind("FAILED", 0) == 0 || row.status.rfind("error", 0) == 0)
        run.failed = true;
      last_seconds[k] = row.seconds;
      last_chains[k] = chains;
      rows.push_back(row);
    }
    print_rates_line(run, chains, rows, with_stan);
    record_rows(run, chains, rows);
  }
  return Ok{};
}

// What a derived gradient costs against the hand-written one (issue 27: at most 1.5x): time
// per gradient evaluation, derived over hand, where both rows ran.
void report_derived_costs(NutsBenchRun& run) {
  bool ratio_header = false;
  for (const auto& [key, derived_rate] : run.rates) {
    const auto& [model, system, chains] = key;
    const auto m = std::find_if(bench_models().begin(), bench_models().end(),
                                [&](const BenchModel& b) { return b.name == model; });
    if (m == bench_models().end() || m->derived_from.empty() || system == "native") continue;
    const auto hand = run.rates.find({m->derived_from, system, chains});
    if (hand == run.rates.end() || derived_rate <= 0) continue;
    if (!ratio_header)
      fmt::print("\ngradient cost, derived / hand-written (time per gradient evaluation):\n");
    ratio_header = true;
    fmt::print("  {:<18} {:<16} {:>5} chains  {:.2f}x\n", model, system, chains,
               hand->second / derived_rate);
    run.doc.push_back({{"program", model},
                       {"system", system},
                       {"chains", chains},
                       {"derived_over_hand_cost", hand->second / derived_rate}});
  }
}

// The time now (UTC) and the machine's load averages: the rates depend on what else runs.
std::string date_and_load() {
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char when[32];
  std::strftime(when, sizeof when, "%Y-%m-%d %H:%M UTC", &utc);
  double load[3] = {};
  if (getloadavg(load, 3) != 3) return when;
  return fmt::format("{}, load average {:.2f} {:.2f} {:.2f} on {} cores", when, load[0], load[1],
                     load[2], std::thread::hardware_concurrency());
}

// The model of that name (one of bench_models()).
const BenchModel& bench_model(const std::string& name) {
  return *std::find_if(bench_models().begin(), bench_models().end(),
                       [&](const BenchModel& b) { return b.name == name; });
}

// Figure 6 as docs/nuts.md shows it, in Markdown: per target (one Stan model), a line per chain
// count with Stan's rate and, for the product form and then the loop form (those run; not the
// _loop_ad forms), every other system's rate and the vm's over Stan's. Gradients per CPU second,
// the medians of the rows' runs.
void print_figure6(const NutsBenchRun& run, const std::string& started) {
  std::vector<std::string> targets;
  for (const std::string& name : run.options.bench.programs)
    if (const BenchModel& m = bench_model(name);
        m.derived_from.empty() &&
        std::find(targets.begin(), targets.end(), m.stan) == targets.end())
      targets.push_back(m.stan);
  const int runs = std::max(1, run.options.bench.repeats);
  fmt::print(
      "\nFigure 6 (docs/nuts.md): gradients per CPU second summed over chains, the median of {} "
      "run{} per row; started {}; ended {}\n",
      runs, runs == 1 ? "" : "s", started, date_and_load());
  const auto has = [&](const char* system) {
    return std::any_of(run.systems.begin(), run.systems.end(),
                       [&](const SystemSpec& s) { return s.name == system; });
  };
  const auto rate = [&](const std::string& model, const std::string& system, uint32_t chains) {
    const auto at = run.cpu_rates.find({model, system, chains});
    return at == run.cpu_rates.end() ? 0.0 : at->second;
  };
  const auto cell = [](double x) {  // 3 digits, as 1.23e4 rather than 1.23e+04
    if (x <= 0) return std::string("-");
    std::string text = fmt::format("{:.3g}", x);
    if (const size_t e = text.find("e+"); e != std::string::npos)
      text = text.substr(0, e + 1) + std::to_string(std::stoi(text.substr(e + 2)));
    return text;
  };
  for (const std::string& target : targets) {
    std::vector<const BenchModel*> forms;  // the product form, then the loop form
    for (const bool loop : {false, true})
      for (const std::string& name : run.options.bench.programs)
        if (const BenchModel& m = bench_model(name);
            m.stan == target && m.loop == loop && m.derived_from.empty())
          forms.push_back(&m);
    fmt::print("\n{}\n\n| chains |{}", target, has("stan") ? " Stan |" : "");
    for (const BenchModel* form : forms)
      for (const SystemSpec& s : run.systems)
        if (s.backend != "stan")
          fmt::print(" {}{} |{}", s.name, form->loop ? ", loop" : "",
                     s.name == "vm" && has("stan")
                         ? fmt::format(" vm{} / Stan |", form->loop ? ", loop" : "")
                         : "");
    fmt::print("\n|---|{}", has("stan") ? "---|" : "");
    for (size_t i = 0; i < forms.size(); ++i)
      for (const SystemSpec& s : run.systems)
        if (s.backend != "stan")
          fmt::print("{}", s.name == "vm" && has("stan") ? "---|---|" : "---|");
    fmt::print("\n");
    for (const uint32_t chains : run.chain_counts) {
      const double stan = forms.empty() ? 0.0 : rate(forms.front()->name, "stan", chains);
      fmt::print("| {} |{}", chains, has("stan") ? " " + cell(stan) + " |" : "");
      for (const BenchModel* form : forms)
        for (const SystemSpec& s : run.systems) {
          if (s.backend == "stan") continue;
          const double mine = rate(form->name, s.name, chains);
          fmt::print(" {} |", cell(mine));
          if (s.name == "vm" && has("stan"))
            fmt::print(" {} |", stan > 0 && mine > 0 ? fmt::format("{:.2f}x", mine / stan)
                                                     : std::string("-"));
        }
      fmt::print("\n");
    }
  }
  std::fflush(stdout);
}

// Figure 7: gradient utilization on the VM's scheduler, over 1 and 10 trajectories.
Status run_utilization_figure(NutsBenchRun& run) {
  const bench::BenchOptions& given = run.options.bench;
  const BenchModel& m = bench_models()[1];
  fmt::print(
      "\nnuts_gaussian: utilization of the gradient evaluation (program-counter "
      "batching on the vm's scheduler vs local static batching)\n");
  fmt::print(
      "  pc: program-counter batching, the share of live chains (live) or of all chains "
      "(all) in each gradient evaluation; static: local static batching\n");
  fmt::print("{:>7}  {:>9}  {:>9}  {:>9}  {:>9}  {:>9}  {:>9}  {:>11}  {:>10}\n", "chains",
             "live 1", "all 1", "static 1", "live 10", "all 10", "static 10", "live/static",
             "all/static");
  std::vector<uint32_t> counts = given.batches;  // --batches, else the figure's own
  if (counts.empty())
    counts = given.quick ? std::vector<uint32_t>{1, 4, 16, 32, 64}
                         : std::vector<uint32_t>{1, 4, 16, 32, 64, 256};
  for (uint32_t chains : counts) {
    Row one{m.name, "vm", chains, 1}, ten{m.name, "vm", chains, 10};
    for (Row* row : {&one, &ten}) {
      auto loaded = load(m, run.samples, chains, row->draws);
      if (!loaded) return loaded.failure();
      ChainWords checked;
      std::vector<uint32_t> per_draw;
      run_program_row(*loaded, SystemSpec{"vm", "vm", {}}, *row, checked, per_draw, given.threads);
    }
    const auto ratio = [](double a, double b) { return b > 0 ? a / b : 0.0; };
    fmt::print(
        "{:>7}  {:>8.1f}%  {:>8.1f}%  {:>8.1f}%  {:>8.1f}%  {:>8.1f}%  {:>8.1f}%  {:>10.2f}x  "
        "{:>9.2f}x\n",
        chains, one.pc.live * 100, one.pc.all * 100, one.local_static * 100, ten.pc.live * 100,
        ten.pc.all * 100, ten.local_static * 100, ratio(ten.pc.live, ten.local_static),
        ratio(ten.pc.all, ten.local_static));
    std::fflush(stdout);
    for (const Row* r : {&one, &ten})
      run.doc.push_back({{"program", "nuts_gaussian_utilization"},
                         {"system", "vm"},
                         {"chains", r->chains},
                         {"transitions", r->draws},
                         {"gradient_utilization", r->pc.all},
                         {"gradient_utilization_live", r->pc.live},
                         {"local_static_utilization", r->local_static}});
  }
  return Ok{};
}

}  // namespace

int run_nuts_bench(const NutsBenchOptions& options) {
  NutsBenchRun run(options);
  run.samples = options.samples_dir.empty() ? find_samples() : options.samples_dir;
  if (run.samples.empty()) {
    fmt::print(stderr,
               "error: the NUTS rows need samples/models and samples/data: run from the "
               "repository root\n");
    return 2;
  }
  auto systems = select_nuts_systems(options.bench);
  if (!systems) {
    fmt::print(stderr, "error: {}\n", systems.error());
    return 2;
  }
  run.systems = std::move(*systems);
  if (options.bench.systems.empty())
    fmt::print(
        "(the Vulkan rows run when asked for: --systems native,vm,vulkan. The sampler over "
        "a 100-dimensional model is a large program, and lavapipe takes over ten minutes "
        "to compile it; docs/nuts.md)\n");
  if (run.systems.empty()) {
    fmt::print(stderr,
               "error: no NUTS system selected (native, vm, local-lane, local-subgroup, "
               "global-compacted, vulkan)\n");
    return 2;
  }
  std::vector<uint32_t> chain_counts = options.bench.batches;
  if (chain_counts.empty())
    chain_counts = options.bench.quick ? std::vector<uint32_t>{1, 16, 64}
                                       : std::vector<uint32_t>{1, 4, 16, 64, 256};
  run.chain_counts = chain_counts;
  const std::string started = date_and_load();
  fmt::print("NUTS rows, {}\n", started);
  for (const std::string& name : options.bench.programs) {
    if (auto s = run_model_rows(run, bench_model(name), chain_counts); !s) {
      fmt::print(stderr, "error: {}\n", s.error());
      return 1;
    }
  }
  report_derived_costs(run);
  print_figure6(run, started);
  const bool with_vm = std::any_of(run.systems.begin(), run.systems.end(),
                                   [](const SystemSpec& s) { return s.name == "vm"; });
  if (with_vm && std::find(options.bench.programs.begin(), options.bench.programs.end(),
                           "nuts_gaussian") != options.bench.programs.end())
    if (auto s = run_utilization_figure(run); !s) {
      fmt::print(stderr, "error: {}\n", s.error());
      return 1;
    }
  if (!options.bench.json_path.empty()) {
    if (auto s = write_file(options.bench.json_path,
                            nlohmann::ordered_json{{"nuts_rows", run.doc}}.dump(2) + "\n");
        !s)
      return report_error(s.failure());
  }
  return run.failed ? 1 : 0;
}

}  // namespace ab::cli
