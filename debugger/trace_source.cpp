#include "debugger/trace_source.h"

#include <fmt/format.h>
#include <algorithm>

#include "ir/backends/vm_check.h"

namespace ab::debugger {
namespace {

const VmCheckpoint& vm_state(const SourceCheckpoint& c) {
  return static_cast<const VmSourceCheckpoint&>(c).state;
}

}  // namespace

Expected<Trace> record_trace(Timeline& timeline, const Batch& batch, const RunOptions& options,
                             const std::string& entry, const TraceRange& range) {
  ExecutionSource& source = timeline.source();
  Trace t;
  t.source_hash = source_hash(source.program().source_text);
  t.source_path = source.program().path;
  t.entry = entry;
  t.options = options;
  t.options.record_trace = false;
  t.batch = batch;
  if (range.last <= range.first) return Error{"empty step range"};
  timeline.seek(range.first);
  if (timeline.position() != range.first)
    return Error{
        fmt::format("the run ends at step {}, before step {}", timeline.position(), range.first)};
  t.first_step = range.first;
  const uint64_t interval = std::max<uint64_t>(1, range.checkpoint_interval);
  auto save = [&] {
    auto c = source.checkpoint();
    auto* vm = dynamic_cast<const VmSourceCheckpoint*>(c.get());
    if (!vm) return false;
    t.checkpoints.push_back(vm->state);
    return true;
  };
  if (!save()) return Error{"this source cannot be recorded"};
  while (timeline.position() < range.last && !source.done()) {
    const int32_t block = source.next_block();
    if (timeline.step(1) != 1) break;
    t.add_step(block, source.last_active());
    if ((timeline.position() - range.first) % interval == 0 && !source.done()) save();
  }
  if (!source.error().empty()) return Error{source.error()};
  t.finished = source.done();
  return t;
}

TraceSource::TraceSource(std::shared_ptr<const Trace> trace, ProgramInfo program)
    : trace_(std::move(trace)),
      vm_(std::make_unique<VmSource>(std::move(program), trace_->batch, trace_->options)) {}

Expected<std::unique_ptr<TraceSource>> TraceSource::open(std::shared_ptr<const Trace> trace,
                                                         ProgramInfo program) {
  const LoweredProgram& p = *program.lowered;
  if (std::string e = check_batch(*p.source, p.entry_function, trace->batch); !e.empty())
    return Error{"the trace's batch does not fit the program: " + e};
  for (const TraceStep& s : trace->steps)
    if (s.block < 0 || s.block >= static_cast<int32_t>(p.blocks.size()))
      return Error{fmt::format("the trace runs block {}, but the program has {} blocks", s.block,
                               p.blocks.size())};
  const VmCheckpointCheck check(p, trace->batch.lanes, trace->options.stack_depth);
  for (const VmCheckpoint& c : trace->checkpoints)
    if (std::string e = check(c); !e.empty())
      return Error{
          fmt::format("the trace's checkpoint at step {} does not fit the program: {}", c.step, e)};
  std::unique_ptr<TraceSource> source(new TraceSource(std::move(trace), std::move(program)));
  VmSourceCheckpoint first;
  first.state = source->trace_->checkpoints.front();
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
    const TraceStep& want = trace_->steps[at - trace_->first_step];
    const int32_t block = vm_->next_block();
    vm_->step(1);
    if (block != want.block || vm_->last_active().size() != want.active) {
      error_ = fmt::format(
          "the replay left the trace at step {}: it ran block {} with {} lanes, the trace says "
          "block {} with {} lanes",
          at, program().lowered->blocks[block].name, vm_->last_active().size(),
          program().lowered->blocks[want.block].name, want.active);
      return taken + 1;
    }
  }
  return taken;
}

void TraceSource::restore(const SourceCheckpoint& c) {
  // Prefer the trace's own checkpoint when it is closer than the one offered.
  const VmCheckpoint* best = &vm_state(c);
  for (const VmCheckpoint& t : trace_->checkpoints)
    if (t.step <= c.step && t.step > best->step) best = &t;
  VmSourceCheckpoint use;
  use.state = *best;
  use.step = best->step;
  vm_->restore(use);
  error_.clear();
}

uint32_t TraceSource::recorded_active(uint64_t step) const {
  if (step < trace_->first_step || step >= trace_->end_step()) return 0;
  return trace_->steps[step - trace_->first_step].active;
}

int32_t TraceSource::recorded_block(uint64_t step) const {
  if (step < trace_->first_step || step >= trace_->end_step()) return -1;
  return trace_->steps[step - trace_->first_step].block;
}

}  // namespace ab::debugger
