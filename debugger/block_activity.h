// Where lanes wait and which blocks ran, followed step by step as the timeline moves: the lanes
// waiting at each block, how many steps ran each block, and the block x step heatmap. Following a
// step costs O(lanes that ran); a jump (a restored checkpoint) recounts from the state.
#pragma once

#include <cstdint>
#include <vector>

#include "debugger/execution_source.h"
#include "debugger/lane_views.h"

namespace ab::debugger {

class BlockActivity {
 public:
  explicit BlockActivity(uint32_t blocks) : blocks_(blocks) { heatmap_.reset(blocks); }

  // Follows the source to its new state: from the lanes that ran the last step, or, after a jump
  // (or when the lane count changed), by recounting every lane. Returns whether it followed a
  // step.
  bool follow(const ExecutionSource& source, bool jumped);

  const std::vector<uint32_t>& waiting() const { return waiting_; }  // [block] lanes waiting
  // [block] steps that ran it so far (RunStats::block_executions, followed step by step); empty
  // for sources that do not count them.
  const std::vector<uint64_t>& executions() const { return executions_; }
  // Block x step counts of every step run so far (each step recorded the first time it ran).
  const BlockHeatmap& heatmap() const { return heatmap_; }
  // The heatmap shows the lanes that waited at each block (default) or those that ran it.
  void set_heatmap_shows_ran(bool ran) { heatmap_ran_ = ran, ++version_; }
  bool heatmap_shows_ran() const { return heatmap_ran_; }
  uint64_t version() const { return version_; }  // bumped by every view setting

 private:
  uint32_t blocks_;
  std::vector<int32_t> prev_pcs_;  // each lane's PC after the last step followed
  std::vector<uint32_t> waiting_, ran_;
  std::vector<uint64_t> executions_;
  BlockHeatmap heatmap_;
  bool heatmap_ran_ = false;
  uint64_t version_ = 0;
};

}  // namespace ab::debugger
