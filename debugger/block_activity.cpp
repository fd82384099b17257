#include "debugger/block_activity.h"

namespace ab::debugger {

bool BlockActivity::follow(const ExecutionSource& s, bool jumped) {
  const std::vector<int32_t>& pcs = s.lane_pcs();
  const auto exit = static_cast<int32_t>(blocks_);
  if (jumped || prev_pcs_.size() != pcs.size()) {
    prev_pcs_ = pcs;
    waiting_.assign(blocks_, 0);
    for (int32_t pc : pcs)
      if (pc >= 0 && pc < exit) ++waiting_[pc];
    executions_ = s.result().stats.block_executions;
    return false;
  }
  // Only the lanes that ran can have moved: O(active lanes) per step.
  const std::vector<uint32_t>& ran = s.last_active();
  ran_.assign(blocks_, 0);
  for (uint32_t lane : ran)
    if (prev_pcs_[lane] >= 0 && prev_pcs_[lane] < exit) ++ran_[prev_pcs_[lane]];
  if (heatmap_.steps() + 1 == s.steps()) heatmap_.push(waiting_, ran_);
  // A block ran once more in this step if any lane ran it (sources that count no executions,
  // the local schedule's, report none).
  if (executions_.size() == blocks_)
    for (size_t b = 0; b < blocks_; ++b)
      executions_[b] += ran_[b] > 0;
  for (uint32_t lane : ran) {
    const int32_t from = prev_pcs_[lane], to = pcs[lane];
    if (from == to) continue;
    if (from >= 0 && from < exit) --waiting_[from];
    if (to >= 0 && to < exit) ++waiting_[to];
    prev_pcs_[lane] = to;
  }
  return true;
}

}  // namespace ab::debugger
