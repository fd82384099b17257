// The debugger's state as a plain model, with no window: the timeline and its position, and the
// views' own models it composes, each a small plain class: the breakpoints (breakpoints.h), the
// blocks' names and lines (block_index.h), the colouring (lane_coloring.h), where lanes wait and
// which blocks ran (block_activity.h), the selected lane (lane_selection.h) and the lane grid's
// grouping, filter and zoom (lane_grid_model.h). The model keeps them in step with the run and
// does what touches several: stopping at breakpoints, selecting a band or a heatmap cell, the
// JSON state dump. The ImGui window and the scripted runner only call this; the tests drive it
// directly.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "autobatch/expected.h"
#include "debugger/block_activity.h"
#include "debugger/block_index.h"
#include "debugger/breakpoints.h"
#include "debugger/execution_source.h"
#include "debugger/lane_coloring.h"
#include "debugger/lane_grid_model.h"
#include "debugger/lane_inspector.h"
#include "debugger/lane_selection.h"
#include "debugger/lane_views.h"
#include "debugger/timeline.h"

namespace ab::debugger {

// How the model runs on its own between a window's frames: not at all, ignoring breakpoints
// (the window's Run), or until a breakpoint hits (Run to breakpoint).
enum class RunMode : uint8_t { Paused, Run, ToBreakpoint };

// Why `continue` stopped.
struct StopReason {
  enum class Kind : uint8_t { Breakpoint, Finished, StepLimit, SourceError };
  Kind kind = Kind::Finished;
  int breakpoint = -1;  // index into breakpoints()
  std::string message;
};

class DebuggerModel {
 public:
  explicit DebuggerModel(std::unique_ptr<ExecutionSource> source,
                         const TimelineOptions& timeline = {});
  DebuggerModel(const DebuggerModel&) = delete;  // the timeline's observer points at it
  DebuggerModel& operator=(const DebuggerModel&) = delete;

  ExecutionSource& source() { return *source_; }
  const ExecutionSource& source() const { return *source_; }
  const Module& module() const { return *source_->program().module; }
  // The PC of a lane that has finished: one past the last block.
  int32_t exit_pc() const { return blocks_.exit_pc(); }
  Timeline& timeline() { return timeline_; }
  const Timeline& timeline() const { return timeline_; }
  uint64_t position() const { return timeline_.position(); }

  // ---- moving ----
  uint64_t step(uint64_t n) { return timeline_.step(n); }  // ignores breakpoints
  // Steps until a breakpoint hits, the run ends or `max_steps` ran.
  StopReason continue_run(uint64_t max_steps = UINT64_MAX);
  uint64_t back(uint64_t n) { return timeline_.back(n); }
  uint64_t seek(uint64_t step) { return timeline_.seek(step); }

  // ---- running on its own (the window's Run, Run to breakpoint and Pause) ----
  void set_run_mode(RunMode mode) { run_mode_ = mode; }
  bool running() const { return run_mode_ != RunMode::Paused; }
  // Runs up to `n` more steps in the run mode. When the run stops (a breakpoint hit in
  // ToBreakpoint mode, the run ended, or the source failed), the mode becomes Paused and the
  // result says why; nullopt while it goes on (and always when Paused).
  std::optional<std::string> run_slice(uint64_t n);

  // ---- the views' models ----
  BreakpointList& breakpoints() { return breakpoints_; }
  const BreakpointList& breakpoints() const { return breakpoints_; }
  // Parses and adds "line 4", "block fib.b2", ...; fails with parse_breakpoint's message.
  // "filter" alone adds the current lane filter as a breakpoint.
  Status add_breakpoint(std::string_view text);
  const BlockIndex& blocks() const { return blocks_; }
  LaneColoring& coloring() { return coloring_; }
  const LaneColoring& coloring() const { return coloring_; }
  BlockActivity& activity() { return activity_; }
  const BlockActivity& activity() const { return activity_; }
  const LaneSelection& selection() const { return selection_; }
  LaneGridModel& lane_grid() { return grid_; }
  const LaneGridModel& lane_grid() const { return grid_; }

  // ---- selection ----
  Status select_lane(uint32_t lane);  // fails for a lane out of range
  std::optional<uint32_t> selected_lane() const { return selection_.lane(); }
  // Selects the next (or previous) matching lane after the selected one, wrapping around.
  std::optional<uint32_t> select_next_match(bool forward = true);
  // Selects a band's lanes: its predicate becomes the filter, and its first lane is selected.
  Status select_band(size_t band);
  // A heatmap cell: goes to `step` (the state before that step ran) and filters the lanes
  // waiting at `block` then.
  Status select_heatmap_cell(uint64_t step, int32_t block);

  // ---- views of the current state ----
  uint32_t live_lanes() const;  // lanes not finished or faulted
  uint32_t faulted_lanes() const;
  // The lane grid's legend for the current colouring.
  std::vector<LegendEntry> legend() const;
  // A one-line hover text: "lane 17: fib.b2 (line 3), depth 4, n = 7".
  std::string lane_summary(uint32_t lane) const;
  // The current state's grouping and filter matches (lane_grid()'s, computed once per state).
  const LaneGrouping& grouping() const;
  const std::vector<uint8_t>& filter_matches() const;
  uint32_t filter_count() const;
  // The whole state as JSON: position, breakpoints, selection, colouring, and every lane's
  // state (see state_json). Comparable across runs that reached the same state.
  std::string dump_json() const;
  // Bumped by every step and restore (state) and every grouping, filter, colouring or heatmap
  // change (settings): the window redraws the lane grid when either moves.
  uint64_t state_epoch() const { return epoch_; }
  uint64_t settings_epoch() const;
  // A copy of what the lane grid's views need, to build them off the UI thread.
  LaneGridJob grid_job(uint32_t columns) const;

 private:
  void on_state_change(bool jumped);

  std::unique_ptr<ExecutionSource> source_;
  Timeline timeline_;
  RunMode run_mode_ = RunMode::Paused;
  BreakpointList breakpoints_;
  BlockIndex blocks_;
  LaneColoring coloring_;
  BlockActivity activity_;
  LaneSelection selection_;
  LaneGridModel grid_;
  uint64_t epoch_ = 0;
};

}  // namespace ab::debugger
