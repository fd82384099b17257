#include "debugger/vm_source.h"

#include <stdexcept>

namespace ab::debugger {
namespace {

std::unique_ptr<VmSession> open_session(const ProgramInfo& program, const Batch& batch,
                                        const RunOptions& options) {
  auto session = VmSession::create(program.module, batch, options);
  if (!session) throw std::invalid_argument(session.error());
  return std::move(*session);
}

}  // namespace

VmSource::VmSource(ProgramInfo program, const Batch& batch, const RunOptions& options)
    : program_(std::move(program)), run_(open_session(program_, batch, options)) {}

std::unique_ptr<SourceCheckpoint> VmSource::checkpoint() const {
  auto c = std::make_unique<VmSourceCheckpoint>();
  c->state = run_->checkpoint();
  c->step = c->state->step();
  return c;
}

void VmSource::restore(const SourceCheckpoint& checkpoint) {
  // The timeline hands back only the checkpoints this source made, which always fit.
  const Status restored = run_->restore(*static_cast<const VmSourceCheckpoint&>(checkpoint).state);
  if (!restored) throw std::logic_error(restored.error());
}

}  // namespace ab::debugger
