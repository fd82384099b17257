#include "debugger/model.h"

#include <fmt/format.h>
#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <nlohmann/json.hpp>

#include "autobatch/engine.h"
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

double ms_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
      .count();
}

constexpr uint32_t rgba(uint8_t r, uint8_t g, uint8_t b) {
  return uint32_t{r} | uint32_t{g} << 8 | uint32_t{b} << 16 | 0xff000000u;
}
constexpr uint32_t kFinished = rgba(70, 70, 78);
constexpr uint32_t kFaulted = rgba(235, 40, 40);
constexpr uint32_t kRunning = rgba(70, 140, 230);

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

DebuggerModel::DebuggerModel(std::unique_ptr<ExecutionSource> source,
                             const TimelineOptions& timeline)
    : source_(std::move(source)), timeline_(*source_, timeline) {
  for (const BlockInfo& block : module().blocks())
    block_lines_.push_back(block.lines);
  heatmap_.reset(static_cast<uint32_t>(module().blocks().size()));
  on_state_change(true);
  timeline_.set_observer([this](bool jumped) { on_state_change(jumped); });
}

void DebuggerModel::on_state_change(bool jumped) {
  ++epoch_;
  const ExecutionSource& s = *source_;
  const std::vector<int32_t>& pcs = s.lane_pcs();
  const int32_t exit = exit_pc();
  const auto blocks = static_cast<size_t>(exit);
  if (jumped || prev_pcs_.size() != pcs.size()) {
    prev_pcs_ = pcs;
    waiting_.assign(blocks, 0);
    for (int32_t pc : pcs)
      if (pc >= 0 && pc < exit) ++waiting_[pc];
    executions_ = s.result().stats.block_executions;
    return;
  }
  // Only the lanes that ran can have moved: O(active lanes) per step.
  const std::vector<uint32_t>& ran = s.last_active();
  const uint64_t at = s.steps();
  ran_.assign(blocks, 0);
  for (uint32_t lane : ran)
    if (prev_pcs_[lane] >= 0 && prev_pcs_[lane] < exit) ++ran_[prev_pcs_[lane]];
  if (heatmap_.steps() + 1 == at) heatmap_.push(waiting_, ran_);
  // A block ran once more in this step if any lane ran it (sources that count no executions,
  // the local schedule's, report none).
  if (executions_.size() == blocks)
    for (size_t b = 0; b < blocks; ++b)
      executions_[b] += ran_[b] > 0;
  for (uint32_t lane : ran) {
    const int32_t from = prev_pcs_[lane], to = pcs[lane];
    if (from == to) continue;
    if (from >= 0 && from < exit) --waiting_[from];
    if (to >= 0 && to < exit) ++waiting_[to];
    prev_pcs_[lane] = to;
  }
  if (selected_ && at == strip_first_ + strip_.size())
    strip_.push_back({pcs[*selected_], s.lane_depths()[*selected_]});
}

uint64_t DebuggerModel::step(uint64_t n) {
  return timeline_.step(n);
}
uint64_t DebuggerModel::back(uint64_t n) {
  return timeline_.back(n);
}
uint64_t DebuggerModel::seek(uint64_t step) {
  return timeline_.seek(step);
}

