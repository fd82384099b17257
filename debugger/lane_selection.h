// The selected lane and its strip: the lane's PC and depth at each step since it was selected,
// recorded as the run moves forward (the inspector's strip).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

namespace ab::debugger {

class LaneSelection {
 public:
  struct LaneAt {
    int32_t pc = 0;
    uint32_t depth = 0;
  };

  std::optional<uint32_t> lane() const { return lane_; }
  // Selects `lane` at `step`, where it is at `pc` and `depth`; its strip starts there.
  void select(uint32_t lane, uint64_t step, int32_t pc, uint32_t depth);
  void clear() { lane_.reset(); }
  // Records the selected lane after step `step` ran, when it extends the strip.
  void follow(uint64_t step, const std::vector<int32_t>& pcs, const std::vector<uint32_t>& depths);
  // The lane's PC and depth at steps strip_first(), strip_first() + 1, ...
  uint64_t strip_first() const { return strip_first_; }
  const std::vector<LaneAt>& strip() const { return strip_; }

 private:
  std::optional<uint32_t> lane_;
  uint64_t strip_first_ = 0;
  std::vector<LaneAt> strip_;
};

}  // namespace ab::debugger
