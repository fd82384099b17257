// Where the debugger's states come from. The model, the timeline and the UI talk only to this
// interface; the CPU VM (vm_source.h), a recorded trace (trace_source.h) and a live run of the
// Vulkan engine (vulkan_source.h) implement it.
//
// A source is a batched run that moves forward one scheduler step at a time, shows every lane's
// program counter, call depth and registers cheaply, and can save its whole state into an opaque
// checkpoint and go back to it (the timeline's reverse step and scrubbing are built on that).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "autobatch/batch.h"
#include "autobatch/module.h"

namespace ab::debugger {

// The program a source runs, with the text and path it came from.
struct ProgramInfo {
  std::string path;         // the .ab file, for titles and messages
  std::string source_text;  // its text, for the source view
  // The compiled program: its lowered blocks and variables are what the views show.
  std::shared_ptr<const Module> module;
};

// A saved state; only the source that made it knows what is inside.
struct SourceCheckpoint {
  virtual ~SourceCheckpoint() = default;
  uint64_t step = 0;
  virtual size_t bytes() const = 0;  // memory it holds, for the timeline's budget
};

class ExecutionSource {
 public:
  virtual ~ExecutionSource() = default;

  virtual const ProgramInfo& program() const = 0;
  virtual uint32_t lanes() const = 0;
  virtual uint32_t stack_depth() const = 0;  // the run's maximum call depth

  virtual uint64_t steps() const = 0;  // steps run so far
  virtual bool done() const = 0;
  virtual int32_t next_block() const = 0;  // -1 when done
  // Runs up to n steps; returns how many ran. Returns fewer only when the run ended or the
  // source failed (see error()).
  virtual uint64_t step(uint64_t n) = 0;
  // Non-empty when the source cannot go on (e.g. a trace that does not match its program).
  virtual const std::string& error() const = 0;

  // Per-lane views of the current state (valid until the next step or restore).
  virtual const std::vector<int32_t>& lane_pcs() const = 0;      // exit_pc() when finished
  virtual const std::vector<uint32_t>& lane_depths() const = 0;  // call depth
  virtual const std::vector<uint8_t>& lane_faulted() const = 0;
  virtual const std::vector<uint32_t>& registers() const = 0;    // [lane][register_words()]
  virtual const std::vector<uint32_t>& last_active() const = 0;  // lanes that ran the last step

  // Full state of a range of lanes, stacks included (for the lane inspector and dumps).
  virtual BatchSnapshot snapshot(uint32_t first, uint32_t count) const = 0;
  // Outputs, errors and statistics so far.
  virtual RunResult result() const = 0;

  virtual std::unique_ptr<SourceCheckpoint> checkpoint() const = 0;
  // Takes a checkpoint this source made; afterwards steps() == checkpoint.step.
  virtual void restore(const SourceCheckpoint& checkpoint) = 0;

  // Sources whose lanes are scheduled in groups (the Vulkan engine's local schedule) give the
  // lanes per group: lane L is in group L / group_width(), and each group picks its own block.
  // 0: one scheduler for the whole batch.
  virtual uint32_t group_width() const { return 0; }
  // One line on where the states come from ("vm", "vulkan: llvmpipe, local/subgroup"), for the
  // window's title and the state dump.
  virtual std::string describe() const { return "vm"; }

  // Sources that know the future (a recorded trace) report the total number of steps and the
  // active-lane count of each step, so the utilization plot can show the whole run at once.
  virtual bool knows_future() const { return false; }
  virtual uint64_t total_steps() const { return 0; }
  virtual uint32_t recorded_active(uint64_t step) const { return 0; }
  virtual int32_t recorded_block(uint64_t step) const { return -1; }
};

}  // namespace ab::debugger
