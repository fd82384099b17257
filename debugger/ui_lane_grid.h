// The lane grid panel, drawn with Dear ImGui over the model: one texture of every lane's colour,
// zoomed and panned, with the band labels, each lane's number and value in big cells, the selected
// lane's ring and a minimap. Its views (bands, layout, colours) are built on a worker thread for
// big batches, so that stepping never waits for them; the grid shows the last finished build until
// the next one is ready.
#pragma once

#include <imgui.h>

#include <cstdint>
#include <future>
#include <string>
#include <vector>

#include "debugger/model.h"

namespace ab::debugger {

// The lane grid as an image: one pixel per lane, row-major, `columns` wide.
struct LaneGridImage {
  uint32_t columns = 0, rows = 0;
  std::vector<uint32_t> rgba;
  uint64_t version = 0;           // bumped whenever the pixels change
  ImTextureID texture = nullptr;  // set by the window after uploading
};

// 1234567 as "1,234,567".
std::string with_commas(uint64_t v);

class LaneGridPanel {
 public:
  static constexpr uint32_t kSyncLanes = 65536;  // smaller batches build their views in the frame

  explicit LaneGridPanel(DebuggerModel& model) : model_(model) {}
  ~LaneGridPanel();
  LaneGridImage& image() { return image_; }
  const LaneGridViews& views() const { return views_; }

  // Takes a build that has finished, and starts one for the current state, `columns` wide, when
  // the views are not of it (in the frame when `synchronous`).
  void request_views(uint32_t columns, bool synchronous);
  bool building() const { return pending_.valid(); }
  // Waits until the views are the current state's.
  void settle(uint32_t columns);
  // Draws the grid into the rest of the window and handles the mouse and keys over it (when
  // `hover_enabled`). Returns the band whose label was clicked, or -1.
  int draw(bool hover_enabled);

 private:
  // Where the grid is on the screen this frame.
  struct Frame {
    ImVec2 origin, avail, mid, view_end, top_left;
    float cols = 0, rows = 0;
    float fit = 0;   // the cell size that fits the whole grid
    float cell = 0;  // the cell size at this zoom
  };
  struct Rect {
    ImVec2 a, z;
    bool contains(ImVec2 p) const { return p.x >= a.x && p.x < z.x && p.y >= a.y && p.y < z.y; }
  };

  bool views_current(uint32_t columns) const;
  void adopt(LaneGridViews views);
  bool place(Frame& f);  // false when there is nothing to draw
  void draw_cell_text(const Frame& f, ImDrawList* draw) const;
  int draw_band_labels(const Frame& f, ImDrawList* draw, bool hover_enabled) const;
  void draw_selection(const Frame& f, ImDrawList* draw) const;
  Rect draw_minimap(const Frame& f, ImDrawList* draw) const;
  void zoom_by(const Frame& f, double factor, ImVec2 at);
  void handle_input(const Frame& f, bool minimap, const Rect& mini);

  DebuggerModel& model_;
  LaneGridImage image_;
  LaneGridViews views_;
  std::future<LaneGridViews> pending_;
  bool panning_ = false;
};

}  // namespace ab::debugger
