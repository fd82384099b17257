// The debugger's state as a plain model, with no window: the timeline position, breakpoints,
// the selected lane, the lane grid's colouring, and every derived view the panels draw (per-line
// and per-block lane counts, the lane inspector, the lane grid's colours and legend, the JSON
// state dump). The ImGui window and the scripted runner only call this; the tests drive it
// directly.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "autobatch/expected.h"
#include "debugger/breakpoints.h"
#include "debugger/execution_source.h"
#include "debugger/lane_filter.h"
#include "debugger/lane_views.h"
#include "debugger/timeline.h"

namespace ab::debugger {

enum class ColorMode : uint8_t { Block, Depth, Error, Variable };
const char* color_mode_name(ColorMode mode);

struct LegendEntry {
  std::string label;
  uint32_t rgba = 0;  // 0xAABBGGRR (byte order R, G, B, A in memory)
};

struct Frame {
  std::string function;
  std::string block;
  int line = 0;
  // This frame's function is not the one its caller called: tail calls (docs/language.md)
  // replaced the frames between them.
  bool after_tail_calls = false;
};

struct VariableView {
  std::string name;                // "fib.n"
  std::string storage;             // "register" or "stacked"
  std::string value;               // current register value
  std::vector<std::string> stack;  // stacked values, bottom first
};

struct LaneDetails {
  uint32_t lane = 0;
  std::string status;         // "waiting at fib.b2", "finished", "faulted"
  std::vector<Frame> frames;  // innermost first
  std::vector<VariableView> variables;
  std::string output;  // finished lanes
  std::string error;   // faulted lanes: "division by zero in divide, line 7, step 12"
};

// The local schedule's view of one group between dispatches: its lanes' PCs and the block the
// group runs next (its own min-PC rule).
struct GroupView {
  uint32_t group = 0;
  uint32_t first_lane = 0;  // lanes [first_lane, first_lane + pcs.size())
  std::vector<int32_t> pcs;
  int32_t next_block = -1;  // -1 when every lane of the group has finished or faulted
  uint32_t lanes_at_next = 0;
};

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

// Everything the lane grid draws for one state: the bands, their layout, the cells' colours
// (lanes the filter does not match faded), the filter's count and the depth histogram.
struct LaneGridViews {
  uint64_t state_epoch = UINT64_MAX, settings_epoch = UINT64_MAX;  // what it was built from
  uint32_t columns = 0;
  LaneGrouping grouping;
  GridLayout layout;
  std::vector<uint32_t> rgba;  // [cell]
  bool filtered = false;
  uint32_t match_count = 0;
  std::vector<uint32_t> histogram;
  double ms = 0;  // how long building it took
};

// A request for LaneGridViews holding its own copy of the lanes' state and the view settings, so
// that run() can go on a worker thread while the model steps on (DebuggerModel::grid_job).
class LaneGridJob {
 public:
  LaneGridViews run() const;

 private:
  friend class DebuggerModel;
  std::shared_ptr<const Module> module_;
  std::vector<int32_t> pcs_;
  std::vector<uint32_t> depths_;
  std::vector<uint8_t> faulted_;
  std::vector<uint32_t> registers_;  // [lane * words_ + word]: only the variables read
  std::vector<uint32_t> offsets_;    // [variable] its first word in registers_
  uint32_t words_ = 0;
  uint32_t columns_ = 1;
  ColorMode color_ = ColorMode::Block;
  int32_t watched_ = -1;
  GroupBy group_by_ = GroupBy::None;
  std::optional<VariableReader> group_var_;
  std::optional<LaneFilter> filter_;
  uint64_t state_epoch_ = 0, settings_epoch_ = 0;
};

// One RGBA colour per lane by `mode` (`watched_variable`: an index into the module's variables,
// for ColorMode::Variable).
void lane_colors(const LaneState& state, ColorMode mode, int32_t watched_variable,
                 std::vector<uint32_t>& rgba);

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
  int32_t exit_pc() const { return static_cast<int32_t>(module().blocks().size()); }
  Timeline& timeline() { return timeline_; }
  const Timeline& timeline() const { return timeline_; }
  uint64_t position() const { return timeline_.position(); }

  // ---- moving ----
  uint64_t step(uint64_t n);  // ignores breakpoints
  // Steps until a breakpoint hits, the run ends or `max_steps` ran.
  StopReason continue_run(uint64_t max_steps = UINT64_MAX);
  uint64_t back(uint64_t n);
  uint64_t seek(uint64_t step);

