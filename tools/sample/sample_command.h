// `autobatch sample MODEL.ab`: batched NUTS on a model (docs/nuts.md). The sampler is .ab
// (tools/sample/nuts.ab, built into the binary) appended to the model; one lane runs one chain,
// draws stream out through `emit` into DIR/draws.npy while the chains run.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tools/backends.h"

namespace ab::cli {

struct SampleCommand {
  std::string model;
  std::string backend;
  uint32_t chains = 4;
  uint32_t draws = 1000;
  uint32_t warmup = 1000;
  uint32_t leaf_steps = 4;
  uint32_t max_depth = 10;
  double target_accept = 0.8;
  double step_size = 1.0;
  bool adapt_metric = true;
  uint64_t seed = 0;
  std::string init;  // FILE.npy of [chains, D] initial points; empty: uniform in [-2, 2]^D
  std::vector<std::string> uniforms;
  std::string out_dir;
  std::string format = "table";
  DeviceOptions device;
};

// The sampler's source text (tools/sample/nuts.ab).
extern const char* const kNutsSource;

// The model with the sampler appended, checked against the model contract, compiled.
struct SampleProgram {
  Program program;
  int entry = -1;
  uint32_t dimension = 0;
};
Expected<SampleProgram> load_sample_program(const std::string& model_path);

int sample_command(const SampleCommand& command);

}  // namespace ab::cli
