// The lane grid's derived views at any batch size, as plain data with no window: lanes grouped
// into labelled bands (by block, depth, fault state or a variable's value), the grid layout that
// starts each band on a row of its own, the stack depth histogram, and the block x step heatmap
// of where lanes ran and waited. Each is O(lanes) or better per state; DebuggerModel caches them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "debugger/lane_filter.h"

namespace ab::debugger {

enum class GroupBy : uint8_t { None, Block, Depth, Fault, Variable };
const char* group_by_name(GroupBy by);  // "none", "block", "depth", "fault", "var"

struct Band {
  std::string label;   // "fib.b0", "depth 4", "n = 7", "n in [3, 5)", "finished", "faulted"
  uint32_t first = 0;  // its lanes are order[first, first + count)
  uint32_t count = 0;
  std::string predicate;  // a filter that selects exactly its lanes ("" when none can)
};

struct LaneGrouping {
  GroupBy by = GroupBy::None;
  std::vector<uint32_t> order;  // every lane once, band by band, lane order within a band
  std::vector<Band> bands;      // non-empty bands; one "all lanes" band for GroupBy::None
};

// Groups the lanes: Block, one band per block with lanes waiting (in block order); Depth, one per
// call depth of the live lanes; Fault, running / finished / faulted; Variable (`variable` set),
// one band per value when there are at most 24 distinct values, else 16 equal ranges, then the
// live lanes whose frame has no such variable. Every grouping but None ends with the finished
// and the faulted lanes' bands.
LaneGrouping group_lanes(const LaneState& state, GroupBy by,
                         const VariableReader* variable = nullptr);

// The grid: `columns` cells a row, each band starting on a new row.
struct GridLayout {
  static constexpr uint32_t kEmpty = UINT32_MAX;
  uint32_t columns = 0, rows = 0;
  std::vector<uint32_t> cell_lane;  // [row * columns + column]: a lane or kEmpty
  std::vector<uint32_t> lane_cell;  // [lane]: its cell
  std::vector<uint32_t> band_row;   // [band]: its first row
  std::vector<uint32_t> band_rows;  // [band]: how many rows it takes
};
// Columns for about `aspect` (width / height) with every lane in one square cell.
uint32_t grid_columns(uint32_t lanes, float aspect);
GridLayout layout_grid(const LaneGrouping& grouping, uint32_t lanes, uint32_t columns);

// [depth] live lanes (not finished, not faulted) at that call depth.
std::vector<uint32_t> depth_histogram(const LaneState& state);

// Where lanes ran and waited, block by step: for each recorded step, the lanes waiting at each
// block before it ran, and the lanes of each block that ran it. Rows hold 1 step at first; when
// they outgrow the budget, neighbouring rows are summed and a row holds twice as many steps.
class BlockHeatmap {
 public:
  void reset(uint32_t blocks, size_t budget_bytes = size_t{64} << 20);
  uint32_t blocks() const { return blocks_; }
  uint64_t steps() const { return steps_; }  // steps recorded: [0, steps())
  uint64_t steps_per_row() const { return per_row_; }
  size_t bytes() const { return (waiting_.size() + ran_.size()) * sizeof(uint64_t); }
  // Records step steps(): waiting[b] and ran[b] for every block.
  void push(const std::vector<uint32_t>& waiting, const std::vector<uint32_t>& ran);
  // Mean lanes per step over [begin, end) (clamped to whole rows), one value per block.
  void range(uint64_t begin, uint64_t end, std::vector<double>& waiting,
             std::vector<double>& ran) const;

 private:
  void halve();
  uint32_t blocks_ = 0;
  size_t budget_ = 0;
  uint64_t steps_ = 0, per_row_ = 1;
  std::vector<uint64_t> waiting_, ran_;  // [row * blocks_ + block]
};

// The lane grid's zoom and pan, in cells: `zoom` 1 fits the whole grid; (center_x, center_y) is
// the cell at the middle of the view (negative: the grid's middle). `cell_pixels` > 0 asks the
// window for that cell size at its next frame (the window knows the fitted size; the script's
// `zoom lane N` asks for cells big enough to print each lane's value).
struct GridView {
  double zoom = 1;
  double center_x = -1, center_y = -1;
  double cell_pixels = 0;
  int64_t center_lane = -1;  // >= 0: centre on this lane's cell at the next frame
};

}  // namespace ab::debugger
