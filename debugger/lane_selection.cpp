#include "debugger/lane_selection.h"

namespace ab::debugger {

void LaneSelection::select(uint32_t lane, uint64_t step, int32_t pc, uint32_t depth) {
  lane_ = lane;
  strip_first_ = step;
  strip_ = {{pc, depth}};
}

void LaneSelection::follow(uint64_t step, const std::vector<int32_t>& pcs,
                           const std::vector<uint32_t>& depths) {
  if (lane_ && step == strip_first_ + strip_.size())
    strip_.push_back({pcs[*lane_], depths[*lane_]});
}

}  // namespace ab::debugger
