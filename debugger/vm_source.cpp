#include "debugger/vm_source.h"

namespace ab::debugger {

Expected<std::unique_ptr<VmSource>> VmSource::create(ProgramInfo program, const Batch& batch,
                                                     const RunOptions& options,
                                                     std::vector<uint32_t> shard_lanes) {
  auto session = VmSession::create(program.module, batch, options, std::move(shard_lanes));
  if (!session) return session.failure();
  return std::unique_ptr<VmSource>(new VmSource(std::move(program), std::move(*session)));
}

std::unique_ptr<SourceCheckpoint> VmSource::checkpoint() const {
  auto c = std::make_unique<VmSourceCheckpoint>();
  c->state = run_->checkpoint();
  c->step = c->state->step();
  return c;
}

void VmSource::restore(const SourceCheckpoint& checkpoint) {
  const Status restored = run_->restore(*static_cast<const VmSourceCheckpoint&>(checkpoint).state);
  error_ = restored ? std::string() : restored.error();
}

}  // namespace ab::debugger
