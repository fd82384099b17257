#include "debugger/vm_source.h"

namespace ab::debugger {

size_t VmSourceCheckpoint::bytes() const {
  size_t n = state.pc.size() * 4 + state.pc_depth.size() * 4 + state.pc_stack.size() * 4 +
             state.registers.size() * 4 + state.lane_steps.size() * 8 +
             state.random_draws.size() * 8 + state.faulted.size() +
             state.block_executions.size() * 8 + state.errors.size() * sizeof(LaneError);
  for (const auto& s : state.stacks)
    n += (s.depth.size() + s.words.size()) * 4;
  return n;
}

VmSource::VmSource(ProgramInfo program, const Batch& batch, const RunOptions& options)
    : program_(std::move(program)),
      options_(options),
      lanes_(batch.lanes),
      run_(*program_.lowered, batch, options) {}

std::unique_ptr<SourceCheckpoint> VmSource::checkpoint() const {
  auto c = std::make_unique<VmSourceCheckpoint>();
  c->state = run_.checkpoint();
  c->step = c->state.step;
  return c;
}

void VmSource::restore(const SourceCheckpoint& checkpoint) {
  run_.restore(static_cast<const VmSourceCheckpoint&>(checkpoint).state);
}

}  // namespace ab::debugger
