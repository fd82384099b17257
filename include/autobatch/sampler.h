// The NUTS sampler as a library (docs/nuts.md): a model's source, its data and the options in; the
// draws, the per-draw statistics, the summary, Stan's warnings and the chains that faulted or
// were refused out. The sampler is .ab (sampler/nuts.ab, built into the library) appended to the
// model; one lane runs one chain and every draw streams out through `emit` while the chains run.
// `autobatch sample`, the Python module and an embedding app call this one implementation.
//
//   auto model = ab::sample::Model::compile(source, "eight_schools.ab");   // the contract checked
//   ab::sample::Options options;  options.chains = 4;  options.seed = 1;
//   auto fit = ab::sample::run(**model, data, options, ab::sample::cpu_runner(ab::CpuBackend::Vm));
//   fit->summary[0].summary.mean ...
//
// Threads: a Model is immutable (share it); run() may be called from several threads at once,
// each with its own options, as the runner allows (CPU runners always; a Vulkan runner shares its
// context, which serialises its own use).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "autobatch/batch.h"
#include "autobatch/engine.h"
#include "autobatch/expected.h"
#include "autobatch/module.h"
#include "autobatch/value_type.h"

namespace ab::sample {

struct ParameterLayout;  // the sampler's own (sampler/parameters.h)

// ---- the summary and its warnings ----

// One parameter's posterior summary, as `autobatch sample` prints it (Vehtari et al. 2021).
struct ParameterSummary {
  double mean;
  double sd;         // sample standard deviation over all draws (divisor N - 1)
  double mcse_mean;  // sd / sqrt(ESS of the raw, not rank-normalised, split chains)
  double q5;
  double q50;
  double q95;
  double rhat;      // max of bulk and folded split R-hat on rank-normalised draws
  double ess_bulk;  // ESS of the rank-normalised split chains
  double ess_tail;  // min of the ESS of the 5% and 95% quantile indicators
};

struct NamedSummary {
  std::string name;
  ParameterSummary summary;
};

// A check Stan prints after sampling that the fit failed, with one line of advice.
struct FitWarning {
  std::string kind;     // "divergences", "max_tree_depth", "e_bfmi", "rhat", "ess_bulk", "ess_tail"
  std::string message;  // one line: what was seen, then what to do
};

// Aligned text table, one header row (name mean sd mcse q5 q50 q95 rhat ess_bulk ess_tail) and one
// row per parameter; every line has the same width.
std::string format_summary_table(const std::vector<NamedSummary>& parameters);

// ---- the model ----

// A model with the sampler appended, checked against the model contract and compiled. Two
// contracts (docs/nuts.md): `fn log_density(q: float[D]) -> float` (or `-> LogDensity`, a
// hand-written gradient) over D unnamed coordinates, and `fn log_density(p: Params) -> float`
// over a struct of float and float-array fields, bounded as `float<lower=A, upper=B>`.
class Model {
 public:
  // `file` names the source in messages ("model.ab:3:7: error: ..." with a caret). A model that
  // does not compile or is off the contract is an Error. `vectorize_loops`: as
  // CompileOptions::vectorize_loops (off only to compare, as the bench's `vm-loops` does);
  // `data_constants`: as CompileOptions::data_constants (a model's `const N: int = data;`).
  static Expected<std::shared_ptr<const Model>> compile(
      const std::string& source, const std::string& file, bool vectorize_loops = true,
      const std::map<std::string, double>& data_constants = {});
  // Reads the file, then compile().
  static Expected<std::shared_ptr<const Model>> load(
      const std::string& path, bool vectorize_loops = true,
      const std::map<std::string, double>& data_constants = {});

