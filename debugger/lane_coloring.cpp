#include "debugger/lane_coloring.h"

#include <fmt/format.h>
#include <algorithm>
#include <cmath>

#include "debugger/value_format.h"

namespace ab::debugger {

const char* color_mode_name(ColorMode mode) {
  switch (mode) {
    case ColorMode::Block:
      return "block";
    case ColorMode::Depth:
      return "depth";
    case ColorMode::Error:
      return "error";
    case ColorMode::Variable:
      return "var";
  }
  return "?";
}

namespace {

constexpr uint32_t rgba(uint8_t r, uint8_t g, uint8_t b) {
  return uint32_t{r} | uint32_t{g} << 8 | uint32_t{b} << 16 | 0xff000000u;
}
constexpr uint32_t kFinished = rgba(70, 70, 78);
constexpr uint32_t kFaulted = rgba(235, 40, 40);
constexpr uint32_t kRunning = rgba(70, 140, 230);

// The watched variable's finite range over every lane.
void variable_range(const LaneState& s, int32_t variable, double& lo, double& hi) {
  const VariableInfo& watched = s.module->variables()[variable];
  const uint32_t offset = s.offset_of(variable);
  lo = INFINITY;
  hi = -INFINITY;
  for (uint32_t lane = 0; lane < s.lanes; ++lane) {
    const double v = leading_scalar(watched.value_type, s.registers + lane * s.stride + offset);
    if (!std::isfinite(v)) continue;
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  if (lo > hi) lo = hi = 0;
}

}  // namespace

uint32_t categorical_color(uint32_t index) {
  // Distinct hues with no pure red (red means a fault everywhere in the debugger).
  static constexpr uint32_t kPalette[] = {
      rgba(78, 163, 240),  rgba(250, 175, 60),  rgba(90, 200, 120),  rgba(180, 120, 230),
      rgba(240, 220, 80),  rgba(80, 210, 210),  rgba(240, 130, 190), rgba(160, 200, 60),
      rgba(150, 150, 250), rgba(210, 160, 110), rgba(120, 230, 180), rgba(230, 140, 100)};
  return kPalette[index % std::size(kPalette)];
}

uint32_t ramp_color(double t) {
  // A perceptually ordered dark-blue -> teal -> yellow ramp (viridis-like, 5 stops).
  static constexpr double kStops[][3] = {
      {68, 1, 84}, {59, 82, 139}, {33, 145, 140}, {94, 201, 98}, {253, 231, 37}};
  t = std::clamp(std::isfinite(t) ? t : 0.0, 0.0, 1.0) * 4.0;
  const int i = std::min(3, static_cast<int>(t));
  const double f = t - i;
  auto mix = [&](int c) {
    return static_cast<uint8_t>(kStops[i][c] + (kStops[i + 1][c] - kStops[i][c]) * f + 0.5);
  };
  return rgba(mix(0), mix(1), mix(2));
}

void lane_colors(const LaneState& s, ColorMode mode, int32_t watched_variable,
                 std::vector<uint32_t>& out) {
  const int32_t exit = s.exit_pc;
  out.resize(s.lanes);
  double lo = 0, hi = 0;
  uint32_t max_depth = 1;
  const VariableInfo* watched =
      mode == ColorMode::Variable ? &s.module->variables()[watched_variable] : nullptr;
  if (watched) variable_range(s, watched_variable, lo, hi);
  if (mode == ColorMode::Depth)
    for (uint32_t lane = 0; lane < s.lanes; ++lane)
      max_depth = std::max(max_depth, s.depths[lane]);
  for (uint32_t lane = 0; lane < s.lanes; ++lane) {
    if (s.faulted[lane]) {
      out[lane] = kFaulted;
      continue;
    }
    const bool finished = s.pcs[lane] == exit;
    switch (mode) {
      case ColorMode::Block:
        out[lane] = finished ? kFinished : categorical_color(static_cast<uint32_t>(s.pcs[lane]));
        break;
      case ColorMode::Depth:
        out[lane] =
            finished ? kFinished
                     : ramp_color(max_depth > 1 ? (s.depths[lane] - 1.0) / (max_depth - 1.0) : 0.0);
        break;
      case ColorMode::Error:
        out[lane] = finished ? kFinished : kRunning;
        break;
      case ColorMode::Variable: {
        // s.offset_of: the grid job's compact copy has its own offsets.
        const double v = leading_scalar(
            watched->value_type, s.registers + lane * s.stride + s.offset_of(watched_variable));
        out[lane] = ramp_color(hi > lo ? (v - lo) / (hi - lo) : 0.5);
        break;
      }
    }
  }
}

Status LaneColoring::set(ColorMode mode, const std::string& variable) {
  ++version_;
  if (mode != ColorMode::Variable) {
    mode_ = mode;
    return Ok{};
  }
  const std::vector<VariableInfo>& vars = module_->variables();
  constexpr auto kTemp = VariableInfo::Storage::Temp;
  int32_t found = -1;
  for (size_t v = 0; v < vars.size() && found < 0; ++v)
    if (vars[v].name == variable && vars[v].storage != kTemp) found = static_cast<int32_t>(v);
  for (size_t v = 0; v < vars.size() && found < 0; ++v) {
    const std::string& name = vars[v].name;
    const size_t dot = name.find('.');
    if (vars[v].storage != kTemp && dot != std::string::npos && name.substr(dot + 1) == variable)
      found = static_cast<int32_t>(v);
  }
  if (found < 0) {
    std::string names;
    for (const VariableInfo& v : vars)
      if (v.storage != kTemp && v.from_source) names += (names.empty() ? "" : ", ") + v.name;
    return Error{
        fmt::format("no variable '{}' lives across blocks (watchable: {})", variable, names)};
  }
  mode_ = mode;
  watched_ = found;
  watched_name_ = vars[found].name;
  return Ok{};
}

void LaneColoring::colors(const LaneState& state, std::vector<uint32_t>& rgba) const {
  lane_colors(state, mode_, watched_, rgba);
}

std::vector<LegendEntry> LaneColoring::legend(const LaneState& s,
                                              const std::vector<uint32_t>& waiting) const {
  std::vector<LegendEntry> out;
  uint32_t live = 0, faulted = 0, max_depth = 1;
  for (uint32_t lane = 0; lane < s.lanes; ++lane) {
    live += s.pcs[lane] != s.exit_pc;
    faulted += s.faulted[lane] != 0;
    max_depth = std::max(max_depth, s.depths[lane]);
  }
  switch (mode_) {
    case ColorMode::Block:
      for (size_t b = 0; b < waiting.size(); ++b)
        if (waiting[b])
          out.push_back({fmt::format("{} ({})", module_->blocks()[b].name, waiting[b]),
                         categorical_color(static_cast<uint32_t>(b))});
      break;
    case ColorMode::Depth:
      out.push_back({"depth 1", ramp_color(0)});
      if (max_depth > 1) out.push_back({fmt::format("depth {}", max_depth), ramp_color(1)});
      break;
    case ColorMode::Error:
      out.push_back({fmt::format("running ({})", live), kRunning});
      break;
    case ColorMode::Variable: {
      double lo, hi;
      variable_range(s, watched_, lo, hi);
      out.push_back({fmt::format("{} = {}", watched_name_, lo), ramp_color(0)});
      if (hi > lo) out.push_back({fmt::format("{} = {}", watched_name_, hi), ramp_color(1)});
      break;
    }
  }
  const uint32_t finished = s.lanes - live - faulted;
  if (mode_ != ColorMode::Variable || finished)
    out.push_back({fmt::format("finished ({})", finished), kFinished});
  out.push_back({fmt::format("faulted ({})", faulted), kFaulted});
  return out;
}

std::string LaneColoring::value(const LaneState& s, uint32_t lane, uint32_t max_elements) const {
  if (mode_ != ColorMode::Variable || lane >= s.lanes) return "";
  const VariableInfo& watched = module_->variables()[watched_];
  return format_value(watched.value_type, s.registers + lane * s.stride + s.offset_of(watched_),
                      max_elements);
}

}  // namespace ab::debugger
