// Traces: a batch's run recorded as an .abtrace file, which `autobatch debug FILE.abtrace` opens
// and replays step by step on the CPU with no GPU (docs/debugger.md). An app writes one to take a
// batch it saw, say one frame's agents, to the debugger.
//
// What a trace holds is the CPU VM's run of the batch (Module::run_cpu with CpuBackend::Vm): the
// block each scheduler step ran and the lanes that ran it, with the VM's whole state every
// checkpoint_interval steps. The VM's steps are the ones the global schedule reproduces exactly;
// a local-schedule run on the device reaches the same results by other steps. The file names the
// module's file (Module::file()) and holds a hash of its source text: the debugger reads the
// program from that path and refuses a trace whose source has changed since.
//
// Reading one back (TraceFile) and writing one from states a host stepped itself (TraceWriter)
// are what the debugger's trace replay and its `save` use.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "autobatch/batch.h"
#include "autobatch/expected.h"
#include "autobatch/module.h"
#include "autobatch/vm.h"

namespace ab {

// The steps a trace records: [first, last), ending earlier when the run does.
struct TraceOptions {
  TraceOptions(uint64_t first_step = 0, uint64_t last_step = UINT64_MAX, uint64_t interval = 1024,
               std::vector<uint32_t> shards = {})
      : first(first_step),
        last(last_step),
        checkpoint_interval(interval),
        shard_lanes(std::move(shards)) {}
  uint64_t first;
  uint64_t last;  // exclusive
  // Steps between two saved VM states: more states make a replay's seeks faster and the file
  // larger.
  uint64_t checkpoint_interval;
  // The batch's contiguous shards, as lane counts in lane order, when it ran cut over devices or
  // processes (autobatch/shards.h): the VM steps them apart as they ran (VmSession::create), so
  // the trace's steps are the shards' (merge_shards' trace), each lane's history unchanged.
  // Empty: one scheduler for the whole batch. Otherwise the counts must add up to the batch's.
  std::vector<uint32_t> shard_lanes;
};

// Runs `batch` on the CPU VM and writes the trace of its steps to `path` (replacing the file).
// Fails, saying why, for a batch that does not fit the module (Module::check), shards that do not
// add up to it, an empty range, a range that starts after the run has ended, or a file that
// cannot be written.
Status write_trace(const std::string& path, const Module& module, const Batch& batch,
                   const RunOptions& options = {}, const TraceOptions& trace = {});

// What a trace says before it is read whole: the program it was recorded from.
struct TraceHeader {
  uint32_t version = 0;      // of the file format
  uint64_t source_hash = 0;  // of the program's source text
  std::string source_path, entry;
};
Expected<TraceHeader> read_trace_header(const std::string& path);
// Fails, saying so, unless `source_text` (read from `source_path`) is the text the trace was
// recorded from.
Status check_trace_source(const TraceHeader& header, const std::string& trace_path,
                          const std::string& source_path, const std::string& source_text);

// A trace read back: the run's batch and options, the recorded steps [first_step(), end_step())
// and the VM states saved along them (VmSession::restore takes them once the program is
// compiled: a state that does not fit it is refused there).
class TraceFile {
 public:
  struct Impl;
  // Errors name the file: unreadable, truncated, corrupt, or of another format version.
  static Expected<std::shared_ptr<const TraceFile>> read(const std::string& path);
  // The same from the file's bytes (`name` only names it in messages).
  static Expected<std::shared_ptr<const TraceFile>> parse(std::string_view bytes,
                                                          const std::string& name);
  static std::shared_ptr<const TraceFile> make(std::unique_ptr<Impl> impl);  // the library's own
  ~TraceFile();

  uint64_t source_hash() const;
  const std::string& source_path() const;
  const std::string& entry() const;
  const Batch& batch() const;
  const RunOptions& options() const;
  const std::vector<uint32_t>& shard_lanes() const;  // TraceOptions::shard_lanes; empty: one
  uint64_t first_step() const;
  uint64_t end_step() const;                    // one past the last recorded step
  bool finished() const;                        // the run ended at the last recorded step
  const std::vector<TraceStep>& steps() const;  // step s at [s - first_step()]
  std::vector<uint32_t> active_lanes(uint64_t step) const;  // sorted; empty outside the range
  // Sorted by step; the first at first_step().
  const std::vector<std::shared_ptr<const VmState>>& checkpoints() const;

 private:
  explicit TraceFile(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Writes a trace of steps a host ran itself (a debugger saving part of its session): the first
// state, then each step's block and lanes, with more states along the way, all of one run of
// `module` on `batch` with `options`.
class TraceWriter {
 public:
  // `shard_lanes`: the shards the session stepped apart (VmSession::shard_lanes).
  TraceWriter(const Module& module, const Batch& batch, const RunOptions& options,
              std::vector<uint32_t> shard_lanes = {});
  ~TraceWriter();
  // The first state fixes the first step; later ones must follow the steps added so far.
  void add_checkpoint(const VmState& state);
  void add_step(int32_t block, std::vector<uint32_t> lanes);  // lanes in any order
  // Fails without a first state, or when the file cannot be written.
  Status write(const std::string& path, bool finished);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace ab
