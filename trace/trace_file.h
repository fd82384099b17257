// The .abtrace format: a recorded batched run that the debugger replays with no GPU. The one
// reader and writer of the format: the public write_trace (autobatch/trace.h, through
// trace/vm_trace.h), `autobatch run --trace` and the debugger all write through it.
//
// File layout: an uncompressed header, then one zstd frame (with content checksum) holding the
// body.
//   header: "ABTRACE\0", u32 format version, u64 FNV-1a hash of the program source text,
//           source path, entry function, u64 body size, u64 compressed size
//   body:   run options (from version 4, then the shards' lanes), the batch (inputs and
//           uniforms), the recorded step range
//           [first_step, first_step + steps), per step the block run and the lanes that ran it
//           (as runs of consecutive lanes), and VM checkpoints (the first at first_step; from
//           version 4, each with its shards' step counts).
// A trace whose hash differs from the program's source is rejected (it was recorded from another
// version); a truncated or corrupt file gives a message saying so. Integers are little-endian;
// counts and lane runs are LEB128 varints.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "autobatch/expected.h"
#include "autobatch/trace.h"
#include "cpu/vm.h"
#include "ir/run.h"

namespace ab {

// 2: a fault record's detail. 3: block ids after rotate_loops and merge_blocks, which join a
// loop's blocks, so a version 2 trace's steps name blocks this build no longer has. 4: version 3
// and the shards of a run cut over devices or ranks (TraceOptions::shard_lanes). A trace of an
// unsharded run is written as version 3, which builds before version 4 read too; both are read.
constexpr uint32_t kTraceFormatVersion = 4;
constexpr uint32_t kUnshardedTraceFormatVersion = 3;

uint64_t source_hash(const std::string& source_text);

struct Trace {
  uint32_t version = kTraceFormatVersion;
  uint64_t source_hash = 0;
  std::string source_path;
  std::string entry = "main";
  RunOptions options;
  std::vector<uint32_t> shard_lanes;  // TraceOptions::shard_lanes: the VM stepped them apart
  Batch batch;
  uint64_t first_step = 0;
  std::vector<TraceStep> steps;            // steps first_step, ... (ab::TraceStep, ir/run.h)
  std::vector<uint8_t> active_sets;        // per step, the encoded sorted lane set
  std::vector<uint64_t> active_set_start;  // [step] offset into active_sets; one extra at the end
  std::vector<VmCheckpoint> checkpoints;   // sorted by step; the first is at first_step
  bool finished = false;                   // the run ended at the last recorded step

  uint64_t end_step() const { return first_step + steps.size(); }
  // Appends the next step's record; `lanes` in any order.
  void add_step(int32_t block, std::vector<uint32_t> lanes);
  // The lanes that ran recorded step `step` (absolute step number), sorted.
  std::vector<uint32_t> active_lanes(uint64_t step) const;
};

// Serializes to / parses from the file layout above. Errors are messages naming the file.
// The parse_ forms take the file's bytes (`path` only names it in messages); the read_ forms
// read the file and parse it.
Status write_trace(const std::string& path, const Trace& trace);
Expected<Trace> parse_trace(std::string_view bytes, const std::string& path);
Expected<Trace> read_trace(const std::string& path);
// Only the header, for finding the program a trace belongs to before reading the rest
// (TraceHeader, read_trace_header and check_trace_source are public: autobatch/trace.h).
Expected<TraceHeader> parse_trace_header(std::string_view bytes, const std::string& path);

}  // namespace ab
