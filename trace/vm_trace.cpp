#include "trace/vm_trace.h"

#include <fmt/format.h>
#include <algorithm>

#include "cpu/vm.h"

namespace ab {

Expected<Trace> record_vm_trace(const LoweredProgram& program, const Batch& batch,
                                const RunOptions& options, const TraceOptions& range,
                                const std::string& source_path, const std::string& source_text) {
  if (range.last <= range.first) return Error{"empty step range"};
  Trace t;
  t.source_hash = source_hash(source_text);
  t.source_path = source_path;
  t.entry = program.source->functions.at(program.entry_function).name;
  t.options = options;
  t.options.record_trace = false;  // the trace keeps its own record of the steps
  t.batch = batch;
  t.shard_lanes = range.shard_lanes;
  VmRun vm(program, t.batch, t.options, VmSchedule::OneBlockPerStep, t.shard_lanes);
  if (const uint64_t ran = vm.step(range.first); ran != range.first)
    return Error{fmt::format("the run ends at step {}, before step {}", ran, range.first)};
  t.first_step = range.first;
  const uint64_t interval = std::max<uint64_t>(1, range.checkpoint_interval);
  t.checkpoints.push_back(vm.checkpoint());
  while (vm.steps() < range.last && !vm.done()) {
    const int32_t block = vm.next_block();
    vm.step(1);
    t.add_step(block, vm.last_active());
    if ((vm.steps() - range.first) % interval == 0 && !vm.done())
      t.checkpoints.push_back(vm.checkpoint());
  }
  t.finished = vm.done();
  return t;
}

}  // namespace ab
