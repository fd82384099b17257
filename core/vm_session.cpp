// VmSession (autobatch/vm.h): the public face of the CPU VM's step-by-step run (VmRun), over a
// Module's lowered program; VmState wraps a VmCheckpoint.
#include "autobatch/vm.h"

#include "core/module_impl.h"
#include "core/vm_state.h"
#include "cpu/vm_check.h"
#include "ir/run.h"

namespace ab {

VmState::VmState(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
VmState::~VmState() = default;

uint64_t VmState::step() const {
  return impl_->checkpoint.step;
}

size_t VmState::bytes() const {
  const VmCheckpoint& c = impl_->checkpoint;
  size_t n = c.pc.size() * 4 + c.pc_depth.size() * 4 + c.pc_stack.size() * 4 +
             c.registers.size() * 4 + c.lane_steps.size() * 8 + c.random_draws.size() * 8 +
             c.faulted.size() + c.block_executions.size() * 8 + c.errors.size() * sizeof(LaneError);
  for (const auto& s : c.stacks)
    n += (s.depth.size() + s.words.size()) * 4;
  return n;
}

std::shared_ptr<const VmState> make_vm_state(VmCheckpoint checkpoint) {
  auto impl = std::make_unique<VmState::Impl>();
  impl->checkpoint = std::move(checkpoint);
  return std::make_shared<const VmState>(std::move(impl));
}

struct VmSession::Impl {
  Impl(std::shared_ptr<const Module> m, Batch b, const RunOptions& o, std::vector<uint32_t> shards)
      : module(std::move(m)),
        batch(std::move(b)),
        options(o),
        shard_lanes(std::move(shards)),
        run(module->impl().lowered, batch, options, VmSchedule::OneBlockPerStep, shard_lanes),
        check(module->impl().lowered, batch.lanes, options.stack_depth, shard_lanes.size()) {}
  std::shared_ptr<const Module> module;
  Batch batch;  // VmRun keeps a reference: declared before it
  RunOptions options;
  std::vector<uint32_t> shard_lanes;
  VmRun run;
  VmCheckpointCheck check;
};

VmSession::VmSession(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
VmSession::~VmSession() = default;

Expected<std::unique_ptr<VmSession>> VmSession::create(std::shared_ptr<const Module> module,
                                                       Batch batch, RunOptions options,
                                                       std::vector<uint32_t> shard_lanes) {
  if (!module) return Error{"no module"};
  const Module::Impl& m = module->impl();
  if (Status fits = m.check_cpu_run(batch, options, CpuBackend::Vm); !fits) return fits.failure();
  if (Status shards = check_shard_lanes(shard_lanes, batch.lanes); !shards) return shards.failure();
  const uint32_t lanes = batch.lanes;
  try {
    auto impl = std::make_unique<Impl>(std::move(module), std::move(batch), options,
                                       std::move(shard_lanes));
    return std::unique_ptr<VmSession>(new VmSession(std::move(impl)));
  } catch (const std::bad_alloc&) {
    return Error{out_of_host_memory(m.cpu_bytes_per_lane(options, CpuBackend::Vm), lanes)};
  } catch (const std::length_error&) {
    return Error{out_of_host_memory(m.cpu_bytes_per_lane(options, CpuBackend::Vm), lanes)};
  }
}

const Module& VmSession::module() const {
  return *impl_->module;
}
const Batch& VmSession::batch() const {
  return impl_->batch;
}
const RunOptions& VmSession::options() const {
  return impl_->options;
}
const std::vector<uint32_t>& VmSession::shard_lanes() const {
  return impl_->shard_lanes;
}
uint32_t VmSession::lanes() const {
  return impl_->batch.lanes;
}
bool VmSession::done() const {
  return impl_->run.done();
}
uint64_t VmSession::steps() const {
  return impl_->run.steps();
}
int32_t VmSession::next_block() const {
  return impl_->run.next_block();
}
uint64_t VmSession::step(uint64_t n) {
  return impl_->run.step(n);
}
const std::vector<int32_t>& VmSession::lane_pcs() const {
  return impl_->run.lane_pcs();
}
const std::vector<uint32_t>& VmSession::lane_depths() const {
  return impl_->run.lane_depths();
}
const std::vector<uint8_t>& VmSession::lane_faulted() const {
  return impl_->run.lane_faulted();
}
const std::vector<uint32_t>& VmSession::registers() const {
  return impl_->run.registers();
}
const std::vector<uint32_t>& VmSession::last_active() const {
  return impl_->run.last_active();
}
BatchSnapshot VmSession::snapshot() const {
  return impl_->run.snapshot();
}
BatchSnapshot VmSession::snapshot(uint32_t first, uint32_t count) const {
  return impl_->run.snapshot(first, count);
}
RunResult VmSession::result() const {
  return impl_->run.result();
}

std::shared_ptr<const VmState> VmSession::checkpoint() const {
  return make_vm_state(impl_->run.checkpoint());
}

Status VmSession::check(const VmState& state) const {
  if (std::string problem = impl_->check(state.impl().checkpoint); !problem.empty())
    return Error{std::move(problem)};
  return Ok{};
}

Status VmSession::restore(const VmState& state) {
  if (Status fits = check(state); !fits)
    return Error{"the state does not fit this session: " + fits.error()};
  impl_->run.restore(state.impl().checkpoint);
  return Ok{};
}

int32_t pick_next_block(Heuristic heuristic, const std::vector<uint32_t>& waiting) {
  return block_picker(heuristic)(waiting);
}

}  // namespace ab
