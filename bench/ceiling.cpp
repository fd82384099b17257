// compile_ceiling and run_ceiling: the kernel text is `#version`, the stack and iteration
// bounds, bench/ceiling/common.glsl, the engine's op prelude, then the program's kernel.
#include "bench/ceiling.h"

#include <fmt/format.h>

#include <algorithm>

#include "bench/ceiling_sources.h"

namespace ab::bench {
namespace {

// Mirrors bench/ceiling/common.glsl.
constexpr uint32_t kLocalSize = 64;
constexpr uint32_t kDone = 0, kStackOverflow = 1, kTooManyIterations = 2;
constexpr uint32_t kNotFinished = 0xffffffffu;

const std::string* find_source(const std::string& name) {
  const auto& sources = ceiling_sources();
  auto it = std::find_if(sources.begin(), sources.end(),
                         [&](const CeilingSource& s) { return s.name == name; });
  return it == sources.end() ? nullptr : &it->text;
}

std::string lane_problem(uint32_t lane, uint32_t status, uint32_t stack_depth) {
  switch (status) {
    case kStackOverflow:
      return fmt::format("lane {}: its call chain needs more than {} stack frames", lane,
                         stack_depth);
    case kTooManyIterations:
      return fmt::format("lane {}: needs more than {} loop iterations in one dispatch", lane,
                         kCeilingMaxIterations);
    case kNotFinished:
      return fmt::format("lane {}: never finished (the driver cut its loop short?)", lane);
    default:
      return fmt::format("lane {}: unknown status {}", lane, status);
  }
}

}  // namespace

Expected<std::shared_ptr<ComputeKernel>> compile_ceiling(std::shared_ptr<VulkanContext> context,
                                                         const std::string& program,
                                                         uint32_t parameters,
                                                         uint32_t stack_depth) {
  const std::string* common = find_source("common");
  const std::string* body = find_source(program);
  if (!common || !body) return Error{fmt::format("no ceiling kernel for '{}'", program)};
  const std::string glsl =
      fmt::format("#version 450\n#define STACK_DEPTH {}\n#define MAX_ITERATIONS {}u\n{}{}{}",
                  stack_depth, kCeilingMaxIterations, *common, op_prelude_glsl(), *body);
  ComputeKernelOptions options;
  options.push_constant_words = 3;  // lanes, seed_lo, seed_hi
  options.disk_cache = false;       // compile time is reported like the engine's: uncached
  return ComputeKernel::create(std::move(context), glsl, 2 + parameters, options);
}

Expected<RunResult> run_ceiling(ComputeKernel& kernel, const Batch& batch, uint32_t out_words,
                                uint64_t seed, uint32_t stack_depth) {
  std::vector<std::vector<uint32_t>> buffers;
  buffers.emplace_back(batch.lanes, kNotFinished);
  buffers.emplace_back(size_t{batch.lanes} * out_words, 0u);
  for (const std::vector<uint32_t>& input : batch.inputs)
    buffers.push_back(input);
  const uint32_t groups = (batch.lanes + kLocalSize - 1) / kLocalSize;
  Status ran =
      kernel.run(buffers, groups,
                 {batch.lanes, static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)});
  if (!ran) return Error{ran.error()};
  for (uint32_t lane = 0; lane < batch.lanes; ++lane)
    if (buffers[0][lane] != kDone) return Error{lane_problem(lane, buffers[0][lane], stack_depth)};
  RunResult result;
  result.outputs = std::move(buffers[1]);
  result.faulted.assign(batch.lanes, 0);
  result.stats.lanes = batch.lanes;
  return result;
}

}  // namespace ab::bench