  // ---- running on its own (the window's Run, Run to breakpoint and Pause) ----
  void set_run_mode(RunMode mode) { run_mode_ = mode; }
  RunMode run_mode() const { return run_mode_; }
  bool running() const { return run_mode_ != RunMode::Paused; }
  // Runs up to `n` more steps in the run mode. When the run stops (a breakpoint hit in
  // ToBreakpoint mode, the run ended, or the source failed), the mode becomes Paused and the
  // result says why; nullopt while it goes on (and always when Paused).
  std::optional<std::string> run_slice(uint64_t n);

  // ---- breakpoints ----
  // Parses and adds "line 4", "block fib.b2", ...; fails with parse_breakpoint's message.
  // "filter" alone adds the current lane filter as a breakpoint.
  Status add_breakpoint(std::string_view text);
  void add_breakpoint(const Breakpoint& b) { breakpoints_.push_back(b); }
  void remove_breakpoint(size_t index);  // ignores an index out of range
  // Removes the line breakpoint on `line`, or adds one if there is none (the source view's click).
  void toggle_line_breakpoint(int line);
  std::vector<Breakpoint>& breakpoints() { return breakpoints_; }
  const std::vector<Breakpoint>& breakpoints() const { return breakpoints_; }
  // Indices of the breakpoints that hold in the current state (after the last step).
  std::vector<int> hits() const;

  // ---- selection and colouring ----
  Status select_lane(uint32_t lane);  // fails for a lane out of range
  std::optional<uint32_t> selected_lane() const { return selected_; }
  // For ColorMode::Variable, `variable` names a lowered var ("fib.n") or a source variable of
  // any function ("n"); fails, naming the watchable variables, for any other name.
  Status set_color_mode(ColorMode mode, const std::string& variable = "");
  ColorMode color_mode() const { return color_mode_; }
  const std::string& watched_variable_name() const { return watched_name_; }

  // ---- derived views ----
  // The block name of a PC ("finished" for exit_pc()).
  std::string block_name(int32_t pc) const;
  // Source lines with code of each lowered block, and the line a lane waiting there is shown at.
  const std::vector<std::vector<int>>& block_lines() const { return block_lines_; }
  int block_line(int32_t block) const;
  std::vector<uint32_t> waiting_per_block() const;  // [block] lanes waiting
  // [block] steps that ran it so far (RunStats::block_executions, followed step by step); empty
  // for sources that do not count them.
  const std::vector<uint64_t>& block_executions() const { return executions_; }
  std::vector<uint32_t> waiting_per_line() const;  // [line] lanes waiting (index 0 unused)
  uint32_t live_lanes() const;                     // lanes not finished or faulted
  uint32_t faulted_lanes() const;
  // One RGBA colour per lane for the lane grid, and the legend that explains them.
  void lane_colors(std::vector<uint32_t>& rgba) const;
  std::vector<LegendEntry> legend() const;
  // A one-line hover text: "lane 17: fib.b2 (line 3), depth 4, n = 7".
  std::string lane_summary(uint32_t lane) const;
  LaneDetails lane_details(uint32_t lane) const;
  // The watched variable's value in `lane` ("" unless colouring by a variable).
  std::string lane_value(uint32_t lane) const;
  // The lowered IR of a block (Module::block_ir_text) and its generated GLSL function
  // (ab::block_glsl; needs no device). "" for a block that does not exist.
  std::string block_ir(int32_t block) const;
  std::string block_glsl(int32_t block) const;
  // A block by name ("fib.b2") or index ("3"); -1 if there is none.
  int32_t find_block(const std::string& name_or_index) const;
  // The group of `lane` when the source schedules lanes in groups (local schedule), else none.
  std::optional<GroupView> group_view(uint32_t lane) const;
  // The whole state as JSON: position, breakpoints, selection, colouring, and every lane's
  // state (see state_json). Comparable across runs that reached the same state.
  std::string dump_json() const;

  // ---- the lane grid's views at any batch size (lane_views.h) ----
  // Grouping: lanes laid out in bands. For GroupBy::Variable, `variable` is read as the filter
  // reads names (VariableReader); fails for a name that is no variable.
  Status set_grouping(GroupBy by, const std::string& variable = "");
  GroupBy grouping_mode() const { return group_by_; }
  const std::string& group_variable() const { return group_name_; }
  const LaneGrouping& grouping() const;  // of the current state; computed once per state
  double grouping_ms() const { return grouping_ms_; }  // how long the last grouping took

