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
#include "ir/backends/interp.h"
#include "ir/frontend/frontend.h"
#include "ir/passes/lower.h"
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
                                           const std::string& file = "test.ab") {
  auto loaded = std::make_unique<Loaded>();
  Diagnostics diags(file, source);
  auto program = compile_source(source, file, diags);
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

// The scalar kind of each word of a type, in flattening order.
inline void word_kinds(const Types& types, TypeId t, std::vector<Scalar>& out) {
  const Type& type = types[t];
  if (type.kind == Type::Kind::Scalar) {
    out.push_back(type.scalar);
  } else if (type.kind == Type::Kind::Array) {
    for (uint32_t i = 0; i < type.count; ++i)
      word_kinds(types, type.elem, out);
  } else if (type.kind == Type::Kind::Struct) {
    for (const Field& f : types.struct_def(t).fields)
      word_kinds(types, f.type, out);
  }
}

// Float words are bit-identical on every backend (docs/language.md); any NaN equals any NaN
// (the language does not define NaN payloads or signs).
inline bool same_float(uint32_t a, uint32_t b) {
  return a == b || (std::isnan(bits_float(a)) && std::isnan(bits_float(b)));
}

// Empty when `actual` matches `expected`: faulted lanes, error records and every word exactly
// (NaN = NaN).
inline std::string compare_results(const LoweredProgram& program, const RunResult& expected,
                                   const RunResult& actual) {
  std::vector<Scalar> kinds;
  if (program.output >= 0) word_kinds(program.types(), program.vars[program.output].type, kinds);
  std::string out;
  int shown = 0;
  if (expected.faulted != actual.faulted) out += "faulted lanes differ\n";
  if (expected.outputs.size() != actual.outputs.size())
    return out + fmt::format("output sizes differ: {} vs {}\n", expected.outputs.size(),
                             actual.outputs.size());
  const size_t per_lane = kinds.size();
  for (size_t i = 0; i < expected.outputs.size() && shown < 5; ++i) {
    const Scalar k = kinds[i % per_lane];
    const bool same = k == Scalar::Float ? same_float(expected.outputs[i], actual.outputs[i])
                                         : expected.outputs[i] == actual.outputs[i];
    if (!same) {
      out += fmt::format("lane {} word {}: expected {:#x}, got {:#x}\n", i / per_lane, i % per_lane,
                         expected.outputs[i], actual.outputs[i]);
      ++shown;
    }
  }
  if (expected.errors.size() != actual.errors.size())
    out += fmt::format("{} errors expected, {} reported\n", expected.errors.size(),
                       actual.errors.size());
  for (size_t i = 0; i < std::min(expected.errors.size(), actual.errors.size()) && shown < 10;
       ++i) {
    const LaneError &e = expected.errors[i], &a = actual.errors[i];
    if (e.lane != a.lane || e.code != a.code || e.function != a.function || e.line != a.line ||
        e.step != a.step) {
      out += fmt::format("expected {}\n     got {}\n", testing::describe_error(e),
                         testing::describe_error(a));
      ++shown;
    }
  }
  return out;
}

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

inline VulkanOptions options_for(const Config& c) {
  VulkanOptions o;
  o.schedule = c.schedule;
  o.global_mode = c.mode;
  o.local_scope = c.scope;
  return o;
}

// Runs `batch` to completion with `program` on one configuration; fails the test on any error.
inline RunResult run_to_completion(const std::shared_ptr<VulkanProgram>& program,
                                   const Batch& batch, const RunOptions& options, const Config& c) {
  auto run = VulkanRun::create(program, batch, options, options_for(c));
  REQUIRE_MESSAGE(run.ok(), run.error());
  auto status = (*run)->run();
  REQUIRE_MESSAGE(status.ok(), status.error());
  auto result = (*run)->result();
  REQUIRE_MESSAGE(result.ok(), result.error());
  return *result;
}

}  // namespace ab::enginetest
