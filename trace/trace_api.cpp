// The public traces (autobatch/trace.h): the module's VM run recorded by the one recorder
// (trace/vm_trace.h), and TraceFile / TraceWriter around the one reader and writer of the
// .abtrace format (trace/trace_file.h) that `autobatch run --trace` and the debugger use.
#include "autobatch/trace.h"

#include <fmt/format.h>

#include "core/module_impl.h"
#include "core/vm_state.h"
#include "ir/run.h"
#include "trace/trace_file.h"
#include "trace/vm_trace.h"

namespace ab {

Status write_trace(const std::string& path, const Module& module, const Batch& batch,
                   const RunOptions& options, const TraceOptions& range) {
  const Module::Impl& m = module.impl();
  if (Status fits = m.check_cpu_run(batch, options, CpuBackend::Vm); !fits) return fits;
  if (Status shards = check_shard_lanes(range.shard_lanes, batch.lanes); !shards) return shards;
  try {
    auto trace = record_vm_trace(m.lowered, batch, options, range, m.program.file, m.source_text);
    if (!trace) return Error{trace.error()};
    return write_trace(path, *trace);
  } catch (const std::bad_alloc&) {
    return Error{out_of_host_memory(m.cpu_bytes_per_lane(options, CpuBackend::Vm), batch.lanes)};
  }
}

struct TraceFile::Impl {
  Trace trace;
  std::vector<std::shared_ptr<const VmState>> checkpoints;
};

TraceFile::TraceFile(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
TraceFile::~TraceFile() = default;

namespace {

std::shared_ptr<const TraceFile> make_trace_file(Trace trace) {
  auto impl = std::make_unique<TraceFile::Impl>();
  impl->trace = std::move(trace);
  for (VmCheckpoint& c : impl->trace.checkpoints)
    impl->checkpoints.push_back(make_vm_state(std::move(c)));
  impl->trace.checkpoints.clear();
  return TraceFile::make(std::move(impl));
}

}  // namespace

std::shared_ptr<const TraceFile> TraceFile::make(std::unique_ptr<Impl> impl) {
  return std::shared_ptr<const TraceFile>(new TraceFile(std::move(impl)));
}

Expected<std::shared_ptr<const TraceFile>> TraceFile::read(const std::string& path) {
  auto read = read_trace(path);
  if (!read) return read.failure();
  return make_trace_file(std::move(*read));
}

Expected<std::shared_ptr<const TraceFile>> TraceFile::parse(std::string_view bytes,
                                                            const std::string& name) {
  auto parsed = parse_trace(bytes, name);
  if (!parsed) return parsed.failure();
  return make_trace_file(std::move(*parsed));
}

uint64_t TraceFile::source_hash() const {
  return impl_->trace.source_hash;
}
const std::string& TraceFile::source_path() const {
  return impl_->trace.source_path;
}
const std::string& TraceFile::entry() const {
  return impl_->trace.entry;
}
const Batch& TraceFile::batch() const {
  return impl_->trace.batch;
}
const RunOptions& TraceFile::options() const {
  return impl_->trace.options;
}
const std::vector<uint32_t>& TraceFile::shard_lanes() const {
  return impl_->trace.shard_lanes;
}
uint64_t TraceFile::first_step() const {
  return impl_->trace.first_step;
}
uint64_t TraceFile::end_step() const {
  return impl_->trace.end_step();
}
bool TraceFile::finished() const {
  return impl_->trace.finished;
}
const std::vector<TraceStep>& TraceFile::steps() const {
  return impl_->trace.steps;
}
std::vector<uint32_t> TraceFile::active_lanes(uint64_t step) const {
  if (step < first_step() || step >= end_step()) return {};
  return impl_->trace.active_lanes(step);
}
const std::vector<std::shared_ptr<const VmState>>& TraceFile::checkpoints() const {
  return impl_->checkpoints;
}

struct TraceWriter::Impl {
  Trace trace;
  bool started = false;
};

TraceWriter::TraceWriter(const Module& module, const Batch& batch, const RunOptions& options,
                         std::vector<uint32_t> shard_lanes)
    : impl_(std::make_unique<Impl>()) {
  Trace& t = impl_->trace;
  t.source_hash = source_hash(module.impl().source_text);
  t.source_path = module.file();
  t.entry = module.entry();
  t.options = options;
  t.options.record_trace = false;  // the trace keeps its own record of the steps
  t.batch = batch;
  t.shard_lanes = std::move(shard_lanes);
}
TraceWriter::~TraceWriter() = default;

void TraceWriter::add_checkpoint(const VmState& state) {
  Trace& t = impl_->trace;
  if (!impl_->started) {
    t.first_step = state.step();
    impl_->started = true;
  }
  t.checkpoints.push_back(state.impl().checkpoint);
}

void TraceWriter::add_step(int32_t block, std::vector<uint32_t> lanes) {
  impl_->trace.add_step(block, std::move(lanes));
}

Status TraceWriter::write(const std::string& path, bool finished) {
  if (!impl_->started) return Error{"a trace needs its first state"};
  impl_->trace.finished = finished;
  return write_trace(path, impl_->trace);
}

}  // namespace ab
