// Liveness of a function's variables over its Figure 2 CFG (classic backward dataflow).
// Return makes the function's result variable live; ops read their args and write dst (Set reads
// its own source, so a partial write keeps the rest of the aggregate live).
#pragma once

#include <vector>

#include "ir/ir.h"

namespace ab {

struct Liveness {
  // live_in[b][v] / live_out[b][v]: variable v is live at the start / end of block b.
  std::vector<std::vector<bool>> live_in, live_out;
  // live_after[b][i][v]: v is live just after op i of block b (before the terminator for the last).
  std::vector<std::vector<std::vector<bool>>> live_after;
};

Liveness compute_liveness(const Function& fn);

// Successor blocks of a terminator.
std::vector<int> successors(const Terminator& t);

}  // namespace ab
