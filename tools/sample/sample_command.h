// `autobatch sample MODEL.ab`: batched NUTS on a model (docs/nuts.md), a client of the sampler
// library (include/autobatch/sampler.h): this file parses the options, reads the data and init
// files, streams the draws into DIR/draws.npy while the chains run, prints the summary and writes
// the fit's files as one set (tools/sample/fit_files.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "autobatch/module.h"
#include "autobatch/sampler.h"
#include "tools/backends.h"

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
  bool search_step = true;   // false: the first transitions use step_size as given
  double step_jitter = 0.0;  // Stan's stepsize_jitter
  uint64_t seed = 0;
  std::string init;  // FILE.npy [chains, D] or FILE.json by name, model space; empty: random
  std::vector<std::string> uniforms;
  std::string out_dir;
  std::string format = "table";
  bool csv = false;                 // also one CmdStan CSV per chain, MODEL-CHAIN.csv
  uint32_t threads = 0;             // vm: worker threads (0: one per core)
  uint64_t max_steps = UINT32_MAX;  // blocks a chain may run before it faults (step_budget)
  uint32_t stack_depth = 0;         // call frames and tape entries per chain; 0: max_depth + 8
  DeviceOptions device;
};

// What sample::run needs from the command: the model's data bound from command.uniforms, the
// options, with the initial points read from command.init (when given).
struct SampleInputs {
  std::vector<std::vector<uint32_t>> data;
  sample::Options options;
};
Expected<SampleInputs> sample_inputs(const sample::Model& model, const SampleCommand& command);

// The batch of `command.chains` chains for main(init, random_init, settings) (sample::make_batch
// of the inputs above).
Expected<Batch> sampler_batch(const sample::Model& model, const SampleCommand& command);

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
