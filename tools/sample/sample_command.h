// `autobatch sample MODEL.ab`: batched NUTS on a model (docs/nuts.md), a client of the sampler
// library (include/autobatch/sampler.h): this file parses the options, reads the data and init
// files, streams the draws into DIR/draws.npy while the chains run, prints the summary and writes
// the fit's files as one set (the library's sample::FitWriter).
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
  std::string backend = "auto";  // a backend's name, or auto: choose_sample_backend
  // The sampler's options as the library takes them (chains, draws, seed, ...); their defaults are
  // the library's. `options.init` is filled from init_file by sample_inputs.
  sample::Options options;
  std::string init_file;  // FILE.npy [chains, D] or FILE.json by name, model space; empty: random
  std::vector<std::string> uniforms;
  std::vector<std::string> data_files;  // --data FILE.json: uniforms by name
  std::string out_dir;
  std::string format = "table";
  bool csv = false;  // also one CmdStan CSV per chain, MODEL-CHAIN.csv
  DeviceOptions device;
};

// `--backend auto`, the default: the Vulkan engine where it has a GPU (a device that is not a CPU)
// or where a Vulkan option (--device, --schedule, ...) asks for it, else the vm. On a CPU device
// such as lavapipe the sampler's kernels take seconds to minutes to compile and then run no faster
// than the vm, which starts at once. `note` says on a CPU-only machine why the vm was chosen.
struct BackendChoice {
  std::string name;
  std::string note;  // for stderr: why auto chose the vm; empty otherwise
};
BackendChoice choose_sample_backend(const SampleCommand& command);

// What sample::run needs from the command: the model's data bound from command.uniforms, the
// options, with the initial points read from command.init (when given).
struct SampleInputs {
  std::vector<std::vector<uint32_t>> data;
  sample::Options options;
};
Expected<SampleInputs> sample_inputs(const sample::Model& model, const SampleCommand& command);

// The batch of `command.options.chains` chains for main(init, random_init, settings)
// (sample::make_batch of the inputs above).
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