  // The model and the sampler as one module, the sampler's functions first; its uniforms are the
  // model's data, its main(init, random_init, settings) the chain.
  const std::shared_ptr<const Module>& module() const { return module_; }
  const std::string& file() const { return file_; }
  // A draw's columns: the parameters' constrained coordinates, then the model's transformed
  // parameters and generated quantities (docs/nuts.md), each under its name in
  // parameter_names().
  uint32_t dimension() const { return static_cast<uint32_t>(names_.size()); }
  // The parameters' constrained coordinates, the first columns (what --init gives per chain).
  uint32_t parameter_count() const { return static_cast<uint32_t>(bounds_.size()); }
  // The coordinates the chains move in: parameter_count() less one per simplex and K (K + 1) / 2
  // per cholesky_factor_corr[K] (its diagonal and upper triangle).
  uint32_t unconstrained_dimension() const { return unconstrained_dimension_; }
  // Per column, the name it is reported under: "q[3]", "tau", "theta[0]", "m[1][2]".
  const std::vector<std::string>& parameter_names() const { return names_; }
  // Per constrained coordinate its bounds, or its vector's constrained type.
  const std::vector<FloatBounds>& bounds() const { return bounds_; }
  // The parameters as declared, each with its coordinates' count: ("mu", 1), ("theta", 8); the
  // flat contract has one, ("q", D). Transformed parameters and generated quantities are not
  // among them.
  struct Field {
    std::string name;
    std::vector<uint32_t> shape;  // empty for a scalar
    uint32_t coordinates = 1;
  };
  const std::vector<Field>& fields() const { return fields_; }
  // The model's data: the module's uniforms.
  const std::vector<ValueInfo>& data() const { return module_->uniforms(); }
  // The model without the sampler (named by the model's path), whose uniforms are data()'s: what
  // binds them by name and computes the model's transformed data (autobatch/transformed_data.h),
  // its messages pointing at the model's lines.
  const Module& data_module() const { return *density_; }

  // Per constrained coordinate, 1 where its type fixes it in every draw (a
  // cholesky_factor_corr's L[0][0] = 1 and the zeros above its diagonal): the fit's checks of
  // draws that never change skip those.
  std::vector<uint8_t> structural_constants() const;

  // Constrained coordinates (the model's space, parameter_count() of them) to the unconstrained
  // ones the chains move in, in declaration order as Stan's; the error names the coordinate that
  // lies outside its bounds (or on one), or the vector that is not of its type (a simplex that
  // does not sum to 1). A bound that depends on earlier fields (and the data: `data`, the
  // transformed data computed) is computed from their values in `constrained`, and the error
  // gives its value.
  Expected<std::vector<float>> unconstrain(
      std::span<const float> constrained,
      const std::vector<std::vector<uint32_t>>& data = {}) const;

  // The stack depth one evaluation of the log density and its gradient needs, the most over
  // `points` ([n, unconstrained_dimension()]) given `data`: the call frames and, for a derived
  // gradient's loop that is not a sum, its tape entries (docs/nuts.md, "Tapes"). Measured on the vm
  // with `threads`, each evaluation within `max_steps` blocks (a point whose evaluation runs out of
  // them is the run's to report, and the depth is what the others need); 0 when no depth up to
  // 2^20 is enough (a recursion that never ends).
  static constexpr uint64_t kProbeMaxSteps = 100'000'000;  // the most a probe's budget is
  Expected<uint32_t> gradient_stack_depth(const std::vector<std::vector<uint32_t>>& data,
                                          std::span<const float> points, uint32_t threads = 0,
                                          uint64_t max_steps = kProbeMaxSteps) const;

  // Why the log density rejects `point` (unconstrained coordinates) given `data`: the domain
  // error that the model compiled without Stan's rejection faults with there, as "assert_failed:
  // normal_lpdf: sigma must be > 0 in log_density at model.ab:3"; "" when it faults with none.
  // What a refused chain's message names (the sampler itself sees only a NaN density).
  std::string rejection_at(const std::vector<std::vector<uint32_t>>& data,
                           std::span<const float> point) const;

 private:
  Model() = default;  // compile() makes them: a Model always holds a compiled module
  std::shared_ptr<const Module> module_;
  // The model with nuts_density(u) as its entry: gradient_stack_depth's probe.
  std::shared_ptr<const Module> density_;
  // The model with nuts_init_bounds(x) as its entry, when a bound depends on another parameter.
  std::shared_ptr<const Module> init_bounds_;
  std::string density_source_;     // its source, for rejection_at's strict compile
  CompileOptions strict_options_;  // the model's options, without Stan's rejection
  std::string file_;
  std::vector<std::string> names_;
  std::vector<FloatBounds> bounds_;
  std::vector<Field> fields_;
  uint32_t unconstrained_dimension_ = 0;
  std::shared_ptr<const ParameterLayout> layout_;  // the transforms, for unconstrain()
};

// ---- the options and a run ----

struct Options {
  uint32_t chains = 4;
  uint32_t draws = 1000;
  uint32_t warmup = 1000;
  uint32_t leaf_steps = 1;  // leapfrog steps per tree leaf: Stan's 1 (docs/nuts.md)
  uint32_t max_depth = 10;
  double target_accept = 0.8;
  double step_size = 1.0;
  bool adapt_metric = true;
  bool search_step = true;  // false: the first transitions use step_size as given
  // Stan's stepsize_jitter: each transition's step size times a uniform factor in [1 - j, 1 + j].
  // 0, as Stan's default: a jitter of 0.1 cost 8-18% of ESS per gradient (docs/nuts.md).
  double step_jitter = 0.0;
  uint64_t seed = 0;
  // [chains, parameter_count()] initial points in the model's (constrained) space; empty: random
  // points, uniform in [-2, 2] on the unconstrained scale, retried as Stan does.
  std::vector<float> init;
  uint32_t threads = 0;             // the vm's worker threads (0: one per core)
  uint64_t max_steps = UINT32_MAX;  // blocks a chain may run before it faults
  // Call frames and tape entries per chain; 0: measured (stack_depth_for, docs/nuts.md "Tapes").
  uint32_t stack_depth = 0;