StopReason DebuggerModel::continue_run(uint64_t max_steps) {
  StopReason reason;
  int hit = -1;
  // A filter breakpoint looks at every lane after the first step, then only at the lanes that
  // ran: a lane that did not run is as it was, and it did not match then.
  bool first = true;
  const uint64_t taken = timeline_.step(max_steps, [&] {
    const bool all_lanes = first;
    first = false;
    for (size_t i = 0; i < breakpoints_.size(); ++i)
      if (breakpoints_[i].enabled && breakpoint_holds(breakpoints_[i], all_lanes)) {
        hit = static_cast<int>(i);
        return true;
      }
    return false;
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
    if (!filter_) return Error{"break filter: there is no filter (give one: break filter EXPR)"};
    Breakpoint b;
    b.kind = Breakpoint::Kind::Filter;
    b.filter = std::make_shared<const LaneFilter>(*filter_);
    breakpoints_.push_back(b);
    return Ok{};
  }
  auto parsed = parse_breakpoint(text, module(), source_->lanes());
  if (!parsed) return Error{parsed.error()};
  breakpoints_.push_back(*parsed);
  return Ok{};
}

void DebuggerModel::remove_breakpoint(size_t index) {
  if (index < breakpoints_.size()) breakpoints_.erase(breakpoints_.begin() + index);
}

void DebuggerModel::toggle_line_breakpoint(int line) {
  auto at = std::find_if(breakpoints_.begin(), breakpoints_.end(), [&](const Breakpoint& b) {
    return b.kind == Breakpoint::Kind::Line && b.line == line;
  });
  if (at != breakpoints_.end()) {
    breakpoints_.erase(at);
    return;
  }
  Breakpoint b;
  b.kind = Breakpoint::Kind::Line;
  b.line = line;
  breakpoints_.push_back(b);
}

bool DebuggerModel::breakpoint_holds(const Breakpoint& b, bool all_lanes) const {
  const ExecutionSource& s = *source_;
  const int32_t exit = exit_pc();
  switch (b.kind) {
    case Breakpoint::Kind::Block:
      return s.next_block() == b.block;
    case Breakpoint::Kind::Line: {
      const int32_t next = s.next_block();
      if (next < 0) return false;
      const auto& lines = block_lines_[next];
      return std::binary_search(lines.begin(), lines.end(), b.line);
    }
    case Breakpoint::Kind::LaneReturns: {
      if (s.lane_pcs()[b.lane] != exit || s.lane_faulted()[b.lane]) return false;
      const auto& ran = s.last_active();
      return std::find(ran.begin(), ran.end(), b.lane) != ran.end();
    }
    case Breakpoint::Kind::DepthAbove:
      for (uint32_t lane : s.last_active())
        if (s.lane_depths()[lane] > b.depth) return true;
      return false;
    case Breakpoint::Kind::UtilizationBelow: {
      const auto& ran = s.last_active();
      if (ran.empty()) return false;
      uint32_t ended = 0;
      for (uint32_t lane : ran)
        ended += s.lane_pcs()[lane] == exit;
      const double live_before = live_lanes() + ended;
      return static_cast<double>(ran.size()) / live_before < b.utilization;
    }
    case Breakpoint::Kind::Fault:
      for (uint32_t lane : s.last_active())
        if (s.lane_faulted()[lane]) return true;
      return false;
    case Breakpoint::Kind::Filter: {
      if (!b.filter) return false;
      if (!all_lanes) return b.filter->any(lane_state(s), s.last_active());
      std::vector<uint8_t> match;
      return b.filter->evaluate(lane_state(s), match) > 0;
    }
  }
  return false;
}

std::vector<int> DebuggerModel::hits() const {
  std::vector<int> out;
  for (size_t i = 0; i < breakpoints_.size(); ++i)
    if (breakpoints_[i].enabled && breakpoint_holds(breakpoints_[i]))
      out.push_back(static_cast<int>(i));
  return out;
}

Status DebuggerModel::select_lane(uint32_t lane) {
  if (lane >= source_->lanes())
    return Error{
        fmt::format("lane {} is out of range (the batch has {} lanes)", lane, source_->lanes())};
  selected_ = lane;
  strip_first_ = position();
  strip_ = {{source_->lane_pcs()[lane], source_->lane_depths()[lane]}};
  return Ok{};
}

Status DebuggerModel::set_color_mode(ColorMode mode, const std::string& variable) {
  ++settings_;
  if (mode != ColorMode::Variable) {
    color_mode_ = mode;
    return Ok{};
  }
  const std::vector<VariableInfo>& vars = module().variables();
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
  color_mode_ = mode;
  watched_ = found;
  watched_name_ = vars[found].name;
  return Ok{};
}

std::string DebuggerModel::block_name(int32_t pc) const {
  if (pc < 0 || pc >= exit_pc()) return "finished";
  return module().blocks()[pc].name;
}

int DebuggerModel::block_line(int32_t block) const {
  if (block < 0 || block >= static_cast<int32_t>(block_lines_.size()) ||
      block_lines_[block].empty())
    return 0;
  return block_lines_[block].front();
}

std::vector<uint32_t> DebuggerModel::waiting_per_block() const {
  return waiting_;  // followed step by step (on_state_change)
}

std::vector<uint32_t> DebuggerModel::waiting_per_line() const {
  const std::vector<uint32_t> per_block = waiting_per_block();
  std::vector<uint32_t> out(1, 0);
  for (size_t b = 0; b < per_block.size(); ++b) {
    const int line = block_line(static_cast<int32_t>(b));
    if (line <= 0 || !per_block[b]) continue;
    if (out.size() <= static_cast<size_t>(line)) out.resize(line + 1, 0);
    out[line] += per_block[b];
  }
  return out;
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

namespace {

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

void DebuggerModel::watch_range(double& lo, double& hi) const {
  variable_range(lane_state(*source_), watched_, lo, hi);
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
        const double v =
            leading_scalar(watched->value_type, s.registers + lane * s.stride + watched->offset);
        out[lane] = ramp_color(hi > lo ? (v - lo) / (hi - lo) : 0.5);
        break;
      }
    }
  }
}

