#include "debugger/breakpoints.h"

#include <fmt/format.h>
#include <algorithm>
#include <charconv>
#include <cmath>
#include <sstream>
#include <vector>

#include "autobatch/user_input.h"

namespace ab::debugger {
namespace {

std::vector<std::string> words_of(std::string_view text) {
  std::istringstream in{std::string(text)};
  std::vector<std::string> out;
  for (std::string w; in >> w;)
    out.push_back(w);
  return out;
}

template <typename T>
bool parse_number(const std::string& s, T& out) {
  const char* end = s.data() + s.size();
  auto [ptr, ec] = std::from_chars(s.data(), end, out);
  return ec == std::errc() && ptr == end;
}

}  // namespace

Expected<Breakpoint> parse_breakpoint(std::string_view text, const Module& program,
                                      uint32_t lanes) {
  const std::vector<BlockInfo>& blocks = program.blocks();
  const std::vector<std::string> w = words_of(text);
  const std::string usage =
      "expected one of: block NAME, line L, lane N returns, depth > D, utilization < X, fault, "
      "filter EXPR";
  if (w.empty()) return Error{usage};
  Breakpoint b;
  if (w[0] == "block" && w.size() == 2) {
    for (size_t i = 0; i < blocks.size(); ++i)
      if (blocks[i].name == w[1]) {
        b.kind = Breakpoint::Kind::Block;
        b.block = static_cast<int32_t>(i);
        return b;
      }
    std::string names;
    for (size_t i = 0; i < blocks.size() && i < 12; ++i)
      names += (i ? ", " : "") + blocks[i].name;
    return Error{fmt::format("no block named '{}' (blocks: {}{})", w[1], names,
                             blocks.size() > 12 ? ", ..." : "")};
  }
  if (w[0] == "line" && w.size() == 2) {
    b.kind = Breakpoint::Kind::Line;
    if (!parse_number(w[1], b.line) || b.line <= 0)
      return Error{fmt::format("bad line number '{}'", w[1])};
    return b;
  }
  if (w[0] == "lane" && w.size() == 3 && w[2] == "returns") {
    b.kind = Breakpoint::Kind::LaneReturns;
    if (!parse_number(w[1], b.lane)) return Error{fmt::format("bad lane number '{}'", w[1])};
    if (b.lane >= lanes)
      return Error{fmt::format("lane {} is out of range (the batch has {} lanes)", b.lane, lanes)};
    return b;
  }
  if (w[0] == "depth" && w.size() == 3 && w[1] == ">") {
    b.kind = Breakpoint::Kind::DepthAbove;
    if (!parse_number(w[2], b.depth)) return Error{fmt::format("bad depth '{}'", w[2])};
    return b;
  }
  if (w[0] == "utilization" && w.size() == 3 && w[1] == "<") {
    b.kind = Breakpoint::Kind::UtilizationBelow;
    if (!parse_number(w[2], b.utilization))
      return Error{fmt::format("bad utilization '{}' (a fraction such as 0.5)", excerpt(w[2]))};
    // A NaN threshold would never stop and an infinite one always would.
    if (!std::isfinite(b.utilization))
      return Error{fmt::format("the utilization threshold must be a finite number, not '{}'",
                               excerpt(w[2]))};
    return b;
  }
  if (w[0] == "filter" && w.size() >= 2) {
    const size_t at = text.find("filter") + 6;
    Expected<LaneFilter> f = LaneFilter::parse(text.substr(at), program);
    if (!f) return Error{"filter: " + f.error()};
    b.kind = Breakpoint::Kind::Filter;
    b.filter = std::make_shared<const LaneFilter>(std::move(*f));
    return b;
  }
  if (w[0] == "fault" && w.size() == 1) {
    b.kind = Breakpoint::Kind::Fault;
    return b;
  }
  return Error{fmt::format("unknown breakpoint '{}': {}", text, usage)};
}

std::string describe(const Breakpoint& b, const Module& program) {
  switch (b.kind) {
    case Breakpoint::Kind::Block:
      return "block " + program.blocks().at(b.block).name;
    case Breakpoint::Kind::Line:
      return fmt::format("line {}", b.line);
    case Breakpoint::Kind::LaneReturns:
      return fmt::format("lane {} returns", b.lane);
    case Breakpoint::Kind::DepthAbove:
      return fmt::format("depth > {}", b.depth);
    case Breakpoint::Kind::UtilizationBelow:
      return fmt::format("utilization < {}", b.utilization);
    case Breakpoint::Kind::Fault:
      return "fault";
    case Breakpoint::Kind::Filter:
      return "filter " + (b.filter ? b.filter->text() : std::string());
  }
  return "?";
}

bool breakpoint_holds(const Breakpoint& b, const ExecutionSource& s, bool all_lanes) {
  const auto exit = static_cast<int32_t>(s.program().module->blocks().size());
  switch (b.kind) {
    case Breakpoint::Kind::Block:
      return s.next_block() == b.block;
    case Breakpoint::Kind::Line: {
      const int32_t next = s.next_block();
      if (next < 0) return false;
      const std::vector<int>& lines = s.program().module->blocks()[next].lines;
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
      uint32_t ended = 0, live = 0;
      for (uint32_t lane : ran)
        ended += s.lane_pcs()[lane] == exit;
      for (int32_t pc : s.lane_pcs())
        live += pc != exit;
      const double live_before = live + ended;
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

void BreakpointList::remove(size_t index) {
  if (index < items_.size()) items_.erase(items_.begin() + index);
}

void BreakpointList::toggle_line(int line) {
  auto at = std::find_if(items_.begin(), items_.end(), [&](const Breakpoint& b) {
    return b.kind == Breakpoint::Kind::Line && b.line == line;
  });
  if (at != items_.end()) {
    items_.erase(at);
    return;
  }
  Breakpoint b;
  b.kind = Breakpoint::Kind::Line;
  b.line = line;
  items_.push_back(b);
}

std::vector<int> BreakpointList::hits(const ExecutionSource& source) const {
  std::vector<int> out;
  for (size_t i = 0; i < items_.size(); ++i)
    if (items_[i].enabled && breakpoint_holds(items_[i], source))
      out.push_back(static_cast<int>(i));
  return out;
}

int BreakpointList::first_hit(const ExecutionSource& source, bool all_lanes) const {
  for (size_t i = 0; i < items_.size(); ++i)
    if (items_[i].enabled && breakpoint_holds(items_[i], source, all_lanes))
      return static_cast<int>(i);
  return -1;
}

}  // namespace ab::debugger
