// run_on_contexts (autobatch/engine.h): one batch cut over several Vulkan contexts.
#include <chrono>
#include <mutex>

#include "autobatch/engine.h"
#include "autobatch/shards.h"

namespace ab {
namespace {

// One context's whole run, stepped so that should_stop is polled between slices.
Expected<RunResult> run_to_end(const std::shared_ptr<VulkanContext>& context,
                               const std::shared_ptr<const Module>& module, const Batch& batch,
                               const RunOptions& options, const VulkanOptions& vulkan,
                               std::mutex& compiles) {
  const auto start = std::chrono::steady_clock::now();
  auto compiled = VulkanProgram::compile(context, module, vulkan);
  if (!compiled) return compiled.failure();
  auto created = VulkanRun::create(*compiled, batch, options, vulkan);
  if (!created) return created.failure();
  VulkanRun& gpu = **created;
  {
    // The first context of a kind compiles and fills the SPIR-V cache; the others load it.
    std::lock_guard lock(compiles);
    if (auto prepared = gpu.prepare(); !prepared) return prepared.failure();
  }
  while (!gpu.done()) {
    auto stepped = gpu.step(vulkan.schedule == Schedule::Global ? 4096 : 65536);
    if (!stepped) return stepped.failure();
    // Stopped early: the records streamed so far are all the caller gets (no outputs).
    if (!gpu.done() && options.should_stop && options.should_stop()) {
      RunResult stopped;
      stopped.stopped = true;
      stopped.stats.lanes = batch.lanes;
      return stopped;
    }
  }
  auto result = gpu.result();
  // The whole run, the kernels' compile at the first run included (as the CLI counts it).
  if (result)
    result->stats.wall_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

}  // namespace

Expected<RunResult> run_on_contexts(const std::vector<std::shared_ptr<VulkanContext>>& contexts,
                                    const std::shared_ptr<const Module>& module, const Batch& batch,
                                    const RunOptions& options, const VulkanOptions& vulkan) {
  if (contexts.empty()) return Error{"run_on_contexts needs at least one context"};
  std::mutex compiles;
  if (contexts.size() == 1)
    return run_to_end(contexts[0], module, batch, options, vulkan, compiles);
  RunResult merged =
      run_shards(batch, options, static_cast<uint32_t>(contexts.size()), module->output().words,
                 [&](uint32_t k, const Batch& part, const RunOptions& o) {
                   return run_to_end(contexts[k], module, part, o, vulkan, compiles);
                 });
  // A stopped run keeps no outputs, as one context's does.
  if (merged.stopped) {
    RunResult stopped;
    stopped.stopped = true;
    stopped.records_emitted = merged.records_emitted;
    stopped.stats.lanes = batch.lanes;
    return stopped;
  }
  return merged;
}

}  // namespace ab