void DebuggerModel::lane_colors(std::vector<uint32_t>& out) const {
  ab::debugger::lane_colors(lane_state(*source_), color_mode_, watched_, out);
}

LaneGridJob DebuggerModel::grid_job(uint32_t columns) const {
  LaneGridJob job;
  const ExecutionSource& s = *source_;
  job.module_ = source_->program().module;
  job.pcs_ = s.lane_pcs();
  job.depths_ = s.lane_depths();
  job.faulted_ = s.lane_faulted();
  // The registers are the bulk of a lane's state: only the variables the views read are copied,
  // side by side.
  std::vector<int32_t> used;
  if (color_mode_ == ColorMode::Variable) used.push_back(watched_);
  if (group_var_) group_var_->used(used);
  if (filter_) filter_->used(used);
  std::sort(used.begin(), used.end());
  used.erase(std::unique(used.begin(), used.end()), used.end());
  const std::vector<VariableInfo>& vars = module().variables();
  job.offsets_.assign(vars.size(), UINT32_MAX);
  uint32_t words = 0;
  for (int32_t v : used) {
    job.offsets_[v] = words;
    words += vars[v].value_type.words;
  }
  job.words_ = words;
  if (words) {
    const std::vector<uint32_t>& regs = s.registers();
    const size_t stride = s.lanes() ? regs.size() / s.lanes() : 0;
    job.registers_.resize(size_t{words} * s.lanes());
    uint32_t* out = job.registers_.data();
    for (uint32_t lane = 0; lane < s.lanes(); ++lane) {
      const uint32_t* in = regs.data() + lane * stride;
      for (int32_t v : used)
        for (uint32_t k = 0; k < vars[v].value_type.words; ++k)
          *out++ = in[vars[v].offset + k];
    }
  }
  job.columns_ = columns;
  job.color_ = color_mode_;
  job.watched_ = watched_;
  job.group_by_ = group_by_;
  job.group_var_ = group_var_;
  job.filter_ = filter_;
  job.state_epoch_ = epoch_;
  job.settings_epoch_ = settings_;
  return job;
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

std::vector<LegendEntry> DebuggerModel::legend() const {
  std::vector<LegendEntry> out;
  const uint32_t faulted = faulted_lanes();
  switch (color_mode_) {
    case ColorMode::Block: {
      const std::vector<uint32_t> waiting = waiting_per_block();
      for (size_t b = 0; b < waiting.size(); ++b)
        if (waiting[b])
          out.push_back({fmt::format("{} ({})", module().blocks()[b].name, waiting[b]),
                         categorical_color(static_cast<uint32_t>(b))});
      break;
    }
    case ColorMode::Depth: {
      uint32_t max_depth = 1;
      for (uint32_t d : source_->lane_depths())
        max_depth = std::max(max_depth, d);
      out.push_back({"depth 1", ramp_color(0)});
      if (max_depth > 1) out.push_back({fmt::format("depth {}", max_depth), ramp_color(1)});
      break;
    }
    case ColorMode::Error:
      out.push_back({fmt::format("running ({})", live_lanes()), kRunning});
      break;
    case ColorMode::Variable: {
      double lo, hi;
      watch_range(lo, hi);
      out.push_back({fmt::format("{} = {}", watched_name_, lo), ramp_color(0)});
      if (hi > lo) out.push_back({fmt::format("{} = {}", watched_name_, hi), ramp_color(1)});
      break;
    }
  }
  const uint32_t finished = source_->lanes() - live_lanes() - faulted;
  if (color_mode_ != ColorMode::Variable || finished)
    out.push_back({fmt::format("finished ({})", finished), kFinished});
  out.push_back({fmt::format("faulted ({})", faulted), kFaulted});
  return out;
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
    text = fmt::format("lane {}: {} (line {}), depth {}", lane, block_name(pc), block_line(pc),
                       s.lane_depths()[lane]);
  }
  if (color_mode_ == ColorMode::Variable) {
    const VariableInfo& watched = module().variables()[watched_];
    const size_t stride = s.registers().size() / s.lanes();
    text += fmt::format(
        ", {} = {}", watched_name_,
        format_value(watched.value_type, s.registers().data() + lane * stride + watched.offset, 4));
  }
  return text;
}

