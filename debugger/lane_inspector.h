// The inspector's views of single lanes as plain data: a lane's status, call stack, variables
// (with their stacked values) and output or fault; the local schedule's group of a lane; and every
// lane's state as JSON for dumps.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "debugger/execution_source.h"

namespace ab::debugger {

struct Frame {
  std::string function;
  std::string block;
  int line = 0;
  // This frame's function is not the one its caller called: tail calls (docs/language.md)
  // replaced the frames between them.
  bool after_tail_calls = false;
};

struct VariableView {
  std::string name;                // "fib.n"
  std::string storage;             // "register" or "stacked"
  std::string value;               // current register value
  std::vector<std::string> stack;  // stacked values, bottom first
};

struct LaneDetails {
  uint32_t lane = 0;
  std::string status;         // "waiting at fib.b2", "finished", "faulted"
  std::vector<Frame> frames;  // innermost first
  std::vector<VariableView> variables;
  std::string output;  // finished lanes
  std::string error;   // faulted lanes: "division by zero in divide, line 7, step 12"
};

// The lane inspector's view of `lane` in the source's current state (only `lane` set for a
// lane out of range).
LaneDetails lane_details(const ExecutionSource& source, uint32_t lane);

// The local schedule's view of one group between dispatches: its lanes' PCs and the block the
// group runs next (its own min-PC rule).
struct GroupView {
  uint32_t group = 0;
  uint32_t first_lane = 0;  // lanes [first_lane, first_lane + pcs.size())
  std::vector<int32_t> pcs;
  int32_t next_block = -1;  // -1 when every lane of the group has finished or faulted
  uint32_t lanes_at_next = 0;
};

// The group of `lane` when the source schedules lanes in groups (local schedule), else none.
std::optional<GroupView> group_view(const ExecutionSource& source, uint32_t lane);

// Every lane's state as JSON, with stacks cut to their live entries so that equal states give
// equal text whatever the stacks' capacity: {"step", "lanes": [{"pc", "block", "depth",
// "pc_stack", "registers", "stacks", "lane_steps", "faulted"}...]}.
std::string state_json(const Module& program, const BatchSnapshot& snapshot);

}  // namespace ab::debugger
