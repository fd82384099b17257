#include "tools/backends.h"

#include "ir/backends/interp.h"
#include "ir/backends/vm.h"
#include "ir/passes/lower.h"

namespace ab::cli {
namespace {

BackendRun run_interpreter(const Program& program, int entry, const Batch& batch,
                           const RunOptions& options) {
  return BackendRun{run_interp(program, entry, batch, options), {}};
}

BackendRun run_batched_vm(const Program& program, int entry, const Batch& batch,
                          const RunOptions& options) {
  const LoweredProgram lowered = lower(program, entry);
  BackendRun run{run_vm(lowered, batch, options), {}};
  for (const LoweredBlock& block : lowered.blocks)
    run.block_names.push_back(block.name);
  return run;
}

}  // namespace

const std::vector<Backend>& backends() {
  static const std::vector<Backend> table = {
      {"vm", "the batched CPU VM (Radul et al. Algorithm 2 on the lowered program)", true,
       run_batched_vm},
      {"interp", "the per-lane reference interpreter", false, run_interpreter},
  };
  return table;
}

const Backend* find_backend(std::string_view name) {
  for (const Backend& backend : backends())
    if (backend.name == name) return &backend;
  return nullptr;
}

std::string_view default_backend() {
  return "vm";
}

}  // namespace ab::cli