std::string DebuggerModel::lane_value(uint32_t lane) const {
  const ExecutionSource& s = *source_;
  if (color_mode_ != ColorMode::Variable || lane >= s.lanes()) return "";
  const VariableInfo& watched = module().variables()[watched_];
  const size_t stride = s.registers().size() / s.lanes();
  return format_value(watched.value_type, s.registers().data() + lane * stride + watched.offset, 2);
}

namespace {

// The function called by the call whose return block is `ret`; "" if none.
std::string callee_at_return(const Module& p, int32_t ret) {
  for (const BlockInfo& b : p.blocks())
    if (b.call_entry >= 0 && b.call_return == ret) return p.blocks()[b.call_entry].function;
  return "";
}

}  // namespace

LaneDetails DebuggerModel::lane_details(uint32_t lane) const {
  LaneDetails d;
  d.lane = lane;
  const ExecutionSource& s = *source_;
  if (lane >= s.lanes()) return d;
  const Module& p = module();
  const BatchSnapshot snap = s.snapshot(lane, 1);
  const int32_t pc = snap.pc[0];
  const bool finished = pc == exit_pc();
  d.status = snap.faulted[0] ? "faulted" : finished ? "finished" : "waiting at " + block_name(pc);
  auto frame_of = [&](int32_t block) {
    const BlockInfo& b = p.blocks()[block];
    return Frame{b.function, b.name, block_line(block)};
  };
  if (!finished) {
    d.frames.push_back(frame_of(pc));
    // pc_stack[0] is the exit PC the entry function returns to; above it, return blocks.
    for (uint32_t i = snap.pc_depth[0]; i-- > 1;)
      d.frames.push_back(frame_of(snap.pc_stack[i]));
    // A frame whose function differs from the callee of the call its caller waits in was
    // reached by tail calls; the entry function's frame is the lane's start.
    for (size_t f = 0; f < d.frames.size(); ++f) {
      const std::string called = f + 1 < d.frames.size()
                                     ? callee_at_return(p, snap.pc_stack[snap.pc_depth[0] - 1 - f])
                                     : p.entry();
      d.frames[f].after_tail_calls = !called.empty() && called != d.frames[f].function;
    }
  }
  for (size_t v = 0; v < p.variables().size(); ++v) {
    const VariableInfo& var = p.variables()[v];
    if (var.storage == VariableInfo::Storage::Temp || !var.from_source) continue;
    VariableView view;
    view.name = var.name;
    view.storage = VariableInfo::storage_name(var.storage);
    view.value = format_value(var.value_type, snap.registers.data() + var.offset);
    for (const BatchSnapshot::VarStack& st : snap.stacks) {
      if (st.var != static_cast<int32_t>(v)) continue;
      const uint32_t w = var.value_type.words;
      for (uint32_t i = 0; i < st.depth[0]; ++i)
        view.stack.push_back(format_value(var.value_type, st.words.data() + size_t{i} * w));
    }
    d.variables.push_back(std::move(view));
  }
  const RunResult r = s.result();
  if (snap.faulted[0]) {
    for (const LaneError& e : r.errors)
      if (e.lane == lane)
        d.error = fmt::format("{} in {}, line {}, lane step {}", fault_text(e), e.function, e.line,
                              e.step);
  } else if (finished && !p.output().value_type.is_void()) {
    const ValueType& type = p.output().value_type;
    d.output = format_value(type, r.outputs.data() + size_t{lane} * type.words);
  }
  return d;
}

