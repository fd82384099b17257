#include "debugger/ui_panels.h"

#include <fmt/format.h>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <sstream>

namespace ab::debugger {
namespace {

constexpr ImGuiWindowFlags kPanelFlags = ImGuiWindowFlags_NoMove | ImGuiWindowFlags_NoResize |
                                         ImGuiWindowFlags_NoCollapse |
                                         ImGuiWindowFlags_NoSavedSettings;
const ImU32 kHighlight = IM_COL32(60, 90, 150, 255);
const ImU32 kCurrentStep = IM_COL32(255, 80, 80, 255);

void place(const char* name, float x, float y, float w, float h) {
  ImGui::SetNextWindowPos(ImVec2(x, y));
  ImGui::SetNextWindowSize(ImVec2(w, h));
  ImGui::Begin(name, nullptr, kPanelFlags);
}

ImU32 to_imgui(uint32_t rgba) {
  return rgba;
}  // both are R, G, B, A in memory order

}  // namespace

Panels::Panels(DebuggerModel& model, std::string title)
    : model_(model), title_(std::move(title)), lane_grid_(model) {
  std::istringstream in(model.source().program().source_text);
  for (std::string line; std::getline(in, line);)
    source_lines_.push_back(line);
}

void Panels::refresh() {
  const uint32_t lanes = model_.source().lanes();
  const uint32_t columns = grid_columns(lanes, grid_aspect_);
  // A small change of the panel's shape keeps the grid (no re-layout while resizing slightly).
  const bool shape_changed = !cached_columns_ || std::abs(static_cast<double>(columns) -
                                                          cached_columns_) > 0.03 * cached_columns_;
  // A build on the worker that has finished is taken here, every frame, and a newer one started
  // when the state moved on meanwhile.
  if (lane_grid_.building()) lane_grid_.request_views(cached_columns_, false);
  if (cached_state_ == model_.state_epoch() && cached_settings_ == model_.settings_epoch() &&
      !shape_changed)
    return;
  const auto start = std::chrono::steady_clock::now();
  if (cached_settings_ != model_.settings_epoch() && !ImGui::IsAnyItemActive())
    std::snprintf(filter_text_, sizeof filter_text_, "%s",
                  model_.lane_grid().filter_text().c_str());
  cached_state_ = model_.state_epoch();
  cached_settings_ = model_.settings_epoch();
  if (shape_changed) cached_columns_ = columns;
  per_block_ = model_.activity().waiting();
  per_line_ = model_.blocks().per_line(model_.activity().waiting());
  legend_ = model_.legend();
  executions_ = model_.activity().executions();
  live_ = model_.live_lanes();
  faulted_ = model_.faulted_lanes();
  hits_ = model_.breakpoints().hits(model_.source());
  hits_counted_ = model_.breakpoints().size();
  lane_grid_.request_views(cached_columns_, lanes < LaneGridPanel::kSyncLanes);
  refresh_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

void Panels::settle() {
  refresh();
  lane_grid_.settle(cached_columns_);
}

void Panels::tick() {
  // Step for about 12 ms per frame so the window stays responsive.
  const auto start = std::chrono::steady_clock::now();
  while (model_.running() &&
         std::chrono::steady_clock::now() - start < std::chrono::milliseconds(12)) {
    const uint64_t before = model_.position();
    if (std::optional<std::string> stopped = model_.run_slice(64)) {
      status_ = *stopped;
      return;
    }
    if (model_.position() == before) return;  // no progress (a source error): try next frame
  }
}

void Panels::draw(float w, float h) {
  const float top = 84, gap = 4;
  const float left_w = std::floor(w * 0.30f), right_w = std::floor(w * 0.24f);
  const float mid_w = w - left_w - right_w;
  const float body_h = h - top;
  grid_aspect_ = (mid_w - 16) / std::max(40.0f, body_h * 0.58f - 110);
  refresh();

  place("Controls", 0, 0, w, top - gap);
  draw_controls(w);
  ImGui::End();

  place("Source", 0, top, left_w, std::floor(body_h * 0.58f));
  draw_source();
  ImGui::End();
  place("Blocks", 0, top + std::floor(body_h * 0.58f), left_w, body_h - std::floor(body_h * 0.58f));
  draw_blocks();
  ImGui::End();

  place("Lanes", left_w, top, mid_w, std::floor(body_h * 0.62f));
  draw_lane_grid();
  ImGui::End();
  place("Utilization", left_w, top + std::floor(body_h * 0.62f), mid_w,
        body_h - std::floor(body_h * 0.62f));
  draw_plot();
  ImGui::End();

  const float inspector_h = std::floor(body_h * 0.56f), histogram_h = std::floor(body_h * 0.17f);
  place("Lane inspector", left_w + mid_w, top, right_w, inspector_h);
  draw_inspector();
  ImGui::End();
  place("Stack depth (live lanes)", left_w + mid_w, top + inspector_h, right_w, histogram_h);
  draw_histogram();
  ImGui::End();
  place("Breakpoints", left_w + mid_w, top + inspector_h + histogram_h, right_w,
        body_h - inspector_h - histogram_h);
  draw_breakpoints();
  ImGui::End();
}

void Panels::draw_controls(float w) {
  ExecutionSource& s = model_.source();
  const bool busy = running();
  ImGui::BeginDisabled(busy);
  if (ImGui::Button("Step 1")) model_.step(1);
  ImGui::SameLine();
  if (ImGui::Button("Step N")) model_.step(static_cast<uint64_t>(std::max(1, step_n_)));
  ImGui::SameLine();
  ImGui::SetNextItemWidth(90);
  ImGui::InputInt("##n", &step_n_);
  ImGui::SameLine();
  if (ImGui::Button("Back 1")) model_.back(1);
  ImGui::SameLine();
  if (ImGui::Button("Back N")) model_.back(static_cast<uint64_t>(std::max(1, step_n_)));
  ImGui::EndDisabled();
  ImGui::SameLine();
  if (!busy) {
    if (ImGui::Button("Run")) model_.set_run_mode(RunMode::Run);
    ImGui::SameLine();
    if (ImGui::Button("Run to breakpoint")) {
      model_.set_run_mode(RunMode::ToBreakpoint);
      status_.clear();
    }
  } else if (ImGui::Button("Pause")) {
    model_.set_run_mode(RunMode::Paused);
  }
  ImGui::SameLine();
  const uint64_t end = std::max<uint64_t>(1, model_.timeline().known_end());
  int64_t pos = static_cast<int64_t>(model_.position());
  ImGui::SetNextItemWidth(std::max(120.0f, w - ImGui::GetCursorPosX() - 16));
  const int64_t lo = 0, hi = static_cast<int64_t>(end);
  if (ImGui::SliderScalar("##timeline", ImGuiDataType_S64, &pos, &lo, &hi, "step %lld") && !busy)
    model_.seek(static_cast<uint64_t>(pos));
  const int32_t next = s.next_block();
  // With groups (local schedule) each group picks its own block: the lane inspector shows the
  // selected lane's group, so the status line does not pretend there is one next block.
  const std::string next_text =
      s.group_width() > 0
          ? std::string("per group (lane inspector)")
          : fmt::format("{} (line {})", model_.blocks().name(next), model_.blocks().line(next));
  ImGui::Text("%s   |   step %s of %s%s   |   next: %s   |   live %s / %s   |   faulted %s",
              title_.c_str(), with_commas(model_.position()).c_str(), with_commas(end).c_str(),
              s.knows_future() ? " (trace)"
              : s.done()       ? " (finished)"
                               : "+",
              next_text.c_str(), with_commas(live_).c_str(), with_commas(s.lanes()).c_str(),
              with_commas(faulted_).c_str());
  if (!status_.empty() || !s.error().empty()) {
    ImGui::SameLine();
    ImGui::TextColored(ImVec4(1, 0.8f, 0.3f, 1), "  %s",
                       s.error().empty() ? status_.c_str() : s.error().c_str());
  }
  if (last_frame_ms > 0) {
    ImGui::SameLine();
    ImGui::TextDisabled("  frame %.1f ms", last_frame_ms);
  }
}

void Panels::draw_source() {
  const int32_t next = model_.source().next_block();
  const std::vector<int>* highlighted = next >= 0 ? &model_.blocks().lines(next) : nullptr;
  ImGui::TextDisabled("lanes  line");
  ImGui::BeginChild("source_text");
  ImDrawList* draw = ImGui::GetWindowDrawList();
  for (size_t i = 0; i < source_lines_.size(); ++i) {
    const int line = static_cast<int>(i + 1);
    const bool hot =
        highlighted && std::binary_search(highlighted->begin(), highlighted->end(), line);
    bool has_break = false;
    for (const Breakpoint& b : model_.breakpoints())
      has_break |= b.kind == Breakpoint::Kind::Line && b.line == line;
    const ImVec2 p = ImGui::GetCursorScreenPos();
    if (hot)
      draw->AddRectFilled(
          p, ImVec2(p.x + ImGui::GetContentRegionAvail().x, p.y + ImGui::GetTextLineHeight()),
          kHighlight);
    const uint32_t waiting = static_cast<size_t>(line) < per_line_.size() ? per_line_[line] : 0;
    ImGui::PushID(line);
    const std::string count = waiting ? with_commas(waiting) : "";
    ImGui::Text("%6s", count.c_str());
    ImGui::SameLine();
    // Clicking the line number toggles a line breakpoint.
    if (ImGui::Selectable(fmt::format("{}{:>3}", has_break ? "*" : " ", line).c_str(), false, 0,
                          ImVec2(34, 0)))
      model_.breakpoints().toggle_line(line);
    ImGui::SameLine();
    if (has_break)
      ImGui::TextColored(ImVec4(1, 0.45f, 0.45f, 1), "%s", source_lines_[i].c_str());
    else
      ImGui::TextUnformatted(source_lines_[i].c_str());
    ImGui::PopID();
  }
  ImGui::EndChild();
}

void Panels::draw_blocks() {
  const std::vector<BlockInfo>& blocks = model_.module().blocks();
  const int32_t next = model_.source().next_block();
  const float ir_h = shown_block_ >= 0 ? ImGui::GetContentRegionAvail().y * 0.45f : 0;
  if (ImGui::BeginTable(
          "blocks", 4,
          ImGuiTableFlags_RowBg | ImGuiTableFlags_ScrollY | ImGuiTableFlags_BordersInnerV,
          ImVec2(0, ImGui::GetContentRegionAvail().y - ir_h))) {
    ImGui::TableSetupScrollFreeze(0, 1);
    ImGui::TableSetupColumn("block (> = next)");
    ImGui::TableSetupColumn("line", ImGuiTableColumnFlags_WidthFixed, 40);
    ImGui::TableSetupColumn("waiting", ImGuiTableColumnFlags_WidthFixed, 70);
    ImGui::TableSetupColumn("runs", ImGuiTableColumnFlags_WidthFixed, 70);
    ImGui::TableHeadersRow();
    for (size_t b = 0; b < blocks.size(); ++b) {
      ImGui::TableNextRow();
      if (static_cast<int32_t>(b) == next)
        ImGui::TableSetBgColor(ImGuiTableBgTarget_RowBg0, kHighlight);
      ImGui::TableNextColumn();
      const std::string label =
          fmt::format("{} {}", static_cast<int32_t>(b) == next ? ">" : " ", blocks[b].name);
      if (ImGui::Selectable(label.c_str(), shown_block_ == static_cast<int>(b),
                            ImGuiSelectableFlags_SpanAllColumns)) {
        shown_block_ = shown_block_ == static_cast<int>(b) ? -1 : static_cast<int>(b);
        lowered_text_.clear();
      }
      ImGui::TableNextColumn();
      ImGui::Text("%d", model_.blocks().line(static_cast<int32_t>(b)));
      ImGui::TableNextColumn();
      if (per_block_[b]) ImGui::Text("%s", with_commas(per_block_[b]).c_str());
      ImGui::TableNextColumn();
      if (b < executions_.size() && executions_[b])
        ImGui::Text("%s", with_commas(executions_[b]).c_str());
    }
    ImGui::EndTable();
  }
  if (shown_block_ >= 0) {
    if (ImGui::RadioButton("lowered IR", !show_glsl_)) show_glsl_ = false, lowered_text_.clear();
    ImGui::SameLine();
    if (ImGui::RadioButton("generated GLSL", show_glsl_)) show_glsl_ = true, lowered_text_.clear();
    if (lowered_text_.empty())
      lowered_text_ =
          show_glsl_ ? model_.blocks().glsl(shown_block_) : model_.blocks().ir(shown_block_);
    ImGui::BeginChild("lowered_ir", ImVec2(0, 0), true, ImGuiWindowFlags_HorizontalScrollbar);
    ImGui::TextUnformatted(lowered_text_.c_str());
    ImGui::EndChild();
  }
}

void Panels::draw_lane_grid_header() {
  int mode = static_cast<int>(model_.coloring().mode());
  ImGui::TextUnformatted("colour");
  ImGui::SameLine();
  ImGui::SetNextItemWidth(90);
  const char* modes[] = {"block", "depth", "error", "variable"};
  if (ImGui::Combo("##colour", &mode, modes, 4)) {
    if (mode == static_cast<int>(ColorMode::Variable)) {
      // Watch the first variable of the entry function's inputs by default.
      const Module& p = model_.module();
      const Status set =
          p.inputs().empty()
              ? Status(Error{"no variable"})
              : model_.coloring().set(ColorMode::Variable, p.entry() + "." + p.inputs()[0].name);
      if (!set) status_ = set.error();
    } else {
      model_.coloring().set(static_cast<ColorMode>(mode));
    }
  }
  ImGui::SameLine();
  int group = static_cast<int>(model_.lane_grid().grouping_mode());
  ImGui::TextUnformatted("  group");
  ImGui::SameLine();
  ImGui::SetNextItemWidth(90);
  const char* groups[] = {"none", "block", "depth", "fault", "variable"};
  if (ImGui::Combo("##group", &group, groups, 5)) {
    if (group == static_cast<int>(GroupBy::Variable)) {
      const Module& p = model_.module();
      if (!group_var_[0] && !p.inputs().empty())
        std::snprintf(group_var_, sizeof group_var_, "%s", p.inputs()[0].name.c_str());
      const Status set = model_.lane_grid().set_grouping(GroupBy::Variable, group_var_);
      if (!set) status_ = set.error();
    } else {
      model_.lane_grid().set_grouping(static_cast<GroupBy>(group));
    }
  }
  if (model_.lane_grid().grouping_mode() == GroupBy::Variable) {
    ImGui::SameLine();
    ImGui::SetNextItemWidth(70);
    if (ImGui::InputText("##groupvar", group_var_, sizeof group_var_,
                         ImGuiInputTextFlags_EnterReturnsTrue)) {
      const Status set = model_.lane_grid().set_grouping(GroupBy::Variable, group_var_);
      status_ = set.error();
    }
  }
  ImGui::SameLine();
  if (ImGui::SmallButton("fit")) model_.lane_grid().view() = GridView{};
  if (model_.coloring().mode() == ColorMode::Variable) {
    ImGui::SameLine();
    ImGui::TextDisabled("colour: %s", model_.coloring().watched_name().c_str());
  }
  // The filter: typed, Enter applies; its count and stepping through the matches.
  ImGui::SetNextItemWidth(std::max(120.0f, ImGui::GetContentRegionAvail().x - 250));
  if (ImGui::InputTextWithHint("##filter", "filter: n > 15 && depth < 4  (Enter)", filter_text_,
                               sizeof filter_text_, ImGuiInputTextFlags_EnterReturnsTrue)) {
    const Status set = model_.lane_grid().set_filter(filter_text_);
    status_ = set ? "" : "filter: " + set.error();
  }
  ImGui::SameLine();
  if (model_.lane_grid().has_filter()) {
    const LaneGridViews& views = lane_grid_.views();
    const bool built = views.filtered && views.settings_epoch == model_.settings_epoch();
    ImGui::TextColored(ImVec4(1, 0.85f, 0.4f, 1), "%s match",
                       built ? with_commas(views.match_count).c_str() : "...");
    ImGui::SameLine();
    if (ImGui::SmallButton("<")) model_.select_next_match(false);
    ImGui::SameLine();
    if (ImGui::SmallButton(">")) model_.select_next_match(true);
    ImGui::SameLine();
    if (ImGui::SmallButton("off")) {
      model_.lane_grid().set_filter("");
      filter_text_[0] = 0;
    }
  } else {
    ImGui::TextDisabled("no filter");
  }
  // Legend, wrapped on as many lines as it needs.
  const float right = ImGui::GetWindowPos().x + ImGui::GetWindowContentRegionMax().x;
  for (size_t i = 0; i < legend_.size(); ++i) {
    const float wid = 18 + ImGui::CalcTextSize(legend_[i].label.c_str()).x + 14;
    if (i > 0) {
      ImGui::SameLine();
      if (ImGui::GetCursorScreenPos().x + wid > right) ImGui::NewLine();
    }
    const ImVec2 q = ImGui::GetCursorScreenPos();
    ImGui::GetWindowDrawList()->AddRectFilled(ImVec2(q.x, q.y + 3), ImVec2(q.x + 12, q.y + 15),
                                              to_imgui(legend_[i].rgba));
    ImGui::Dummy(ImVec2(16, 14));
    ImGui::SameLine();
    ImGui::TextUnformatted(legend_[i].label.c_str());
  }
}

void Panels::draw_lane_grid() {
  draw_lane_grid_header();
  const int band = lane_grid_.draw(hover_enabled);
  if (band < 0) return;
  const Status s = model_.select_band(static_cast<size_t>(band));
  status_ = s.error();
  if (s)
    std::snprintf(filter_text_, sizeof filter_text_, "%s",
                  model_.lane_grid().filter_text().c_str());
}

void Panels::draw_plot() {
  const UtilizationHistory& h = model_.timeline().history();
  const uint64_t known = std::max<uint64_t>(1, h.size());
  uint64_t begin = view_begin_, end = view_end_ ? view_end_ : known;
  end = std::min(end, known);
  if (begin >= end) begin = 0;
  const StepAggregate all = h.range(0, h.size());
  const double lanes = std::max(1u, h.lanes());
  ImGui::Text("steps %s  mean %.1f%%  min %.1f%%  max %.1f%%  last %.1f%%",
              with_commas(h.size()).c_str(), 100 * all.mean() / lanes, 100 * all.min / lanes,
              100 * all.max / lanes,
              h.size() ? 100.0 *
                             h.at(std::min(h.size(), model_.position())
                                      ? std::min(h.size(), model_.position()) - 1
                                      : 0) /
                             lanes
                       : 0.0);
  const ImVec2 origin = ImGui::GetCursorScreenPos();
  const ImVec2 full = ImGui::GetContentRegionAvail();
  // The utilization plot on top, the block x step heatmap under it on the same step axis.
  const float heat_h = std::floor(full.y * 0.5f);
  const ImVec2 avail(full.x, full.y - heat_h);
  const float axis = 44;
  const ImVec2 size(std::max(10.0f, avail.x - axis), std::max(10.0f, avail.y - 18));
  const ImVec2 a(origin.x + axis, origin.y), b(a.x + size.x, a.y + size.y);
  ImDrawList* draw = ImGui::GetWindowDrawList();
  draw->AddRectFilled(a, b, IM_COL32(18, 20, 26, 255));
  for (int pct : {0, 50, 100}) {
    const float y = b.y - size.y * pct / 100.0f;
    draw->AddLine(ImVec2(a.x, y), ImVec2(b.x, y), IM_COL32(60, 60, 70, 255));
    draw->AddText(ImVec2(origin.x + 2, y - 7), IM_COL32(160, 160, 170, 255),
                  fmt::format("{}%", pct).c_str());
  }
  const uint32_t columns = static_cast<uint32_t>(size.x);
  if (end - begin < columns) {
    // Zoomed in: one bar per step.
    const float bar = size.x / static_cast<float>(end - begin);
    for (uint64_t st = begin; st < end && st < h.size(); ++st) {
      const float x = a.x + bar * static_cast<float>(st - begin);
      const float y = b.y - size.y * static_cast<float>(h.at(st) / lanes);
      draw->AddRectFilled(ImVec2(x + (bar > 3 ? 1 : 0), y), ImVec2(x + bar, b.y),
                          IM_COL32(70, 130, 220, 255));
    }
  }
  const auto cols =
      end - begin < columns ? std::vector<StepAggregate>() : h.columns(begin, end, columns);
  for (uint32_t c = 0; c < cols.size(); ++c) {
    if (!cols[c].count) continue;
    const float x = a.x + c + 0.5f;
    const float y_min = b.y - size.y * static_cast<float>(cols[c].min / lanes);
    const float y_max = b.y - size.y * static_cast<float>(cols[c].max / lanes);
    const float y_mean = b.y - size.y * static_cast<float>(cols[c].mean() / lanes);
    draw->AddLine(ImVec2(x, y_min + 0.5f), ImVec2(x, y_max - 0.5f), IM_COL32(70, 120, 200, 255));
    draw->AddLine(ImVec2(x, b.y), ImVec2(x, y_mean), IM_COL32(90, 170, 255, 110));
  }
  const uint64_t here = model_.position();
  if (here >= begin && here <= end) {
    const float x =
        a.x + size.x * static_cast<float>(here - begin) / static_cast<float>(end - begin);
    draw->AddLine(ImVec2(x, a.y), ImVec2(x, b.y), kCurrentStep, 2.0f);
  }
  draw->AddText(ImVec2(a.x, b.y + 2), IM_COL32(160, 160, 170, 255), with_commas(begin).c_str());
  const std::string last = with_commas(end);
  draw->AddText(ImVec2(b.x - ImGui::CalcTextSize(last.c_str()).x, b.y + 2),
                IM_COL32(160, 160, 170, 255), last.c_str());
  draw_heatmap(a.x, b.y + 16, size.x, heat_h - 16, begin, end);
  ImGui::SetCursorScreenPos(a);
  ImGui::InvisibleButton("plot", size);
  if (hover_enabled && ImGui::IsItemHovered()) {
    const float fx = (ImGui::GetMousePos().x - a.x) / size.x;
    const uint64_t at = begin + static_cast<uint64_t>(fx * static_cast<double>(end - begin));
    const float wheel = ImGui::GetIO().MouseWheel;
    if (wheel != 0) {
      const double span = static_cast<double>(end - begin) * (wheel > 0 ? 0.5 : 2.0);
      const double lo = std::max(0.0, at - span * fx);
      view_begin_ = static_cast<uint64_t>(lo);
      view_end_ = std::min<uint64_t>(known, static_cast<uint64_t>(lo + std::max(span, 16.0)));
    }
    if (ImGui::IsMouseDoubleClicked(0))
      view_begin_ = view_end_ = 0;
    else if (ImGui::IsMouseClicked(0) && !running())
      model_.seek(at);
    if (at < h.size())
      ImGui::SetTooltip("step %s: %u of %u lanes ran block %s", with_commas(at).c_str(), h.at(at),
                        h.lanes(),
                        model_.source().knows_future()
                            ? model_.blocks().name(model_.source().recorded_block(at)).c_str()
                            : "");
  }
}

void Panels::draw_heatmap(float x0, float y0, float width, float height, uint64_t begin,
                          uint64_t end) {
  const BlockHeatmap& heat = model_.activity().heatmap();
  const uint32_t blocks = heat.blocks();
  if (!blocks || height < 8 || width < 8) return;
  ImDrawList* draw = ImGui::GetWindowDrawList();
  const bool ran = model_.activity().heatmap_shows_ran();
  draw->AddText(ImVec2(x0 - 44, y0), IM_COL32(160, 160, 170, 255), ran ? "ran" : "wait");
  const ImVec2 a(x0, y0), z(x0 + width, y0 + height);
  draw->AddRectFilled(a, z, IM_COL32(18, 20, 26, 255));
  const float row_h = height / static_cast<float>(blocks);
  end = std::min(end, std::max<uint64_t>(heat.steps(), begin + 1));
  const uint64_t span = std::max<uint64_t>(1, end - begin);
  const auto columns =
      static_cast<uint32_t>(std::min<uint64_t>(span, static_cast<uint64_t>(width)));
  const double lanes = std::max(1u, model_.source().lanes());
  // One column per pixel (or per step when zoomed in); runs of equal colour merge into one rect.
  std::vector<std::vector<uint8_t>> levels(blocks, std::vector<uint8_t>(columns, 0));
  for (uint32_t c = 0; c < columns; ++c) {
    const uint64_t s0 = begin + span * c / columns, s1 = begin + span * (c + 1) / columns;
    if (s0 >= heat.steps()) break;
    heat.range(s0, std::max(s1, s0 + 1), heat_waiting_, heat_ran_);
    const std::vector<double>& v = ran ? heat_ran_ : heat_waiting_;
    for (uint32_t b = 0; b < blocks; ++b)
      if (v[b] > 0)
        levels[b][c] = static_cast<uint8_t>(1 + std::min(31.0, std::sqrt(v[b] / lanes) * 31));
  }
  const float col_w = width / static_cast<float>(columns);
  for (uint32_t b = 0; b < blocks; ++b) {
    const float y = y0 + b * row_h;
    for (uint32_t c = 0; c < columns;) {
      uint32_t e = c + 1;
      while (e < columns && levels[b][e] == levels[b][c])
        ++e;
      if (levels[b][c])
        draw->AddRectFilled(ImVec2(x0 + c * col_w, y),
                            ImVec2(x0 + e * col_w, y + std::max(1.0f, row_h - (row_h > 4 ? 1 : 0))),
                            ramp_color((levels[b][c] - 1) / 31.0));
      c = e;
    }
    if (row_h >= 12) {
      const std::string name = model_.blocks().name(static_cast<int32_t>(b));
      const ImVec2 at(x0 + 2, y + (row_h - 13) / 2);
      draw->AddRectFilled(at, ImVec2(at.x + ImGui::CalcTextSize(name.c_str()).x + 4, at.y + 13),
                          IM_COL32(10, 10, 14, 170));
      draw->AddText(ImVec2(at.x + 2, at.y - 1), IM_COL32(210, 210, 220, 230), name.c_str());
    }
  }
  const uint64_t here = model_.position();
  if (here >= begin && here <= end) {
    const float x = x0 + width * static_cast<float>(here - begin) / static_cast<float>(span);
    draw->AddLine(ImVec2(x, y0), ImVec2(x, y0 + height), kCurrentStep, 2.0f);
  }
  ImGui::SetCursorScreenPos(a);
  ImGui::InvisibleButton("heatmap", ImVec2(width, height));
  if (!hover_enabled || !ImGui::IsItemHovered()) return;
  const ImVec2 m = ImGui::GetMousePos();
  const uint64_t step =
      begin + static_cast<uint64_t>((m.x - x0) / width * static_cast<double>(span));
  const auto block = static_cast<int32_t>(std::min<float>(blocks - 1, (m.y - y0) / row_h));
  if (step >= heat.steps()) return;
  heat.range(step, step + 1, heat_waiting_, heat_ran_);
  ImGui::SetTooltip("step %s, %s: %.0f lanes waiting, %.0f ran%s", with_commas(step).c_str(),
                    model_.blocks().name(block).c_str(), heat_waiting_[block], heat_ran_[block],
                    heat.steps_per_row() > 1 ? " (mean of a row of steps)" : "");
  if (ImGui::IsMouseClicked(0) && !running()) {
    const Status s = model_.select_heatmap_cell(step, block);
    status_ = s.error();
    if (s)
      std::snprintf(filter_text_, sizeof filter_text_, "%s",
                    model_.lane_grid().filter_text().c_str());
  }
}

void Panels::draw_histogram() {
  const std::vector<uint32_t>& histogram = lane_grid_.views().histogram;
  const ImVec2 origin = ImGui::GetCursorScreenPos();
  const ImVec2 avail = ImGui::GetContentRegionAvail();
  ImDrawList* draw = ImGui::GetWindowDrawList();
  if (histogram.empty() || avail.y < 20) {
    ImGui::TextDisabled("no live lanes");
    return;
  }
  const uint32_t most = *std::max_element(histogram.begin(), histogram.end());
  const float h = avail.y - 16;
  // Live lanes are at depth 1 or more: the bars start there.
  const size_t first = histogram.size() > 1 ? 1 : 0;
  const float bar = std::max(1.0f, avail.x / static_cast<float>(histogram.size() - first));
  for (size_t d = first; d < histogram.size(); ++d) {
    const float x = origin.x + bar * (d - first);
    const float top = origin.y + h - h * static_cast<float>(histogram[d]) / std::max(1u, most);
    draw->AddRectFilled(ImVec2(x + (bar > 3 ? 1 : 0), top), ImVec2(x + bar, origin.y + h),
                        ramp_color(histogram.size() > 1 ? d / (histogram.size() - 1.0) : 0));
  }
  draw->AddText(ImVec2(origin.x, origin.y + h + 1), IM_COL32(160, 160, 170, 255),
                fmt::format("depth {}", first).c_str());
  const std::string last = fmt::format("{}", histogram.size() - 1);
  draw->AddText(ImVec2(origin.x + avail.x - ImGui::CalcTextSize(last.c_str()).x, origin.y + h + 1),
                IM_COL32(160, 160, 170, 255), last.c_str());
  ImGui::InvisibleButton("histogram", ImVec2(avail.x, h));
  if (hover_enabled && ImGui::IsItemHovered()) {
    const auto d = first + static_cast<size_t>((ImGui::GetMousePos().x - origin.x) / bar);
    if (d < histogram.size())
      ImGui::SetTooltip("depth %zu: %s live lanes", d, with_commas(histogram[d]).c_str());
  }
}

// The selected lane's depth over the steps recorded since it was selected, coloured by block.
void Panels::draw_strip() {
  const auto& strip = model_.selection().strip();
  if (strip.size() < 2) {
    ImGui::TextDisabled("PC / depth over time: step forward to record");
    return;
  }
  ImGui::Text("PC / depth, steps %s to %s", with_commas(model_.selection().strip_first()).c_str(),
              with_commas(model_.selection().strip_first() + strip.size() - 1).c_str());
  const ImVec2 origin = ImGui::GetCursorScreenPos();
  const float w = ImGui::GetContentRegionAvail().x, h = 44;
  ImDrawList* draw = ImGui::GetWindowDrawList();
  draw->AddRectFilled(origin, ImVec2(origin.x + w, origin.y + h), IM_COL32(18, 20, 26, 255));
  uint32_t deepest = 1;
  for (const auto& at : strip)
    deepest = std::max(deepest, at.depth);
  const size_t n = strip.size();
  const auto columns = static_cast<uint32_t>(std::min<size_t>(n, static_cast<size_t>(w)));
  const float col_w = w / static_cast<float>(columns);
  for (uint32_t c = 0; c < columns; ++c) {
    const auto& at = strip[n * c / columns];
    const uint32_t colour =
        at.pc >= model_.exit_pc() ? 0xFF505050u : categorical_color(static_cast<uint32_t>(at.pc));
    const float top = origin.y + h - h * static_cast<float>(at.depth) / static_cast<float>(deepest);
    draw->AddRectFilled(ImVec2(origin.x + c * col_w, top),
                        ImVec2(origin.x + (c + 1) * col_w, origin.y + h), colour);
  }
  ImGui::Dummy(ImVec2(w, h));
  if (hover_enabled && ImGui::IsItemHovered()) {
    const auto c = static_cast<size_t>((ImGui::GetMousePos().x - origin.x) / col_w);
    const size_t i = std::min(n - 1, n * c / columns);
    ImGui::SetTooltip("step %s: %s, depth %u",
                      with_commas(model_.selection().strip_first() + i).c_str(),
                      model_.blocks().name(strip[i].pc).c_str(), strip[i].depth);
  }
}

void Panels::draw_inspector() {
  const auto sel = model_.selected_lane();
  if (!sel) {
    ImGui::TextWrapped("Click a lane in the lane grid to inspect it.");
    return;
  }
  // lane_details copies the run's results: only redo it when the state or selection changed.
  if (details_position_ != model_.position() || details_.lane != *sel || details_stale_) {
    details_ = lane_details(model_.source(), *sel);
    details_position_ = model_.position();
    details_stale_ = false;
  }
  const LaneDetails& d = details_;
  ImGui::Text("lane %u: %s", d.lane, d.status.c_str());
  if (!d.output.empty()) ImGui::Text("output: %s", d.output.c_str());
  if (!d.error.empty()) ImGui::TextColored(ImVec4(1, 0.4f, 0.4f, 1), "error: %s", d.error.c_str());
  if (const auto g = group_view(model_.source(), d.lane)) draw_group(*g);
  draw_strip();
  ImGui::Separator();
  ImGui::Text("call stack (innermost first)");
  for (size_t i = 0; i < d.frames.size() && i < 64; ++i) {
    ImGui::BulletText("%s  line %d  (%s)", d.frames[i].function.c_str(), d.frames[i].line,
                      d.frames[i].block.c_str());
    if (d.frames[i].after_tail_calls) ImGui::TextDisabled("    ... frames replaced by tail calls");
  }
  if (d.frames.size() > 64) ImGui::TextDisabled("... %zu more frames", d.frames.size() - 64);
  ImGui::Separator();
  if (ImGui::BeginTable(
          "vars", 2,
          ImGuiTableFlags_RowBg | ImGuiTableFlags_ScrollY | ImGuiTableFlags_BordersInnerV)) {
    ImGui::TableSetupColumn("variable", ImGuiTableColumnFlags_WidthFixed, 110);
    ImGui::TableSetupColumn("value  [stack, top last]");
    ImGui::TableHeadersRow();
    for (const VariableView& v : d.variables) {
      ImGui::TableNextRow();
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(v.name.c_str());
      ImGui::TableNextColumn();
      std::string text = v.value;
      if (!v.stack.empty()) {
        text += "   [";
        const size_t from = v.stack.size() > 12 ? v.stack.size() - 12 : 0;
        if (from) text += "..., ";
        for (size_t i = from; i < v.stack.size(); ++i)
          text += (i > from ? ", " : "") + v.stack[i];
        text += "]";
      }
      ImGui::TextWrapped("%s", text.c_str());
    }
    ImGui::EndTable();
  }
}

// The local schedule: the selected lane's group and the block it runs at the next dispatch.
void Panels::draw_group(const GroupView& g) {
  ImGui::Separator();
  ImGui::Text("group %u (lanes %u-%u): next %s, %u of %zu lanes", g.group, g.first_lane,
              g.first_lane + static_cast<uint32_t>(g.pcs.size()) - 1,
              model_.blocks().name(g.next_block).c_str(), g.lanes_at_next, g.pcs.size());
  // One small cell per lane of the group, coloured by its block, the group's next block framed.
  const float cell = 14.0f;
  const int per_row = std::max(1, static_cast<int>(ImGui::GetContentRegionAvail().x / cell));
  ImDrawList* draw = ImGui::GetWindowDrawList();
  const ImVec2 origin = ImGui::GetCursorScreenPos();
  const int32_t exit_pc = model_.exit_pc();
  for (size_t i = 0; i < g.pcs.size(); ++i) {
    const float x = origin.x + static_cast<float>(i % per_row) * cell;
    const float y = origin.y + static_cast<float>(i / per_row) * cell;
    const int32_t pc = g.pcs[i];
    const uint32_t colour = pc >= exit_pc ? 0xFF505050u : categorical_color(pc);
    draw->AddRectFilled(ImVec2(x + 1, y + 1), ImVec2(x + cell - 1, y + cell - 1), colour);
    if (pc == g.next_block) draw->AddRect(ImVec2(x, y), ImVec2(x + cell, y + cell), 0xFFFFFFFFu);
  }
  const size_t rows = (g.pcs.size() + per_row - 1) / per_row;
  ImGui::Dummy(ImVec2(per_row * cell, static_cast<float>(rows) * cell));
  if (ImGui::IsItemHovered()) {
    const ImVec2 m = ImGui::GetMousePos();
    const size_t i = static_cast<size_t>((m.y - origin.y) / cell) * per_row +
                     static_cast<size_t>((m.x - origin.x) / cell);
    if (i < g.pcs.size())
      ImGui::SetTooltip("lane %zu: %s", g.first_lane + i, model_.blocks().name(g.pcs[i]).c_str());
  }
}

void Panels::draw_breakpoints() {
  ImGui::SetNextItemWidth(ImGui::GetContentRegionAvail().x - 50);
  const bool entered = ImGui::InputTextWithHint(
      "##bp", "line 4 | depth > 8 | fault | filter n > 15", breakpoint_text_,
      sizeof breakpoint_text_, ImGuiInputTextFlags_EnterReturnsTrue);
  ImGui::SameLine();
  if (ImGui::Button("Add") || entered) {
    const Status added = model_.add_breakpoint(breakpoint_text_);
    status_ = added.error();
    if (added) breakpoint_text_[0] = 0;
  }
  // Hits are computed once per state (a filter breakpoint reads every lane).
  auto& bps = model_.breakpoints();
  if (hits_counted_ != bps.size())
    hits_ = model_.breakpoints().hits(model_.source()), hits_counted_ = bps.size();
  const std::vector<int>& hits = hits_;
  for (size_t i = 0; i < bps.size(); ++i) {
    ImGui::PushID(static_cast<int>(i));
    ImGui::Checkbox("##on", &bps[i].enabled);
    ImGui::SameLine();
    const bool hit = std::find(hits.begin(), hits.end(), static_cast<int>(i)) != hits.end();
    if (hit)
      ImGui::TextColored(ImVec4(1, 0.45f, 0.45f, 1), "%s  (hit)",
                         describe(bps[i], model_.module()).c_str());
    else
      ImGui::TextUnformatted(describe(bps[i], model_.module()).c_str());
    ImGui::SameLine();
    if (ImGui::SmallButton("x")) {
      model_.breakpoints().remove(i);
      ImGui::PopID();
      break;
    }
    ImGui::PopID();
  }
  if (bps.empty())
    ImGui::TextDisabled(
        "No breakpoints. Click a line number in the source view, or type one above.");
}

}  // namespace ab::debugger
