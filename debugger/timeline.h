// The timeline over an ExecutionSource: moving forward records each step's active-lane count
// (UtilizationHistory) and a checkpoint every `interval` steps; moving back (seek, back) restores
// the nearest checkpoint at or before the target and replays forward deterministically, so going
// back costs at most `interval` steps, never a rerun from step 0. When the checkpoints outgrow
// their memory budget, every other one is dropped and the interval doubles.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>

#include "debugger/execution_source.h"
#include "debugger/utilization_history.h"

namespace ab::debugger {

struct TimelineOptions {
  uint64_t interval = 64;                      // steps between checkpoints
  size_t checkpoint_budget = size_t{1} << 30;  // bytes for all checkpoints together
};

class Timeline {
 public:
  Timeline(ExecutionSource& source, const TimelineOptions& options = {});

  ExecutionSource& source() { return source_; }
  const ExecutionSource& source() const { return source_; }
  uint64_t position() const { return source_.steps(); }
  // The furthest step known: the trace's end, or the furthest step reached so far.
  uint64_t known_end() const;
  const UtilizationHistory& history() const { return history_; }

  // Runs up to n steps; after each one calls `stop` (if given) and stops when it returns true.
  // Returns the steps taken.
  uint64_t step(uint64_t n, const std::function<bool()>& stop = {});
  // Moves to `target` (clamped to where the run can go): back via checkpoint + replay, forward
  // by stepping. Returns the position reached.
  uint64_t seek(uint64_t target);
  uint64_t back(uint64_t n) { return seek(position() - std::min(n, position())); }

  uint64_t interval() const { return interval_; }
  size_t checkpoint_count() const { return checkpoints_.size(); }
  size_t checkpoint_bytes() const { return checkpoint_bytes_; }
  uint64_t replayed_steps() const { return replayed_; }  // steps re-run by seeks, for tests

  // Called after every step (`jumped` false) and after every restore of a checkpoint (`jumped`
  // true), so views over the lanes can follow the state incrementally.
  void set_observer(std::function<void(bool jumped)> observer) { observer_ = std::move(observer); }

 private:
  void after_step();
  void thin_out();

  ExecutionSource& source_;
  TimelineOptions options_;
  uint64_t interval_;
  UtilizationHistory history_;
  std::map<uint64_t, std::unique_ptr<SourceCheckpoint>> checkpoints_;
  size_t checkpoint_bytes_ = 0;
  uint64_t replayed_ = 0;
  std::function<void(bool)> observer_;
};

}  // namespace ab::debugger