std::string state_json(const Module& p, const BatchSnapshot& snap) {
  nlohmann::json lanes = nlohmann::json::array();
  const size_t words = snap.lanes ? snap.registers.size() / snap.lanes : 0;
  const std::vector<VariableInfo>& vars = p.variables();
  const auto exit_pc = static_cast<int32_t>(p.blocks().size());
  std::vector<bool> temp_word(words, false);
  for (const VariableInfo& v : vars)
    if (v.storage == VariableInfo::Storage::Temp)
      for (uint32_t k = 0; k < v.value_type.words && v.offset + k < words; ++k)
        temp_word[v.offset + k] = true;
  for (uint32_t lane = 0; lane < snap.lanes; ++lane) {
    nlohmann::json l;
    l["pc"] = snap.pc[lane];
    l["block"] = snap.pc[lane] == exit_pc ? "finished" : p.blocks()[snap.pc[lane]].name;
    l["depth"] = snap.pc_depth[lane];
    const auto pcs = snap.pc_stack.begin() + size_t{lane} * snap.stack_capacity;
    l["pc_stack"] = std::vector<int32_t>(pcs, pcs + snap.pc_depth[lane]);
    // Temporaries hold nothing between blocks: the VM leaves stale words there and Vulkan never
    // stores them, so they are written as 0 and every source dumps the same state.
    std::vector<uint32_t> regs(snap.registers.begin() + lane * words,
                               snap.registers.begin() + (lane + 1) * words);
    for (size_t k = 0; k < temp_word.size() && k < regs.size(); ++k)
      if (temp_word[k]) regs[k] = 0;
    l["registers"] = std::move(regs);
    nlohmann::json stacks = nlohmann::json::object();
    for (const BatchSnapshot::VarStack& st : snap.stacks) {
      const uint32_t w = vars[st.var].value_type.words;
      const auto first = st.words.begin() + size_t{lane} * snap.stack_capacity * w;
      stacks[vars[st.var].name] = std::vector<uint32_t>(first, first + size_t{st.depth[lane]} * w);
    }
    l["stacks"] = std::move(stacks);
    l["lane_steps"] = snap.lane_steps[lane];
    l["faulted"] = snap.faulted[lane] != 0;
    lanes.push_back(std::move(l));
  }
  nlohmann::json out;
  out["step"] = snap.step;
  out["lanes"] = std::move(lanes);
  return out.dump();
}

std::string DebuggerModel::block_ir(int32_t block) const {
  return module().block_ir_text(block);
}

std::string DebuggerModel::block_glsl(int32_t block) const {
  return ab::block_glsl(module(), block);
}

int32_t DebuggerModel::find_block(const std::string& name_or_index) const {
  const std::vector<BlockInfo>& blocks = module().blocks();
  for (size_t b = 0; b < blocks.size(); ++b)
    if (blocks[b].name == name_or_index) return static_cast<int32_t>(b);
  int32_t index = -1;
  auto [ptr, ec] =
      std::from_chars(name_or_index.data(), name_or_index.data() + name_or_index.size(), index);
  if (ec != std::errc() || ptr != name_or_index.data() + name_or_index.size()) return -1;
  return index >= 0 && index < static_cast<int32_t>(blocks.size()) ? index : -1;
}

std::optional<GroupView> DebuggerModel::group_view(uint32_t lane) const {
  const uint32_t width = source_->group_width();
  if (width == 0 || lane >= source_->lanes()) return std::nullopt;
  GroupView g;
  g.group = lane / width;
  g.first_lane = g.group * width;
  const uint32_t end = std::min(source_->lanes(), g.first_lane + width);
  const auto& pcs = source_->lane_pcs();
  const auto& faulted = source_->lane_faulted();
  const int32_t exit = exit_pc();
  for (uint32_t l = g.first_lane; l < end; ++l) {
    g.pcs.push_back(pcs[l]);
    if (faulted[l] || pcs[l] >= exit) continue;
    if (g.next_block < 0 || pcs[l] < g.next_block) g.next_block = pcs[l];
  }
  for (uint32_t l = g.first_lane; l < end; ++l)
    g.lanes_at_next += g.next_block >= 0 && pcs[l] == g.next_block && !faulted[l];
  return g;
}

