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

#include "autobatch/expected.h"
#include "autobatch/module.h"
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

}  // namespace ab::debugger
