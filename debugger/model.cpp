#include "debugger/model.h"

#include <fmt/format.h>
#include <algorithm>
#include <nlohmann/json.hpp>

#include "debugger/value_format.h"

namespace ab::debugger {

DebuggerModel::DebuggerModel(std::unique_ptr<ExecutionSource> source,
                             const TimelineOptions& timeline)
    : source_(std::move(source)),
      timeline_(*source_, timeline),
      blocks_(module()),
      coloring_(module()),
      activity_(static_cast<uint32_t>(module().blocks().size())),
      grid_(module()) {
  on_state_change(true);
  timeline_.set_observer([this](bool jumped) { on_state_change(jumped); });
}

void DebuggerModel::on_state_change(bool jumped) {
  ++epoch_;
  if (activity_.follow(*source_, jumped))
    selection_.follow(source_->steps(), source_->lane_pcs(), source_->lane_depths());
}

uint64_t DebuggerModel::settings_epoch() const {
  // Each part only counts up, so the sum moves whenever one of them does.
  return coloring_.version() + grid_.version() + activity_.version();
}

StopReason DebuggerModel::continue_run(uint64_t max_steps) {
  StopReason reason;
  int hit = -1;
  // A filter breakpoint looks at every lane after the first step, then only at the lanes that
  // ran: a lane that did not run is as it was, and it did not match then.
  bool first = true;
  const uint64_t taken = timeline_.step(max_steps, [&] {
    hit = breakpoints_.first_hit(*source_, first);
    first = false;
    return hit >= 0;
  });
  if (hit >= 0) {
    reason.kind = StopReason::Kind::Breakpoint;
    reason.breakpoint = hit;
    reason.message = fmt::format("breakpoint {} ({}) at step {}", hit + 1,
                                 describe(breakpoints_[hit], module()), position());
  } else if (!source_->error().empty()) {
    reason.kind = StopReason::Kind::SourceError;
    reason.message = source_->error();
  } else if (source_->done()) {
    reason.kind = StopReason::Kind::Finished;
    reason.message = fmt::format("run finished at step {}", position());
  } else {
    reason.kind = StopReason::Kind::StepLimit;
    reason.message = fmt::format("stopped after {} steps at step {}", taken, position());
  }
  return reason;
}

std::optional<std::string> DebuggerModel::run_slice(uint64_t n) {
  if (run_mode_ == RunMode::Paused) return std::nullopt;
  if (run_mode_ == RunMode::ToBreakpoint) {
    const StopReason r = continue_run(n);
    if (r.kind == StopReason::Kind::StepLimit) return std::nullopt;
    run_mode_ = RunMode::Paused;
    return r.message;
  }
  step(n);
  if (!source_->done()) return std::nullopt;
  run_mode_ = RunMode::Paused;
  return fmt::format("run finished at step {}", position());
}

Status DebuggerModel::add_breakpoint(std::string_view text) {
  std::string trimmed(text);
  trimmed.erase(0, trimmed.find_first_not_of(" \t"));
  trimmed.erase(trimmed.find_last_not_of(" \t") + 1);
  if (trimmed == "filter") {
    if (!grid_.has_filter())
      return Error{"break filter: there is no filter (give one: break filter EXPR)"};
    Breakpoint b;
    b.kind = Breakpoint::Kind::Filter;
    b.filter = std::make_shared<const LaneFilter>(*grid_.filter());
    breakpoints_.add(b);
    return Ok{};
  }
  auto parsed = parse_breakpoint(text, module(), source_->lanes());
  if (!parsed) return Error{parsed.error()};
  breakpoints_.add(*parsed);
  return Ok{};
}

Status DebuggerModel::select_lane(uint32_t lane) {
  if (lane >= source_->lanes())
    return Error{
        fmt::format("lane {} is out of range (the batch has {} lanes)", lane, source_->lanes())};
  selection_.select(lane, position(), source_->lane_pcs()[lane], source_->lane_depths()[lane]);
  return Ok{};
}

std::optional<uint32_t> DebuggerModel::select_next_match(bool forward) {
  const std::vector<uint8_t>& m = filter_matches();
  const auto lanes = static_cast<uint32_t>(m.size());
  if (!filter_count() || !lanes) return std::nullopt;
  const std::optional<uint32_t> selected = selected_lane();
  uint32_t lane = selected ? *selected : (forward ? lanes - 1 : 0);
  for (uint32_t i = 0; i < lanes; ++i) {
    lane = forward ? (lane + 1) % lanes : (lane + lanes - 1) % lanes;
    if (m[lane]) {
      select_lane(lane);
      return lane;
    }
  }
  return std::nullopt;
}

Status DebuggerModel::select_band(size_t band) {
  const LaneGrouping& g = grouping();
  if (band >= g.bands.size())
    return Error{fmt::format("band {} is out of range (there are {} bands)", band, g.bands.size())};
  const Band b = g.bands[band];
  const uint32_t first_lane = g.order[b.first];
  if (b.predicate.empty()) {
    if (g.by == GroupBy::None) {
      grid_.set_filter("");
      return select_lane(first_lane);
    }
    return Error{fmt::format("the band '{}' has no filter that selects it", b.label)};
  }
  if (Status s = grid_.set_filter(b.predicate); !s) return s;
  return select_lane(first_lane);
}

Status DebuggerModel::select_heatmap_cell(uint64_t step, int32_t block) {
  if (block < 0 || block >= exit_pc())
    return Error{fmt::format("no block {} (the program has {})", block, exit_pc())};
  seek(step);
  if (Status s = grid_.set_filter("block == " + module().blocks()[block].name); !s) return s;
  if (!filter_count()) return Ok{};
  selection_.clear();
  select_next_match(true);
  return Ok{};
}

uint32_t DebuggerModel::live_lanes() const {
  uint32_t n = 0;
  for (int32_t pc : source_->lane_pcs())
    n += pc != exit_pc();
  return n;
}

uint32_t DebuggerModel::faulted_lanes() const {
  uint32_t n = 0;
  for (uint8_t f : source_->lane_faulted())
    n += f != 0;
  return n;
}

std::vector<LegendEntry> DebuggerModel::legend() const {
  return coloring_.legend(lane_state(*source_), activity_.waiting());
}

std::string DebuggerModel::lane_summary(uint32_t lane) const {
  const ExecutionSource& s = *source_;
  if (lane >= s.lanes()) return "";
  const int32_t pc = s.lane_pcs()[lane];
  std::string text;
  if (s.lane_faulted()[lane]) {
    text = fmt::format("lane {}: faulted", lane);
  } else if (pc == exit_pc()) {
    text = fmt::format("lane {}: finished", lane);
  } else {
    text = fmt::format("lane {}: {} (line {}), depth {}", lane, blocks_.name(pc), blocks_.line(pc),
                       s.lane_depths()[lane]);
  }
  if (coloring_.mode() == ColorMode::Variable)
    text +=
        fmt::format(", {} = {}", coloring_.watched_name(), coloring_.value(lane_state(s), lane, 4));
  return text;
}

const LaneGrouping& DebuggerModel::grouping() const {
  return grid_.grouping(lane_state(*source_), epoch_);
}

const std::vector<uint8_t>& DebuggerModel::filter_matches() const {
  return grid_.filter_matches(lane_state(*source_), epoch_);
}

uint32_t DebuggerModel::filter_count() const {
  return grid_.filter_count(lane_state(*source_), epoch_);
}

LaneGridJob DebuggerModel::grid_job(uint32_t columns) const {
  return LaneGridJob(*source_, coloring_, grid_, columns, epoch_, settings_epoch());
}

std::string DebuggerModel::dump_json() const {
  nlohmann::json out;
  out["program"] = source_->program().path;
  out["source"] = source_->describe();
  out["step"] = position();
  out["done"] = source_->done();
  out["next_block"] = blocks_.name(source_->next_block());
  out["live_lanes"] = live_lanes();
  out["faulted_lanes"] = faulted_lanes();
  nlohmann::json bps = nlohmann::json::array();
  for (const Breakpoint& b : breakpoints_)
    bps.push_back(describe(b, module()));
  out["breakpoints"] = std::move(bps);
  const std::optional<uint32_t> selected = selected_lane();
  out["selected_lane"] = selected ? nlohmann::json(*selected) : nlohmann::json(nullptr);
  out["color"] = color_mode_name(coloring_.mode());
  out["group"] = group_by_name(grid_.grouping_mode());
  if (grid_.grouping_mode() == GroupBy::Variable) out["group_var"] = grid_.group_variable();
  if (grid_.has_filter()) {
    out["filter"] = grid_.filter_text();
    out["filter_count"] = filter_count();
  }
  if (coloring_.mode() == ColorMode::Variable) out["watched"] = coloring_.watched_name();
  if (selected)
    if (const auto g = group_view(*source_, *selected)) {
      nlohmann::json group;
      group["group"] = g->group;
      group["first_lane"] = g->first_lane;
      group["pcs"] = g->pcs;
      group["next_block"] = blocks_.name(g->next_block);
      group["lanes_at_next"] = g->lanes_at_next;
      out["selected_group"] = std::move(group);
    }
  out["state"] =
      nlohmann::json::parse(state_json(module(), source_->snapshot(0, source_->lanes())));
  return out.dump(1);
}

}  // namespace ab::debugger
