#include "debugger/ui_lane_grid.h"

#include <fmt/format.h>
#include <algorithm>
#include <chrono>
#include <cmath>

namespace ab::debugger {

std::string with_commas(uint64_t v) {
  std::string s = std::to_string(v);
  for (int i = static_cast<int>(s.size()) - 3; i > 0; i -= 3)
    s.insert(i, ",");
  return s;
}

namespace {

// Dark text on light cells, light text on dark ones.
ImU32 text_on(uint32_t c) {
  const float luma = 0.299f * (c & 0xff) + 0.587f * ((c >> 8) & 0xff) + 0.114f * ((c >> 16) & 0xff);
  return luma > 110 ? IM_COL32(10, 10, 10, 255) : IM_COL32(235, 235, 235, 255);
}

}  // namespace

LaneGridPanel::~LaneGridPanel() {
  if (pending_.valid()) pending_.wait();
}

bool LaneGridPanel::views_current(uint32_t columns) const {
  return views_.state_epoch == model_.state_epoch() &&
         views_.settings_epoch == model_.settings_epoch() && views_.columns == columns;
}

void LaneGridPanel::adopt(LaneGridViews views) {
  views_ = std::move(views);
  image_.columns = views_.layout.columns;
  image_.rows = views_.layout.rows;
  image_.rgba = std::move(views_.rgba);
  ++image_.version;
}

void LaneGridPanel::request_views(uint32_t columns, bool synchronous) {
  if (pending_.valid()) {
    // One build at a time: a finished one is taken, and the next starts from the latest state.
    if (pending_.wait_for(std::chrono::seconds(0)) != std::future_status::ready) return;
    adopt(pending_.get());
  }
  if (views_current(columns)) return;
  LaneGridJob job = model_.grid_job(columns);
  if (synchronous) {
    adopt(job.run());
    return;
  }
  pending_ = std::async(std::launch::async, [job = std::move(job)] { return job.run(); });
}

void LaneGridPanel::settle(uint32_t columns) {
  if (pending_.valid()) adopt(pending_.get());
  if (!views_current(columns)) adopt(model_.grid_job(columns).run());
}

bool LaneGridPanel::place(Frame& f) {
  f.avail = ImGui::GetContentRegionAvail();
  if (!image_.columns || f.avail.x < 8 || f.avail.y < 8) return false;
  f.origin = ImGui::GetCursorScreenPos();
  f.cols = static_cast<float>(image_.columns);
  f.rows = static_cast<float>(image_.rows);
  f.fit = std::max(0.01f, std::min(f.avail.x / f.cols, f.avail.y / f.rows));
  GridView& v = model_.lane_grid().view();
  if (v.cell_pixels > 0) {
    v.zoom = std::max(1.0, v.cell_pixels / f.fit);
    v.cell_pixels = 0;
  }
  if (v.center_lane >= 0 && static_cast<uint64_t>(v.center_lane) < views_.layout.lane_cell.size()) {
    const uint32_t cell = views_.layout.lane_cell[v.center_lane];
    v.center_x = cell % image_.columns + 0.5;
    v.center_y = cell / image_.columns + 0.5;
    v.center_lane = -1;
  }
  v.zoom = std::clamp(v.zoom, 1.0, 100000.0);
  f.cell = f.fit * static_cast<float>(v.zoom);
  // The centre cell, kept where the grid still covers the view.
  const double half_w = f.avail.x / 2.0 / f.cell, half_h = f.avail.y / 2.0 / f.cell;
  if (v.center_x < 0 || v.zoom <= 1) v.center_x = f.cols / 2.0;
  if (v.center_y < 0 || v.zoom <= 1) v.center_y = f.rows / 2.0;
  v.center_x =
      f.cols <= 2 * half_w ? f.cols / 2.0 : std::clamp(v.center_x, half_w, f.cols - half_w);
  v.center_y =
      f.rows <= 2 * half_h ? f.rows / 2.0 : std::clamp(v.center_y, half_h, f.rows - half_h);
  // Screen position of the grid's top-left corner; at zoom 1 the grid sits at the top left.
  f.mid = ImVec2(f.origin.x + f.avail.x / 2, f.origin.y + f.avail.y / 2);
  f.top_left = ImVec2(static_cast<float>(f.mid.x - v.center_x * f.cell),
                      static_cast<float>(f.mid.y - v.center_y * f.cell));
  if (v.zoom <= 1) f.top_left = f.origin;
  f.view_end = ImVec2(f.origin.x + f.avail.x, f.origin.y + f.avail.y);
  return true;
}

void LaneGridPanel::draw_cell_text(const Frame& f, ImDrawList* draw) const {
  const float cell = f.cell;
  const uint32_t columns = image_.columns;
  // The visible cells.
  const auto first_col = static_cast<uint32_t>(std::max(0.0f, (f.origin.x - f.top_left.x) / cell));
  const auto first_row = static_cast<uint32_t>(std::max(0.0f, (f.origin.y - f.top_left.y) / cell));
  const uint32_t last_col =
      std::min(columns, static_cast<uint32_t>((f.view_end.x - f.top_left.x) / cell) + 1);
  const uint32_t last_row =
      std::min(image_.rows, static_cast<uint32_t>((f.view_end.y - f.top_left.y) / cell) + 1);
  const ExecutionSource& s = model_.source();
  const bool two_lines = cell >= 34;
  for (uint32_t r = first_row; r < last_row; ++r)
    for (uint32_t c = first_col; c < last_col; ++c) {
      const uint32_t lane = views_.layout.cell_lane[size_t{r} * columns + c];
      if (lane == GridLayout::kEmpty) continue;
      const ImVec2 a(f.top_left.x + c * cell, f.top_left.y + r * cell);
      draw->AddRect(a, ImVec2(a.x + cell, a.y + cell), IM_COL32(20, 20, 24, 255));
      const ImU32 ink = text_on(image_.rgba[size_t{r} * columns + c]);
      draw->AddText(ImVec2(a.x + 3, a.y + 2), ink, std::to_string(lane).c_str());
      if (!two_lines) continue;
      // The lane's value by the colouring: block, depth or the variable.
      std::string value;
      const int32_t pc = s.lane_pcs()[lane];
      if (s.lane_faulted()[lane])
        value = "fault";
      else if (pc == model_.exit_pc())
        value = "done";
      else if (model_.coloring().mode() == ColorMode::Variable)
        value = model_.coloring().value(lane_state(s), lane, 2);
      else if (model_.coloring().mode() == ColorMode::Depth)
        value = fmt::format("d{}", s.lane_depths()[lane]);
      else
        value = model_.blocks().name(pc);
      // Only as many characters as the cell holds.
      const size_t fits = static_cast<size_t>(std::max(1.0f, (cell - 6) / 7));
      if (value.size() > fits) value = value.substr(value.size() - fits);
      draw->AddText(ImVec2(a.x + 3, a.y + 2 + ImGui::GetTextLineHeight()), ink, value.c_str());
    }
}

int LaneGridPanel::draw_band_labels(const Frame& f, ImDrawList* draw, bool hover_enabled) const {
  // At each band's first row, over the grid.
  const LaneGrouping& g = views_.grouping;
  int clicked_band = -1;
  if (g.by == GroupBy::None) return clicked_band;
  for (size_t b = 0; b < g.bands.size() && b < views_.layout.band_row.size(); ++b) {
    const float y = f.top_left.y + views_.layout.band_row[b] * f.cell;
    const float band_h = views_.layout.band_rows[b] * f.cell;
    if (y + band_h < f.origin.y || y > f.view_end.y) continue;
    const std::string label =
        fmt::format("{} ({})", g.bands[b].label, with_commas(g.bands[b].count));
    const ImVec2 size = ImGui::CalcTextSize(label.c_str());
    const float ly = std::clamp(y + 1, f.origin.y, std::max(f.origin.y, y + band_h - size.y));
    const ImVec2 a(f.origin.x + 2, ly);
    const ImVec2 z(a.x + size.x + 8, a.y + size.y + 2);
    // A line above each band, so neighbouring bands read apart.
    draw->AddLine(ImVec2(f.origin.x, y),
                  ImVec2(std::min(f.view_end.x, f.top_left.x + f.cols * f.cell), y),
                  IM_COL32(235, 235, 235, 200), 1.0f);
    draw->AddRectFilled(a, z, IM_COL32(10, 10, 14, 210), 3.0f);
    draw->AddText(ImVec2(a.x + 4, a.y + 1), IM_COL32(240, 240, 240, 255), label.c_str());
    if (hover_enabled && ImGui::IsMouseHoveringRect(a, z) && ImGui::IsMouseClicked(0))
      clicked_band = static_cast<int>(b);
  }
  return clicked_band;
}

void LaneGridPanel::draw_selection(const Frame& f, ImDrawList* draw) const {
  const std::optional<uint32_t> sel = model_.selected_lane();
  if (!sel || *sel >= views_.layout.lane_cell.size()) return;
  const uint32_t at = views_.layout.lane_cell[*sel];
  const ImVec2 a(f.top_left.x + (at % image_.columns) * f.cell,
                 f.top_left.y + (at / image_.columns) * f.cell);
  // Small cells get a larger ring so the selection stays visible at a million lanes.
  const float pad = f.cell < 6 ? 4.0f : 1.0f;
  draw->AddRect(ImVec2(a.x - pad, a.y - pad), ImVec2(a.x + f.cell + pad, a.y + f.cell + pad),
                IM_COL32(255, 255, 255, 255), 0, 0, 3.0f);
}

LaneGridPanel::Rect LaneGridPanel::draw_minimap(const Frame& f, ImDrawList* draw) const {
  // The whole grid, and the part in view.
  const GridView& v = model_.lane_grid().view();
  const float mw = std::min(160.0f, f.avail.x * 0.3f);
  const float mh = std::min(mw * f.rows / f.cols, f.avail.y * 0.4f);
  const float mwid = mh * f.cols / f.rows;
  const Rect mini{ImVec2(f.view_end.x - mwid - 6, f.origin.y + 6),
                  ImVec2(f.view_end.x - 6, f.origin.y + 6 + mh)};
  draw->AddRectFilled(ImVec2(mini.a.x - 2, mini.a.y - 2), ImVec2(mini.z.x + 2, mini.z.y + 2),
                      IM_COL32(0, 0, 0, 230));
  if (image_.texture) draw->AddImage(image_.texture, mini.a, mini.z);
  const float sx = mwid / f.cols, sy = mh / f.rows;
  const ImVec2 va(mini.a.x + static_cast<float>(v.center_x - f.avail.x / 2 / f.cell) * sx,
                  mini.a.y + static_cast<float>(v.center_y - f.avail.y / 2 / f.cell) * sy);
  const ImVec2 vz(va.x + f.avail.x / f.cell * sx, va.y + f.avail.y / f.cell * sy);
  draw->AddRect(ImVec2(std::max(va.x, mini.a.x), std::max(va.y, mini.a.y)),
                ImVec2(std::min(vz.x, mini.z.x), std::min(vz.y, mini.z.y)),
                IM_COL32(255, 255, 255, 255), 0, 0, 2.0f);
  draw->AddText(ImVec2(f.origin.x + 4, f.view_end.y - ImGui::GetTextLineHeight() - 2),
                IM_COL32(230, 230, 230, 255), fmt::format("zoom {:.1f}x", v.zoom).c_str());
  return mini;
}

int LaneGridPanel::draw(bool hover_enabled) {
  Frame f;
  if (!place(f)) return -1;
  const bool minimap = model_.lane_grid().view().zoom > 1;
  ImDrawList* draw = ImGui::GetWindowDrawList();
  draw->PushClipRect(f.origin, f.view_end, true);
  if (image_.texture)
    draw->AddImage(image_.texture, f.top_left,
                   ImVec2(f.top_left.x + f.cols * f.cell, f.top_left.y + f.rows * f.cell));
  // Big cells: each lane's number and value.
  if (f.cell >= 26) draw_cell_text(f, draw);
  const int clicked_band = draw_band_labels(f, draw, hover_enabled);
  draw_selection(f, draw);
  const Rect mini = minimap ? draw_minimap(f, draw) : Rect{};
  draw->PopClipRect();
  ImGui::InvisibleButton("lane_grid", f.avail);
  if (clicked_band >= 0) return clicked_band;
  if (!hover_enabled || !ImGui::IsItemHovered()) {
    panning_ = false;
    return -1;
  }
  handle_input(f, minimap, mini);
  return -1;
}

void LaneGridPanel::zoom_by(const Frame& f, double factor, ImVec2 at) {
  // Zooms around `at`: the cell under it stays under it.
  GridView& v = model_.lane_grid().view();
  const double cx = v.center_x + (at.x - f.mid.x) / f.cell,
               cy = v.center_y + (at.y - f.mid.y) / f.cell;
  if (v.zoom <= 1) {
    v.center_x = (at.x - f.top_left.x) / f.cell;
    v.center_y = (at.y - f.top_left.y) / f.cell;
  }
  const double before_x = v.zoom <= 1 ? v.center_x : cx, before_y = v.zoom <= 1 ? v.center_y : cy;
  v.zoom = std::clamp(v.zoom * factor, 1.0, 100000.0);
  const double new_cell = f.fit * v.zoom;
  v.center_x = before_x - (at.x - f.mid.x) / new_cell;
  v.center_y = before_y - (at.y - f.mid.y) / new_cell;
}

void LaneGridPanel::handle_input(const Frame& f, bool minimap, const Rect& mini) {
  GridView& v = model_.lane_grid().view();
  const ImVec2 m = ImGui::GetMousePos();
  ImGuiIO& io = ImGui::GetIO();
  // The minimap: a click centres the view there.
  if (minimap && mini.contains(m)) {
    if (ImGui::IsMouseDown(0)) {
      v.center_x = (m.x - mini.a.x) / (mini.z.x - mini.a.x) * f.cols;
      v.center_y = (m.y - mini.a.y) / (mini.z.y - mini.a.y) * f.rows;
    }
    return;
  }
  // Wheel: zoom around the cursor; drag: pan; keys: + - zoom, arrows pan, 0 fits.
  if (io.MouseWheel != 0) zoom_by(f, std::pow(1.25, io.MouseWheel), m);
  if (!io.WantTextInput) {
    // Dear ImGui 1.86 names no '+', '-' or '0' key: read the typed characters.
    for (ImWchar ch : io.InputQueueCharacters) {
      if (ch == '+' || ch == '=') zoom_by(f, 1.5, f.mid);
      if (ch == '-') zoom_by(f, 1 / 1.5, f.mid);
      if (ch == '0') v = GridView{};
    }
    if (ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_Home))) v = GridView{};
    const double step = f.avail.x / 8 / f.cell;
    if (ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_LeftArrow))) v.center_x -= step;
    if (ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_RightArrow))) v.center_x += step;
    if (ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_UpArrow))) v.center_y -= step;
    if (ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_DownArrow))) v.center_y += step;
  }
  if (ImGui::IsMouseDragging(0, 4.0f) && v.zoom > 1) {
    panning_ = true;
    v.center_x -= io.MouseDelta.x / f.cell;
    v.center_y -= io.MouseDelta.y / f.cell;
  }
  const uint32_t col = static_cast<uint32_t>(std::max(0.0f, (m.x - f.top_left.x) / f.cell));
  const uint32_t row = static_cast<uint32_t>(std::max(0.0f, (m.y - f.top_left.y) / f.cell));
  const uint64_t at = uint64_t{row} * image_.columns + col;
  if (col < image_.columns && row < image_.rows &&
      views_.layout.cell_lane[at] != GridLayout::kEmpty) {
    const uint32_t lane = views_.layout.cell_lane[at];
    ImGui::SetTooltip("%s", model_.lane_summary(lane).c_str());
    if (ImGui::IsMouseReleased(0) && !panning_) model_.select_lane(lane);
  }
  if (ImGui::IsMouseReleased(0)) panning_ = false;
}

}  // namespace ab::debugger