  // The lane filter (lane_filter.h): "" or "off" clears it. Fails with the parser's message.
  Status set_filter(std::string_view text);
  bool has_filter() const { return filter_.has_value(); }
  const std::string& filter_text() const;
  // [lane] 1 for the lanes that match in the current state (empty without a filter).
  const std::vector<uint8_t>& filter_matches() const;
  uint32_t filter_count() const;
  double filter_ms() const { return filter_ms_; }  // how long the last evaluation took
  // Selects the next (or previous) matching lane after the selected one, wrapping around.
  std::optional<uint32_t> select_next_match(bool forward = true);
  // Selects a band's lanes: its predicate becomes the filter, and its first lane is selected.
  Status select_band(size_t band);
  // A heatmap cell: goes to `step` (the state before that step ran) and filters the lanes
  // waiting at `block` then.
  Status select_heatmap_cell(uint64_t step, int32_t block);

  // [depth] live lanes at each call depth.
  std::vector<uint32_t> depth_histogram() const;
  // Block x step counts of every step run so far (each step recorded the first time it ran).
  const BlockHeatmap& heatmap() const { return heatmap_; }
  // The selected lane's PC and depth at steps strip_first(), strip_first() + 1, ...: recorded
  // from when it was selected, as the run moves forward.
  struct LaneAt {
    int32_t pc = 0;
    uint32_t depth = 0;
  };
  uint64_t strip_first() const { return strip_first_; }
  const std::vector<LaneAt>& lane_strip() const { return strip_; }
  // The heatmap shows the lanes that waited at each block (default) or those that ran it.
  void set_heatmap_shows_ran(bool ran) { heatmap_ran_ = ran, ++settings_; }
  bool heatmap_shows_ran() const { return heatmap_ran_; }
  GridView& grid_view() { return grid_view_; }
  const GridView& grid_view() const { return grid_view_; }
  // Bumped by every step and restore (state) and every grouping, filter or colouring change
  // (settings): the window redraws the lane grid when either moves.
  uint64_t state_epoch() const { return epoch_; }
  uint64_t settings_epoch() const { return settings_; }
  // A copy of what the lane grid's views need, to build them off the UI thread.
  LaneGridJob grid_job(uint32_t columns) const;

 private:
  bool breakpoint_holds(const Breakpoint& b, bool all_lanes = true) const;
  void watch_range(double& lo, double& hi) const;
  void on_state_change(bool jumped);

  std::unique_ptr<ExecutionSource> source_;
  Timeline timeline_;
  std::vector<Breakpoint> breakpoints_;
  RunMode run_mode_ = RunMode::Paused;
  std::optional<uint32_t> selected_;
  ColorMode color_mode_ = ColorMode::Block;
  int32_t watched_ = -1;  // index into module().variables()
  std::string watched_name_;
  std::vector<std::vector<int>> block_lines_;

  uint64_t epoch_ = 0, settings_ = 0;
  // Followed step by step: each lane's PC after the last step and the lanes waiting per block.
  std::vector<int32_t> prev_pcs_;
  std::vector<uint32_t> waiting_, ran_;
  std::vector<uint64_t> executions_;
  BlockHeatmap heatmap_;
  uint64_t strip_first_ = 0;
  std::vector<LaneAt> strip_;
  GroupBy group_by_ = GroupBy::None;
  std::optional<VariableReader> group_var_;
  std::string group_name_;
  std::optional<LaneFilter> filter_;
  GridView grid_view_;
  bool heatmap_ran_ = false;
  // Caches of the current state's views (epoch_ and settings_ when computed).
  mutable LaneGrouping grouping_;
  mutable std::pair<uint64_t, uint64_t> grouping_at_{UINT64_MAX, 0};
  mutable double grouping_ms_ = 0;
  mutable std::vector<uint8_t> matches_;
  mutable uint32_t match_count_ = 0;
  mutable std::pair<uint64_t, uint64_t> matches_at_{UINT64_MAX, 0};
  mutable double filter_ms_ = 0;
};

// Every lane's state as JSON, with stacks cut to their live entries so that equal states give
// equal text whatever the stacks' capacity: {"step", "lanes": [{"pc", "block", "depth",
// "pc_stack", "registers", "stacks", "lane_steps", "faulted"}...]}.
std::string state_json(const Module& program, const BatchSnapshot& snapshot);

// Colour helpers shared with the UI.
uint32_t categorical_color(uint32_t index);
uint32_t ramp_color(double t);  // t in [0, 1]

}  // namespace ab::debugger
