#include "debugger/breakpoints.h"

#include <fmt/format.h>
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

}  // namespace ab::debugger
