// The debugger's panels, drawn with Dear ImGui over the model: controls and timeline, source
// view, block view, lane grid (one texture), utilization plot, lane inspector and breakpoints.
// Knows nothing about Vulkan: the lane grid's pixels are handed to the window through
// `LaneGridImage`, which the window uploads and names with an ImTextureID.
#pragma once

#include <imgui.h>

#include <cstdint>
#include <string>
#include <vector>

#include "debugger/model.h"
#include "debugger/ui_lane_grid.h"

namespace ab::debugger {

class Panels {
 public:
  explicit Panels(DebuggerModel& model, std::string title);
  // Waits for the lane grid's views of the current state (screenshots, frame timing).
  void settle();
  double views_ms() const { return lane_grid_.views().ms; }  // how long the last build of them took
  // Draws every panel into a window of the given size. Call once per frame between
  // ImGui::NewFrame and ImGui::Render.
  void draw(float width, float height);
  // Advances a running model (Run / Run to breakpoint pressed) by one frame's worth of steps.
  void tick();
  LaneGridImage& grid() { return lane_grid_.image(); }
  bool running() const { return model_.running(); }
  float last_frame_ms = 0;    // shown in the status line
  double refresh_ms = 0;      // the last rebuild of the derived views (grid, counts, histogram)
  bool hover_enabled = true;  // off in scripted runs: no tooltips from wherever the mouse is

 private:
  void refresh();
  void draw_controls(float w);
  void draw_source();
  void draw_blocks();
  void draw_lane_grid();
  void draw_lane_grid_header();
  void draw_plot();
  void draw_heatmap(float x0, float y0, float width, float height, uint64_t begin, uint64_t end);
  void draw_inspector();
  void draw_strip();
  void draw_histogram();
  void draw_breakpoints();
  void draw_group(const GroupView& g);

  DebuggerModel& model_;
  std::string title_;
  int step_n_ = 10;
  std::string status_;
  char breakpoint_text_[128] = "";
  int shown_block_ = -1;  // block whose lowered IR (or GLSL) is shown
  bool show_glsl_ = false;
  std::string lowered_text_;
  float grid_aspect_ = 2.0f;
  // Cached per state: recomputed when the model's state or view settings change.
  uint64_t cached_state_ = UINT64_MAX, cached_settings_ = UINT64_MAX;
  uint32_t cached_columns_ = 0;
  // The lane grid, and its views (bands, layout, colours, filter count, histogram).
  LaneGridPanel lane_grid_;
  std::vector<int> hits_;
  size_t hits_counted_ = SIZE_MAX;  // breakpoints when hits_ was computed
  char filter_text_[256] = "";
  char group_var_[64] = "";
  std::vector<double> heat_waiting_, heat_ran_;  // scratch
  std::vector<uint32_t> per_block_, per_line_;
  std::vector<LegendEntry> legend_;
  std::vector<uint64_t> executions_;
  uint32_t live_ = 0, faulted_ = 0;
  std::vector<std::string> source_lines_;
  LaneDetails details_;
  uint64_t details_position_ = UINT64_MAX;
  bool details_stale_ = true;
  // Utilization plot view: [view_begin_, view_end_) steps; view_end_ == 0 means "everything".
  uint64_t view_begin_ = 0, view_end_ = 0;
};

}  // namespace ab::debugger
