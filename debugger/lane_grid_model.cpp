#include "debugger/lane_grid_model.h"

#include <algorithm>
#include <chrono>

namespace ab::debugger {
namespace {

double ms_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
      .count();
}

}  // namespace

Status LaneGridModel::set_grouping(GroupBy by, const std::string& variable) {
  if (by == GroupBy::Variable) {
    Expected<VariableReader> var = VariableReader::resolve(*module_, variable);
    if (!var) return Error{var.error()};
    group_var_ = std::move(*var);
    group_name_ = variable;
  } else {
    group_var_.reset();
    group_name_.clear();
  }
  group_by_ = by;
  ++version_;
  return Ok{};
}

const LaneGrouping& LaneGridModel::grouping(const LaneState& state, uint64_t state_epoch) const {
  const std::pair<uint64_t, uint64_t> now{state_epoch, version_};
  if (grouping_at_ != now) {
    const auto start = std::chrono::steady_clock::now();
    grouping_ = group_lanes(state, group_by_, group_var_ ? &*group_var_ : nullptr);
    grouping_ms_ = ms_since(start);
    grouping_at_ = now;
  }
  return grouping_;
}

Status LaneGridModel::set_filter(std::string_view text) {
  const size_t first = text.find_first_not_of(" \t");
  if (first == std::string_view::npos || text.substr(first) == "off") {
    filter_.reset();
    ++version_;
    return Ok{};
  }
  Expected<LaneFilter> parsed = LaneFilter::parse(text, *module_);
  if (!parsed) return Error{parsed.error()};
  filter_ = std::move(*parsed);
  ++version_;
  return Ok{};
}

const std::string& LaneGridModel::filter_text() const {
  static const std::string kNone;
  return filter_ ? filter_->text() : kNone;
}

const std::vector<uint8_t>& LaneGridModel::filter_matches(const LaneState& state,
                                                          uint64_t state_epoch) const {
  const std::pair<uint64_t, uint64_t> now{state_epoch, version_};
  if (matches_at_ != now) {
    matches_at_ = now;
    if (!filter_) {
      matches_.clear();
      match_count_ = 0;
    } else {
      const auto start = std::chrono::steady_clock::now();
      match_count_ = filter_->evaluate(state, matches_);
      filter_ms_ = ms_since(start);
    }
  }
  return matches_;
}

uint32_t LaneGridModel::filter_count(const LaneState& state, uint64_t state_epoch) const {
  filter_matches(state, state_epoch);
  return match_count_;
}

LaneGridJob::LaneGridJob(const ExecutionSource& s, const LaneColoring& coloring,
                         const LaneGridModel& grid, uint32_t columns, uint64_t state_epoch,
                         uint64_t settings_epoch)
    : module_(s.program().module),
      pcs_(s.lane_pcs()),
      depths_(s.lane_depths()),
      faulted_(s.lane_faulted()),
      columns_(columns),
      color_(coloring.mode()),
      watched_(coloring.watched()),
      group_by_(grid.group_by_),
      group_var_(grid.group_var_),
      filter_(grid.filter_),
      state_epoch_(state_epoch),
      settings_epoch_(settings_epoch) {
  // The registers are the bulk of a lane's state: only the variables the views read are copied,
  // side by side.
  std::vector<int32_t> used;
  if (color_ == ColorMode::Variable) used.push_back(watched_);
  if (group_var_) group_var_->used(used);
  if (filter_) filter_->used(used);
  std::sort(used.begin(), used.end());
  used.erase(std::unique(used.begin(), used.end()), used.end());
  const std::vector<VariableInfo>& vars = module_->variables();
  offsets_.assign(vars.size(), UINT32_MAX);
  uint32_t words = 0;
  for (int32_t v : used) {
    offsets_[v] = words;
    words += vars[v].value_type.words;
  }
  words_ = words;
  if (words) {
    const std::vector<uint32_t>& regs = s.registers();
    const size_t stride = s.lanes() ? regs.size() / s.lanes() : 0;
    registers_.resize(size_t{words} * s.lanes());
    uint32_t* out = registers_.data();
    for (uint32_t lane = 0; lane < s.lanes(); ++lane) {
      const uint32_t* in = regs.data() + lane * stride;
      for (int32_t v : used)
        for (uint32_t k = 0; k < vars[v].value_type.words; ++k)
          *out++ = in[vars[v].offset + k];
    }
  }
}

LaneGridViews LaneGridJob::run() const {
  const auto start = std::chrono::steady_clock::now();
  LaneGridViews v;
  v.state_epoch = state_epoch_;
  v.settings_epoch = settings_epoch_;
  v.columns = columns_;
  LaneState s;
  s.module = module_.get();
  s.lanes = static_cast<uint32_t>(pcs_.size());
  s.exit_pc = static_cast<int32_t>(module_->blocks().size());
  s.pcs = pcs_.data();
  s.depths = depths_.data();
  s.faulted = faulted_.data();
  s.registers = registers_.data();
  s.stride = words_;
  s.offsets = offsets_.data();
  v.grouping = group_lanes(s, group_by_, group_var_ ? &*group_var_ : nullptr);
  v.layout = layout_grid(v.grouping, s.lanes, columns_);
  v.histogram = depth_histogram(s);
  std::vector<uint32_t> colors;
  lane_colors(s, color_, watched_, colors);
  std::vector<uint8_t> match;
  v.filtered = filter_.has_value();
  if (filter_) v.match_count = filter_->evaluate(s, match);
  v.rgba.resize(v.layout.cell_lane.size());
  constexpr uint32_t kEmpty = 0xff1c1818u;  // IM_COL32(24, 24, 28, 255)
  for (size_t cell = 0; cell < v.layout.cell_lane.size(); ++cell) {
    const uint32_t lane = v.layout.cell_lane[cell];
    if (lane == GridLayout::kEmpty) {
      v.rgba[cell] = kEmpty;
      continue;
    }
    uint32_t c = colors[lane];
    if (v.filtered && !match[lane]) {
      // Lanes the filter does not match fade to a quarter of their colour.
      c = ((c & 0xff) / 4 + 12) | (((c >> 8 & 0xff) / 4 + 12) << 8) |
          (((c >> 16 & 0xff) / 4 + 14) << 16) | 0xff000000u;
    }
    v.rgba[cell] = c;
  }
  v.ms = ms_since(start);
  return v;
}

}  // namespace ab::debugger