std::string DebuggerModel::dump_json() const {
  nlohmann::json out;
  out["program"] = source_->program().path;
  out["source"] = source_->describe();
  out["step"] = position();
  out["done"] = source_->done();
  out["next_block"] = block_name(source_->next_block());
  out["live_lanes"] = live_lanes();
  out["faulted_lanes"] = faulted_lanes();
  nlohmann::json bps = nlohmann::json::array();
  for (const Breakpoint& b : breakpoints_)
    bps.push_back(describe(b, module()));
  out["breakpoints"] = std::move(bps);
  out["selected_lane"] = selected_ ? nlohmann::json(*selected_) : nlohmann::json(nullptr);
  out["color"] = color_mode_name(color_mode_);
  out["group"] = group_by_name(group_by_);
  if (group_by_ == GroupBy::Variable) out["group_var"] = group_name_;
  if (filter_) {
    out["filter"] = filter_->text();
    out["filter_count"] = filter_count();
  }
  if (color_mode_ == ColorMode::Variable) out["watched"] = watched_name_;
  if (selected_)
    if (const auto g = group_view(*selected_)) {
      nlohmann::json group;
      group["group"] = g->group;
      group["first_lane"] = g->first_lane;
      group["pcs"] = g->pcs;
      group["next_block"] = block_name(g->next_block);
      group["lanes_at_next"] = g->lanes_at_next;
      out["selected_group"] = std::move(group);
    }
  out["state"] =
      nlohmann::json::parse(state_json(module(), source_->snapshot(0, source_->lanes())));
  return out.dump(1);
}

// ---- the lane grid's views ----

Status DebuggerModel::set_grouping(GroupBy by, const std::string& variable) {
  if (by == GroupBy::Variable) {
    Expected<VariableReader> var = VariableReader::resolve(module(), variable);
    if (!var) return Error{var.error()};
    group_var_ = std::move(*var);
    group_name_ = variable;
  } else {
    group_var_.reset();
    group_name_.clear();
  }
  group_by_ = by;
  ++settings_;
  return Ok{};
}

const LaneGrouping& DebuggerModel::grouping() const {
  const std::pair<uint64_t, uint64_t> now{epoch_, settings_};
  if (grouping_at_ != now) {
    const auto start = std::chrono::steady_clock::now();
    grouping_ = group_lanes(lane_state(*source_), group_by_, group_var_ ? &*group_var_ : nullptr);
    grouping_ms_ = ms_since(start);
    grouping_at_ = now;
  }
  return grouping_;
}

Status DebuggerModel::set_filter(std::string_view text) {
  const size_t first = text.find_first_not_of(" \t");
  if (first == std::string_view::npos || text.substr(first) == "off") {
    filter_.reset();
    ++settings_;
    return Ok{};
  }
  Expected<LaneFilter> parsed = LaneFilter::parse(text, module());
  if (!parsed) return Error{parsed.error()};
  filter_ = std::move(*parsed);
  ++settings_;
  return Ok{};
}

const std::string& DebuggerModel::filter_text() const {
  static const std::string kNone;
  return filter_ ? filter_->text() : kNone;
}

const std::vector<uint8_t>& DebuggerModel::filter_matches() const {
  const std::pair<uint64_t, uint64_t> now{epoch_, settings_};
  if (matches_at_ != now) {
    matches_at_ = now;
    if (!filter_) {
      matches_.clear();
      match_count_ = 0;
    } else {
      const auto start = std::chrono::steady_clock::now();
      match_count_ = filter_->evaluate(lane_state(*source_), matches_);
      filter_ms_ = ms_since(start);
    }
  }
  return matches_;
}

uint32_t DebuggerModel::filter_count() const {
  filter_matches();
  return match_count_;
}

std::optional<uint32_t> DebuggerModel::select_next_match(bool forward) {
  const std::vector<uint8_t>& m = filter_matches();
  const auto lanes = static_cast<uint32_t>(m.size());
  if (!match_count_ || !lanes) return std::nullopt;
  uint32_t lane = selected_ ? *selected_ : (forward ? lanes - 1 : 0);
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
      set_filter("");
      return select_lane(first_lane);
    }
    return Error{fmt::format("the band '{}' has no filter that selects it", b.label)};
  }
  if (Status s = set_filter(b.predicate); !s) return s;
  return select_lane(first_lane);
}

Status DebuggerModel::select_heatmap_cell(uint64_t step, int32_t block) {
  if (block < 0 || block >= exit_pc())
    return Error{fmt::format("no block {} (the program has {})", block, exit_pc())};
  seek(step);
  if (Status s = set_filter("block == " + module().blocks()[block].name); !s) return s;
  if (!filter_count()) return Ok{};
  selected_.reset();
  select_next_match(true);
  return Ok{};
}

std::vector<uint32_t> DebuggerModel::depth_histogram() const {
  return ab::debugger::depth_histogram(lane_state(*source_));
}

}  // namespace ab::debugger