  // Called on the running thread after each draw (chain, its index, draws received in all).
  std::function<void(uint32_t chain, uint32_t draw, uint64_t received)> on_draw;
  // Polled at step boundaries (every few ms): true stops the chains at once; the fit then holds
  // the draws made so far (Fit::stopped).
  std::function<bool()> should_stop;
};

// The call frames a chain needs at least: the tree's recursion (max_depth) and main, the
// transition and the leaf around it.
inline uint32_t recursion_depth(const Options& o) {
  return o.max_depth + 8;
}

// The stack depth a run of `model` uses: options.stack_depth when given, else the tree's
// recursion_depth or, when the model's gradient needs more (a tape), twice what it needed at the
// chains' initial points (options.init) or at 8 random points uniform in [-2, 2] like the chains',
// plus 8.
Expected<uint32_t> stack_depth_for(const Model& model, const Batch& batch, const Options& options);

// How a refusal of an option spells its name: as this header does (leaf_steps, also the Python
// module's keyword) or as the CLI's flag (--leaf-steps).
enum class OptionNames { Library, Cli };

// The one check of the options that need no model, for the library, the CLI and Python alike:
// every number in its range (chains 1 to 2^20, draws 1 to 2^24, warmup 0 to 2^24, leaf_steps 1
// to 1000, max_depth 1 to 30, target_accept in [0.05, 0.995], step_size in [1e-8, 1e4],
// step_jitter in [0, 1], max_steps 1 to 2^32 - 1, stack_depth 0 or from the tree's recursion
// to 2^24); NaN is in no range. Outside them a fit's chains never move (a step size of 0, a
// depth of 0) or the run cannot be held. The Error names the option and the range:
// "leaf_steps 0 is not in [1, 1000]".
Status check_options(const Options& options, OptionNames names = OptionNames::Library);
// An option's range as check_options holds it, for a help text: "1 to 1000". `name` as this
// header spells it (chains, draws, warmup, leaf_steps, max_depth, max_steps, target_accept,
// step_size, step_jitter, stack_depth); another throws std::out_of_range.
std::string option_range(std::string_view name);

// The batch of `options.chains` chains for main(init, random_init, settings): `data` are the
// model's uniforms (Module::uniforms() order, words as ValueType lays them out; a transformed
// datum's entry is computed here from the others, autobatch/transformed_data.h), options.init
// unconstrained when given.
Expected<Batch> make_batch(const Model& model, std::vector<std::vector<uint32_t>> data,
                           const Options& options);

// The word offset of field `name` in struct type `t` (nuts_Draw, nuts_Chain, nuts_Settings);
// throws std::out_of_range for a field the sampler does not have (a bug).
uint32_t field_offset(const ValueType& t, const std::string& name);

// Runs the sampler's batch on a backend; `options` carry the sampler's on_emit and should_stop,
// which the runner must honour. An Error: the run could not happen (no device, a stop on a
// backend that keeps nothing, ...).
using Runner = std::function<Expected<RunResult>(const std::shared_ptr<const Module>& module,
                                                 const Batch& batch, const RunOptions& options)>;
Runner cpu_runner(CpuBackend backend);
// The engine on `context` (shared: one per process is enough), compiling the program per run.
Runner vulkan_runner(std::shared_ptr<VulkanContext> context, VulkanOptions options);
// The chains cut over several contexts (run_on_contexts: one shard of chains per device, the
// fit bit for bit that of one device; a failed device's chains are reported faulted).
Runner vulkan_runner(std::vector<std::shared_ptr<VulkanContext>> contexts, VulkanOptions options);

// Where the draws go as they come. The default keeps them in memory (Fit::draws_data);
// FitWriter::draws() writes them straight into draws.npy instead (the CLI's).
class DrawSink {
 public:
  virtual ~DrawSink() = default;
  // Draw `draw` of `chain`: D floats (model space). False: a write failed (error() says why),
  // which stops the run.
  virtual bool write(uint32_t chain, uint32_t draw, const float* q) = 0;
  // Marks draws [from, draws) of `chain` missing (NaN): a chain that faulted or was stopped.
  virtual bool fill_missing(uint32_t chain, uint32_t from) = 0;
  virtual std::string error() const = 0;
  // Parameter j's first `used_draws` draws of each chain in `used_chains`, chain after chain.
  virtual Expected<std::vector<double>> parameter(uint32_t j, uint32_t used_draws,
                                                  const std::vector<uint32_t>& used_chains) = 0;
};

// The per-draw statistics, [chains * draws] chain-major each, as Stan names them. A missing draw
// (a chain that faulted, was refused or stopped) holds NaN, -1 or false.
struct DrawStatistics {
  std::vector<float> lp;            // lp__: the log density (unconstrained, Jacobian included)
  std::vector<float> accept_stat;   // accept_stat__
  std::vector<float> step_size;     // stepsize__
  std::vector<int32_t> tree_depth;  // treedepth__
  std::vector<int32_t> n_leapfrog;  // n_leapfrog__: gradient evaluations of the transition
  std::vector<uint8_t> divergent;   // divergent__
  std::vector<float> energy;        // energy__: the Hamiltonian at the draw
};

// A chain that found no finite starting point and returned without sampling.
struct RefusedChain {
  uint32_t chain = 0;
  uint32_t init_tries = 0;  // random points tried (1 with an init point)
  float log_density = 0;    // at the last one
  // The density's domain error there (Model::rejection_at), "" when none faulted.
  std::string fault;
};

struct Fit {
  Options options;  // as run (callbacks dropped)
  uint32_t chains = 0, draws = 0, dimension = 0;
  std::vector<std::string> parameter_names;
  // [chains, draws, dimension] in the model's space, NaN where missing; empty when a DrawSink of
  // the caller's took them.
  std::vector<float> draws_data;
  DrawStatistics stats;
  std::vector<uint32_t> draws_per_chain;  // draws received per chain
  uint64_t received = 0;                  // in all
  std::vector<LaneError> faults;          // per faulted chain (lane = chain)
  std::vector<RefusedChain> refused;
  bool stopped = false;  // should_stop ended the run
  // The summary's chains (neither faulted nor refused) and the draws each contributes (all of
  // them unless stopped).
  std::vector<uint32_t> summary_chains;
  uint32_t summary_draws = 0;
  std::vector<NamedSummary> summary;
  std::vector<FitWarning> warnings;
  // Per chain the adaptation's result (NaN and empty for a chain that did not finish).
  std::vector<double> step_sizes;
  // The diagonal inverse metric, unconstrained_dimension() each.
  std::vector<std::vector<float>> inv_metrics;
  uint64_t gradient_evaluations = 0;  // the finished chains' all, the others' draws'
  // After warm-up, every chain's: the finished chains' totals, the others' draws' (the sum of
  // stats.divergent, what divergent.npy holds).
  uint64_t divergences = 0;
  RunStats run_stats;
  uint32_t stack_depth = 0;  // the run's (stack_depth_for)
  // Which chains the summary left out and why, as one line each ("chain 2 faulted: ...").
  std::vector<std::string> chain_messages;
};

// Samples `model` given its data (see make_batch): the whole fit or an Error (bad options, data
// or init, a run that could not happen, a fit too big for memory: the Error says how many bytes
// and to use fewer chains or draws). A fit with no draw at all (every chain faulted or was
// refused) is still a Fit: received == 0.
Expected<Fit> run(const Model& model, std::vector<std::vector<uint32_t>> data,
                  const Options& options, const Runner& runner, DrawSink* sink = nullptr);

// ---- CmdStan's CSV ----

// One chain of a fit as CmdStan writes it (the CmdStan guide, "Stan CSV file format"): `#`
// comment lines with the settings, the header row `lp__,accept_stat__,stepsize__,treedepth__,
// n_leapfrog__,divergent__,energy__,` then the parameters with CmdStan's names (theta.1, 1-based;
// m.2.3 for m[1][2]) in CmdStan's order (cmdstan_order: an array's columns run its first index
// fastest), the adaptation comments (step size, the diagonal inverse metric in the unconstrained
// order, which for arrays of reals is Stan's too: row-major), one row per draw, and the timing
// comments. The text; write it with write_whole_file. `draws` are the chain's [draws, D] (model
// space, our row-major order). A control byte in `model_name` is written \xNN. A chain the fit
// does not have, or `draws` shorter than the chain's draws, throws std::out_of_range.
std::string cmdstan_csv(const Fit& fit, const std::string& model_name, uint32_t chain,
                        std::span<const float> draws);
// The coordinates in the order of CmdStan's columns: column k of the parameters holds coordinate
// order[k]. Each field keeps its place; inside an array the first index runs fastest
// (m[0][0], m[1][0], m[0][1], ...), as Stan writes arrays and readers rebuild them.
std::vector<uint32_t> cmdstan_order(const std::vector<std::string>& names);
// The parameter names CmdStan gives our coordinates: "theta[0]" -> "theta.1".
std::string cmdstan_name(const std::string& name);

// ---- a fit's files ----

// Which of a fit's files to write, and the names in them.
struct FitFileOptions {
  std::string model;       // summary.json's "model": the model's file as the user named it
  std::string model_name;  // the CSVs' MODEL-k.csv and their `model =` comment
  // draws.npy [chains, draws, D], the per-draw statistics (lp, accept_stat, step_size, energy,
  // tree_depth, n_grad, divergent .npy, [chains, draws] each) and summary.json. False: the CSVs
  // alone (Python's Fit.to_csv).
  bool npy = true;
  bool csv = false;  // one CmdStan CSV per chain (cmdstan_csv), MODEL-k.csv with k from 1
};

// What summary.json says of the run beyond the fit: what the caller knows (the CLI all of it;
// an unknown figure is left out or null).
struct RunFacts {
  std::string backend;         // "vm", "vulkan", ...
  std::string interrupted_by;  // the signal that stopped the run ("Interrupt"); empty: none
  double run_seconds = 0, wall_seconds = 0;
  // The gradient's utilization, program-counter batching's over all chains and over the live
  // ones (null when the backend does not report it), and what local static batching would reach.
  std::optional<double> gradient_utilization, gradient_utilization_live;
  double local_static_utilization = 0;
  std::optional<double> compile_seconds;  // Vulkan: the kernels' build
  std::string kernels_json;               // Vulkan: each kernel's times as JSON; empty: none
};

// summary.json's text: the fit's settings, summary, warnings, faults, refused chains and step
// sizes with `facts`, and `files`, the set's files (docs/nuts.md lists the keys). `indent` < 0:
// one line.
std::string summary_json(const Fit& fit, const FitFileOptions& files, const RunFacts& facts,
                         const std::vector<std::string>& file_names, int indent = -1);

// A fit's files written into one folder as one set, so that nothing a user has is lost when a
// run fails, is stopped or shares its folder (docs/cli.md, "What a fit leaves"):
//  - the folder is locked (FOLDER/.autobatch-sample.lock, flock) while the writer lives: a second
//    writer into it is refused at once, naming the process that holds it;
//  - every file is written into FOLDER/.autobatch-sample.partial/ and renamed into the folder by
//    finish() only after all of them were written and synced; summary.json is renamed last. A
//    writer that fails or is killed before that leaves the previous fit's files as they were;
//  - after finish() the folder holds exactly this fit's files: summary.json's "files" names them,
//    and the files an earlier fit's summary.json names that this set lacks are removed; a file
//    no summary.json of ours names is never touched;
//  - the disk space the set needs is checked by open(), before anything runs.
// The draws stream into draws.npy through draws() while the chains run (memory holds one draw),
// or write_fit() copies an in-memory fit's.
class FitWriter {
 public:
  // Creates `folder` if needed, takes its lock, checks the disk and stages draws.npy for
  // `options.chains` x `options.draws` draws of `dimension` coordinates.
  static Expected<std::unique_ptr<FitWriter>> open(const std::string& folder,
                                                   const Options& options, uint32_t dimension,
                                                   const FitFileOptions& files);
  ~FitWriter();  // unfinished: the staged files go, the folder stays as it was
  FitWriter(const FitWriter&) = delete;
  FitWriter& operator=(const FitWriter&) = delete;

  // The sink for run(): draws.npy, missing draws NaN.
  DrawSink& draws();
  // Writes the statistics, the CSVs and summary.json, then moves the set into the folder.
  Status finish(const Fit& fit, const RunFacts& facts);
  // The set's files so far, sorted (summary.json's "files"), and where `name` lies after finish().
  std::vector<std::string> files() const;
  std::string path(const std::string& name) const;

 private:
  struct Impl;
  explicit FitWriter(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// An in-memory fit's files (FitWriter with its draws copied in): what `autobatch sample --out`
// writes, from Python or an embedding app.
Status write_fit(const Fit& fit, const std::string& folder, const FitFileOptions& files,
                 const RunFacts& facts = {});

}  // namespace ab::sample
