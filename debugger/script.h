// The scripted mode: a text file of debugger commands, one per line, run against the model.
//
//   step [N]               run N steps (default 1), ignoring breakpoints
//   break line L | block NAME | lane N returns | depth > D | utilization < X | fault
//         | filter [EXPR]  (without EXPR: the current filter)
//   continue               run until a breakpoint hits or the run ends
//   back [N]               go back N steps (default 1)
//   seek S                 go to step S
//   select lane N | select band K   (a band of the grouping: its lanes become the filter)
//   color block | depth | error | var NAME
//   group block | depth | fault | var NAME | none   lay the lane grid out in bands; logs them
//   filter EXPR | off | next | prev   the lane filter (lane_filter.h); logs "N lanes match"
//   histogram              log the live lanes per call depth
//   zoom fit | FACTOR | lane N        the lane grid's zoom (lane N: one lane per cell, centred)
//   heatmap waiting | ran | STEP BLOCK   the heatmap's measure, or a cell: seek STEP, filter BLOCK
//   show ir BLOCK | show glsl BLOCK   log a block's lowered IR or generated GLSL (name or index)
//   show group [LANE]      log the group of LANE (default: the selected lane, else 0): its
//                          lanes' blocks and its next block (local schedule only)
//   screenshot FILE.png    (needs the window)
//   dump FILE.json         the model's state (DebuggerModel::dump_json)
//   save FILE.abtrace [FIRST LAST]   record a trace of steps [FIRST, LAST) (default: all so far)
//   frames N               render N frames and log the mean frame time (needs the window)
//   quit
// Blank lines and lines starting with '#' are skipped. Each command logs one line; the first
// bad command stops the script with "FILE:LINE: message".
#pragma once

#include <functional>
#include <ostream>
#include <string>

#include "debugger/model.h"

namespace ab::debugger {

struct ScriptHooks {
  // Writes a PNG of the window. Unset: screenshots are refused.
  std::function<Status(const std::string& path)> screenshot;
  // Records steps [first, last) to a trace file.
  std::function<Status(const std::string& path, uint64_t first, uint64_t last)> save_trace;
  // Renders n frames; returns a log line (the mean frame time) or "error: ...".
  std::function<std::string(uint64_t n)> frames;
};

// True if the script uses a command that needs the window.
bool script_needs_window(const std::string& text);

// Runs the script; returns 0, or 1 after the first failing command.
int run_script(DebuggerModel& model, const std::string& text, const std::string& name,
               const ScriptHooks& hooks, std::ostream& log, std::ostream& errors);

}  // namespace ab::debugger
