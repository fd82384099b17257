// Breakpoints: where `continue` stops. Each is checked after every step against the state the
// step left (the next block to run, and the lanes that just ran).
//
//   block NAME         the next step runs block NAME (a lowered block name, e.g. "fib.b2")
//   line L             the next step runs a block with code on source line L
//   lane N returns     lane N finished its entry function in the last step (without a fault)
//   depth > D          some lane is deeper than D calls
//   utilization < X    the last step ran fewer than X (0..1) of the lanes still running
//   fault              some lane faulted in the last step
//   filter EXPR        some lane matches the lane filter EXPR (lane_filter.h), e.g.
//                      `filter n > 15 && depth < 4`
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "autobatch/expected.h"
#include "autobatch/module.h"
#include "debugger/execution_source.h"
#include "debugger/lane_filter.h"

namespace ab::debugger {

struct Breakpoint {
  enum class Kind : uint8_t {
    Block,
    Line,
    LaneReturns,
    DepthAbove,
    UtilizationBelow,
    Fault,
    Filter
  };
  Kind kind = Kind::Block;
  int32_t block = -1;                        // Block
  int line = 0;                              // Line
  uint32_t lane = 0;                         // LaneReturns
  uint32_t depth = 0;                        // DepthAbove
  double utilization = 0;                    // UtilizationBelow
  std::shared_ptr<const LaneFilter> filter;  // Filter
  bool enabled = true;

  bool operator==(const Breakpoint&) const = default;
};

// Parses the forms above (the text after `break`), resolving block names in `program`.
// Returns the breakpoint or an error message.
Expected<Breakpoint> parse_breakpoint(std::string_view text, const Module& program, uint32_t lanes);

// The breakpoint in the same words the parser takes: "line 4", "lane 17 returns", ...
std::string describe(const Breakpoint& b, const Module& program);

// Whether `b` holds in the state the source's last step left. A filter breakpoint looks at every
// lane when `all_lanes`, else only at the lanes that ran (the others are as they were).
bool breakpoint_holds(const Breakpoint& b, const ExecutionSource& source, bool all_lanes = true);

// The breakpoints the user set, in order; `continue` stops at the first enabled one that holds.
class BreakpointList {
 public:
  void add(const Breakpoint& b) { items_.push_back(b); }
  void remove(size_t index);  // ignores an index out of range
  // Removes the line breakpoint on `line`, or adds one if there is none (the source view's click).
  void toggle_line(int line);
  // Indices of the enabled breakpoints that hold in the source's current state.
  std::vector<int> hits(const ExecutionSource& source) const;
  // The first enabled breakpoint that holds, or -1.
  int first_hit(const ExecutionSource& source, bool all_lanes) const;

  size_t size() const { return items_.size(); }
  bool empty() const { return items_.empty(); }
  Breakpoint& operator[](size_t i) { return items_[i]; }
  const Breakpoint& operator[](size_t i) const { return items_[i]; }
  const Breakpoint& back() const { return items_.back(); }
  std::vector<Breakpoint>::iterator begin() { return items_.begin(); }
  std::vector<Breakpoint>::iterator end() { return items_.end(); }
  std::vector<Breakpoint>::const_iterator begin() const { return items_.begin(); }
  std::vector<Breakpoint>::const_iterator end() const { return items_.end(); }

 private:
  std::vector<Breakpoint> items_;
};

}  // namespace ab::debugger
