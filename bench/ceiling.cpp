// compile_ceiling and run_ceiling: the kernel text is `#version`, the bounds and the saved-state
// layout, bench/ceiling/common.glsl, the engine's op prelude, then the program's kernel.
#include "bench/ceiling.h"

#include <fmt/format.h>

#include <algorithm>

#include "bench/ceiling_sources.h"

namespace ab::bench {
namespace {

// Mirrors bench/ceiling/common.glsl.
constexpr uint32_t kLocalSize = 64;
constexpr uint32_t kDone = 0, kStackOverflow = 1, kTooManyIterations = 2, kSuspended = 3;
constexpr uint32_t kNotStarted = 0xfffffffeu, kNotFinished = 0xffffffffu;

// Saved words per lane: fixed words plus words per stack frame, as each kernel's header says;
// and the uniforms the kernel binds (one buffer each, after the parameters).
struct SavedLayout {
  const char* program;
  uint32_t fixed, per_frame;
  uint32_t uniforms = 0;
};
constexpr SavedLayout kSavedLayouts[] = {
    {"fib", 2, 3}, {"ackermann", 2, 3}, {"collatz", 2, 0},
    {"tak", 2, 6}, {"nuts_tree", 6, 0}, {"raytrace", 4, 10, 14},
};

const std::string* find_source(const std::string& name) {
  const auto& sources = ceiling_sources();
  auto it = std::find_if(sources.begin(), sources.end(),
                         [&](const CeilingSource& s) { return s.name == name; });
  return it == sources.end() ? nullptr : &it->text;
}

std::string lane_problem(const CeilingKernel& kernel, uint32_t lane, uint32_t status,
                         uint32_t dispatches) {
  switch (status) {
    case kStackOverflow:
      return fmt::format("lane {}: its call chain needs more than {} stack frames", lane,
                         kernel.stack_depth);
    case kTooManyIterations:
      return fmt::format("lane {}: one step needs more than {} loop iterations", lane,
                         kernel.max_iterations);
    case kSuspended:
      return fmt::format("lane {}: not finished after {} dispatches of {} loop iterations", lane,
                         dispatches, kernel.max_iterations);
    case kNotStarted:
    case kNotFinished:
      return fmt::format("lane {}: never finished (the driver cut its loop short?)", lane);
    default:
      return fmt::format("lane {}: unknown status {}", lane, status);
  }
}

}  // namespace

Expected<CeilingKernel> compile_ceiling(std::shared_ptr<VulkanContext> context,
                                        const std::string& program, uint32_t parameters,
                                        uint32_t stack_depth, uint32_t max_iterations) {
  const std::string* common = find_source("common");
  const std::string* body = find_source(program);
  auto layout = std::find_if(std::begin(kSavedLayouts), std::end(kSavedLayouts),
                             [&](const SavedLayout& l) { return l.program == program; });
  if (!common || !body || layout == std::end(kSavedLayouts))
    return Error{fmt::format("no ceiling kernel for '{}'", program)};
  if (max_iterations == 0 || max_iterations > kCeilingMaxIterations)
    return Error{fmt::format("ceiling loop bound {}: 1 to {} allowed", max_iterations,
                             kCeilingMaxIterations)};
  CeilingKernel out;
  out.program = program;
  out.parameters = parameters;
  out.stack_depth = stack_depth;
  out.max_iterations = max_iterations;
  out.uniforms = layout->uniforms;
  out.state_words = layout->fixed + layout->per_frame * stack_depth;
  const uint32_t state_binding = 2 + parameters + out.uniforms;
  const std::string glsl = fmt::format(
      "#version 450\n#define STACK_DEPTH {}\n#define MAX_ITERATIONS {}u\n#define STATE_WORDS {}u\n"
      "#define FIRST_UNIFORM_BINDING {}\n#define STATE_BINDING {}\n#define FLAG_BINDING {}\n"
      "{}{}{}",
      stack_depth, max_iterations, out.state_words, 2 + parameters, state_binding,
      state_binding + 1, *common, op_prelude_glsl(), *body);
  ComputeKernelOptions options;
  options.push_constant_words = 3;  // lanes, seed_lo, seed_hi
  options.disk_cache = false;       // compile time is reported like the engine's: uncached
  auto kernel = ComputeKernel::create(std::move(context), glsl, state_binding + 2, options);
  if (!kernel) return Error{kernel.error()};
  out.kernel = *kernel;
  return out;
}

Expected<CeilingRun> run_ceiling(const CeilingKernel& kernel, const Batch& batch,
                                 uint32_t out_words, uint64_t seed, uint32_t max_dispatches) {
  if (batch.inputs.size() != kernel.parameters)
    return Error{fmt::format("the {} ceiling kernel takes {} inputs, the batch has {}",
                             kernel.program, kernel.parameters, batch.inputs.size())};
  if (batch.uniforms.size() != kernel.uniforms)
    return Error{fmt::format("the {} ceiling kernel takes {} uniforms, the batch has {}",
                             kernel.program, kernel.uniforms, batch.uniforms.size())};
  std::vector<std::vector<uint32_t>> buffers;
  buffers.emplace_back(batch.lanes, kNotStarted);
  buffers.emplace_back(size_t{batch.lanes} * out_words, 0u);
  for (const std::vector<uint32_t>& input : batch.inputs)
    buffers.push_back(input);
  for (const std::vector<uint32_t>& uniform : batch.uniforms)
    buffers.push_back(uniform);
  const uint32_t state_binding = 2 + kernel.parameters + kernel.uniforms;
  buffers.emplace_back();       // the saved state: on the device only
  buffers.emplace_back(1, 0u);  // the "not finished" flag
  ComputeKernel::Repeat repeat;
  repeat.flag_buffer = state_binding + 1;
  repeat.max_dispatches = max_dispatches;
  repeat.device_only = {state_binding};
  repeat.device_words = {uint64_t{batch.lanes} * kernel.state_words};
  const uint32_t groups = (batch.lanes + kLocalSize - 1) / kLocalSize;
  auto ran = kernel.kernel->run_repeated(
      buffers, groups,
      {batch.lanes, static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)}, repeat);
  if (!ran) return Error{ran.error()};
  for (uint32_t lane = 0; lane < batch.lanes; ++lane)
    if (buffers[0][lane] != kDone) return Error{lane_problem(kernel, lane, buffers[0][lane], *ran)};
  CeilingRun out;
  out.dispatches = *ran;
  out.result.outputs = std::move(buffers[1]);
  out.result.faulted.assign(batch.lanes, 0);
  out.result.stats.lanes = batch.lanes;
  return out;
}

}  // namespace ab::bench
