// Shared by the engine's tests (tests/engine_*_test.cpp): one validation-enabled Vulkan context
// for the whole test binary, sample loading and lowering, and a result comparison that is exact
// for integers, floats (NaN = NaN) and error records.
#pragma once

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "autobatch/engine.h"
#include "cpu/interp.h"
#include "lang/frontend.h"
#include "passes/lower.h"
#include "support/result_compare.h"
#include "support/samples.h"

namespace ab::enginetest {

// The context every engine test shares: validation on. Null (and the test fails) if there is no
// Vulkan device.
inline std::shared_ptr<VulkanContext> context() {
  static std::shared_ptr<VulkanContext> shared = [] {
    ContextOptions options;
    options.validation = true;
    auto created = VulkanContext::create(options);
    if (!created) {
      MESSAGE("no Vulkan context: ", created.error());
      return std::shared_ptr<VulkanContext>();
    }
    return *created;
  }();
  REQUIRE_MESSAGE(shared != nullptr, "a Vulkan device with the validation layer is required");
  return shared;
}

// Fails the current test on any validation message since the last call, then clears them.
inline void check_no_validation_messages() {
  auto ctx = context();
  const auto messages = ctx->validation_messages();
  for (const auto& m : messages)
    FAIL_CHECK(m);
  ctx->clear_validation_messages();
}

// A program and its lowering; heap-allocated so the lowering's pointer to the source stays valid.
struct Loaded {
  Program program;
  int entry = -1;
  LoweredProgram lowered;
};

inline std::unique_ptr<Loaded> load_source(const std::string& source,
                                           const std::string& entry = "main",
                                           const std::string& file = "test.ab",
                                           const FrontendOptions& frontend = {}) {
  auto loaded = std::make_unique<Loaded>();
  Diagnostics diags(file, source);
  auto program = compile_source(source, file, diags, frontend);
  REQUIRE_MESSAGE(program.has_value(), diags.format());
  loaded->program = std::move(*program);
  loaded->entry = loaded->program.find_function(entry);
  REQUIRE(loaded->entry >= 0);
  loaded->lowered = lower(loaded->program, loaded->entry);
  return loaded;
}

inline std::unique_ptr<Loaded> load_sample_case(const testing::SampleCase& sample) {
  auto loaded = std::make_unique<Loaded>();
  loaded->program = testing::load_sample(sample.file);
  loaded->entry = loaded->program.find_function(sample.entry);
  REQUIRE(loaded->entry >= 0);
  loaded->lowered = lower(loaded->program, loaded->entry);
  return loaded;
}

// The comparisons live in support/result_compare.h (the soak tool uses them too).
using testing::compare_results;
using testing::same_float;
using testing::word_kinds;

// The engine configurations every sample is checked under.
struct Config {
  const char* name;
  Schedule schedule;
  GlobalMode mode;
  LocalScope scope;
};
inline const std::vector<Config>& configs() {
  static const std::vector<Config> all = {
      {"global/masked", Schedule::Global, GlobalMode::Masked, LocalScope::Subgroup},
      {"global/compacted", Schedule::Global, GlobalMode::Compacted, LocalScope::Subgroup},
      {"local/subgroup", Schedule::Local, GlobalMode::Compacted, LocalScope::Subgroup},
      {"local/workgroup", Schedule::Local, GlobalMode::Compacted, LocalScope::Workgroup},
      {"local/lane", Schedule::Local, GlobalMode::Compacted, LocalScope::Lane},
  };
  return all;
}

// The options random programs (support/program_gen.h) run with: the seed drives their draws, and
// the step and stack budgets bound what they generate.
inline RunOptions random_program_options(uint64_t seed) {
  RunOptions options;
  options.seed = seed;
  options.max_steps = 20000;
  options.stack_depth = 64;
  return options;
}

inline VulkanOptions options_for(const Config& c) {
  VulkanOptions o;
  o.schedule = c.schedule;
  o.global_mode = c.mode;
  o.local_scope = c.scope;
  return o;
}

// Runs `batch` to completion with `program` on one configuration; fails the test on any error.
inline RunResult run_to_completion(const std::shared_ptr<VulkanProgram>& program,
                                   const Batch& batch, const RunOptions& options,
                                   const VulkanOptions& vulkan) {
  auto run = VulkanRun::create(program, batch, options, vulkan);
  REQUIRE_MESSAGE(run.ok(), run.error());
  auto status = (*run)->run();
  REQUIRE_MESSAGE(status.ok(), status.error());
  auto result = (*run)->result();
  REQUIRE_MESSAGE(result.ok(), result.error());
  return *result;
}
inline RunResult run_to_completion(const std::shared_ptr<VulkanProgram>& program,
                                   const Batch& batch, const RunOptions& options, const Config& c) {
  return run_to_completion(program, batch, options, options_for(c));
}

// A batch for the engine tests' NUTS-like programs, `main(q0: float[d], eps: float, n: int,
// probe: int)`: a start point in [-2, 2) from lane_hash, eps 0.1 to 0.3, n = n_of(lane), and a
// probe index out of range (d) on every 11th lane, so that those lanes fault.
inline Batch point_batch(int d, uint32_t lanes, uint32_t (*n_of)(uint32_t lane)) {
  const auto word = [](float f) {
    uint32_t w;
    std::memcpy(&w, &f, 4);
    return w;
  };
  Batch batch;
  batch.lanes = lanes;
  batch.inputs.resize(4);
  for (uint32_t lane = 0; lane < lanes; ++lane) {
    for (int i = 0; i < d; ++i)
      batch.inputs[0].push_back(word(
          static_cast<float>(static_cast<int>(testing::lane_hash(lane, i) % 200) - 100) / 50.0f));
    batch.inputs[1].push_back(word(0.1f + 0.05f * static_cast<float>(lane % 5)));
    batch.inputs[2].push_back(n_of(lane));
    batch.inputs[3].push_back(lane % 11 == 0 ? static_cast<uint32_t>(d) : lane % d);
  }
  return batch;
}

}  // namespace ab::enginetest
