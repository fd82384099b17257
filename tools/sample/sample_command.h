// `autobatch sample MODEL.ab`: batched NUTS on a model (docs/nuts.md). The sampler is .ab
// (tools/sample/nuts.ab, built into the binary) appended to the model; one lane runs one chain,
// draws stream out through `emit` into DIR/draws.npy while the chains run. The fit's files are
// written as one set (tools/sample/fit_files.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "autobatch/module.h"
#include "tools/backends.h"
#include "tools/sample/parameters.h"

namespace ab::cli {

struct SampleCommand {
  std::string model;
  std::string backend;
  uint32_t chains = 4;
  uint32_t draws = 1000;
  uint32_t warmup = 1000;
  uint32_t leaf_steps = 1;  // Stan's; the paper's 4 costs ESS per gradient (docs/nuts.md)
  uint32_t max_depth = 10;
  double target_accept = 0.8;
  double step_size = 1.0;
  bool adapt_metric = true;
  bool search_step = true;  // false: the first transitions use step_size as given
  uint64_t seed = 0;
  std::string init;  // FILE.npy [chains, D] or FILE.json by name, model space; empty: random
  std::vector<std::string> uniforms;
  std::string out_dir;
  std::string format = "table";
  uint32_t threads = 0;             // vm: worker threads (0: one per core)
  uint64_t max_steps = UINT32_MAX;  // blocks a chain may run before it faults (step_budget)
  uint32_t stack_depth = 0;         // call frames and tape entries per chain; 0: max_depth + 8
  DeviceOptions device;
};

// The sampler's source text (tools/sample/nuts.ab).
extern const char* const kNutsSource;

// The model with the sampler appended, checked against the model contract, compiled.
struct SampleProgram {
  // The model and the sampler as one module, the sampler's functions first.
  std::shared_ptr<const Module> module;
  uint32_t dimension = 0;          // unconstrained coordinates
  sample::ParameterLayout layout;  // their names and bounds
};
Expected<SampleProgram> load_sample_program(const std::string& model_path);

// The word offset of field `name` in struct type `t` (a sampler record or result field).
uint32_t field_offset(const ValueType& t, const std::string& name);

// The batch of `command.chains` chains for main(init, random_init, settings): the uniforms bound,
// the initial points read from command.init (when given), the settings from the options.
Expected<Batch> sampler_batch(const SampleProgram& loaded, const SampleCommand& command);

// Local static batching (chains synchronised at trajectory boundaries) runs every transition as
// long as its longest chain: its utilization is the gradients done over chains x the sum over
// transitions of the most gradients any chain needed (Radul et al. 2020, Figure 7). `grads` is
// [chains, draws].
double local_static_utilization(const std::vector<uint32_t>& grads, uint32_t chains,
                                uint32_t draws);

// Program-counter batching's utilization of the gradient evaluation, from the runs of the log
// density's entry block: `live`, the mean share of the chains still running that took part;
// `all`, the gradients evaluated over chains x the block's runs (finished chains count as idle,
// as in local static batching's figure). Only backends with a batch-wide scheduler (vm) report
// it; `known` is false on the others.
struct GradientUtilization {
  bool known = false;
  double live = 0, all = 0;
};
GradientUtilization gradient_utilization(const BackendRun& run, uint32_t chains);

int sample_command(const SampleCommand& command);

}  // namespace ab::cli
