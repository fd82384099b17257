#include "debugger/trace_source.h"

#include <fmt/format.h>
#include <algorithm>

namespace ab::debugger {
Status record_trace(Timeline& timeline, const Batch& batch, const RunOptions& options,
                    const TraceRange& range, const std::string& path) {
  ExecutionSource& source = timeline.source();
  TraceWriter writer(*source.program().module, batch, options, range.shard_lanes);
  if (range.last <= range.first) return Error{"empty step range"};
  timeline.seek(range.first);
  if (timeline.position() != range.first)
    return Error{
        fmt::format("the run ends at step {}, before step {}", timeline.position(), range.first)};
  const uint64_t interval = std::max<uint64_t>(1, range.checkpoint_interval);
  auto save = [&] {
    auto c = source.checkpoint();
    auto* vm = dynamic_cast<const VmSourceCheckpoint*>(c.get());
    if (!vm) return false;
    writer.add_checkpoint(*vm->state);
    return true;
  };
  if (!save()) return Error{"this source cannot be recorded"};
  while (timeline.position() < range.last && !source.done()) {
    const int32_t block = source.next_block();
    if (timeline.step(1) != 1) break;
    writer.add_step(block, source.last_active());
    if ((timeline.position() - range.first) % interval == 0 && !source.done()) save();
  }
  if (!source.error().empty()) return Error{source.error()};
  return writer.write(path, source.done());
}

Expected<std::unique_ptr<TraceSource>> TraceSource::open(std::shared_ptr<const TraceFile> trace,
                                                         ProgramInfo program) {
  const Module& module = *program.module;
  if (Status fits = module.check(trace->batch()); !fits)
    return Error{"the trace's batch does not fit the program: " + fits.error()};
  const size_t blocks = module.blocks().size();
  for (const TraceStep& s : trace->steps())
    if (s.block < 0 || s.block >= static_cast<int32_t>(blocks))
      return Error{
          fmt::format("the trace runs block {}, but the program has {} blocks", s.block, blocks)};
  if (trace->checkpoints().empty()) return Error{"the trace holds no state to start from"};
  auto vm =
      VmSource::create(std::move(program), trace->batch(), trace->options(), trace->shard_lanes());
  if (!vm) return Error{"the trace cannot be replayed: " + vm.error()};
  std::unique_ptr<TraceSource> source(new TraceSource(std::move(trace), std::move(*vm)));
  for (const auto& c : source->trace_->checkpoints())
    if (Status fits = source->vm_->vm().check(*c); !fits)
      return Error{fmt::format("the trace's checkpoint at step {} does not fit the program: {}",
                               c->step(), fits.error())};
  VmSourceCheckpoint first;
  first.state = source->trace_->checkpoints().front();
  source->vm_->restore(first);
  return source;
}

bool TraceSource::done() const {
  return !error_.empty() || vm_->done() || vm_->steps() >= trace_->end_step();
}

int32_t TraceSource::next_block() const {
  return done() ? -1 : vm_->next_block();
}

uint64_t TraceSource::step(uint64_t n) {
  uint64_t taken = 0;
  for (; taken < n && !done(); ++taken) {
    const uint64_t at = vm_->steps();
    const TraceStep& want = trace_->steps()[at - trace_->first_step()];
    const int32_t block = vm_->next_block();
    vm_->step(1);
    if (block != want.block || vm_->last_active().size() != want.active) {
      error_ = fmt::format(
          "the replay left the trace at step {}: it ran block {} with {} lanes, the trace says "
          "block {} with {} lanes",
          at, program().module->blocks()[block].name, vm_->last_active().size(),
          program().module->blocks()[want.block].name, want.active);
      return taken + 1;
    }
  }
  return taken;
}

void TraceSource::restore(const SourceCheckpoint& c) {
  // Prefer the trace's own checkpoint when it is closer than the one offered.
  VmSourceCheckpoint use;
  use.state = static_cast<const VmSourceCheckpoint&>(c).state;
  for (const auto& t : trace_->checkpoints())
    if (t->step() <= c.step && t->step() > use.state->step()) use.state = t;
  use.step = use.state->step();
  vm_->restore(use);
  error_.clear();
}

uint32_t TraceSource::recorded_active(uint64_t step) const {
  if (step < trace_->first_step() || step >= trace_->end_step()) return 0;
  return trace_->steps()[step - trace_->first_step()].active;
}

int32_t TraceSource::recorded_block(uint64_t step) const {
  if (step < trace_->first_step() || step >= trace_->end_step()) return -1;
  return trace_->steps()[step - trace_->first_step()].block;
}

}  // namespace ab::debugger
