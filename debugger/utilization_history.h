// Active lanes per scheduler step, for the utilization plot. Stores each step's count in as few
// bytes as the batch size allows (1, 2 or 4) and keeps a min/max/sum pyramid over blocks of 16,
// 256, 4096, ... steps, so aggregating any step range costs O(16 * levels) no matter how long
// the run: a plot over millions of steps asks for one aggregate per pixel column.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace ab::debugger {

struct StepAggregate {
  uint32_t min = 0, max = 0;
  uint64_t sum = 0, count = 0;
  double mean() const { return count ? static_cast<double>(sum) / static_cast<double>(count) : 0; }
};

class UtilizationHistory {
 public:
  explicit UtilizationHistory(uint32_t lanes = 0) { reset(lanes); }
  void reset(uint32_t lanes);

  uint32_t lanes() const { return lanes_; }
  uint64_t size() const { return size_; }
  // Appends the count of the next step.
  void push(uint32_t active);
  uint32_t at(uint64_t step) const;
  size_t bytes() const;

  // Aggregate over steps [begin, end) (clamped to the recorded steps).
  StepAggregate range(uint64_t begin, uint64_t end) const;
  // `columns` aggregates splitting [begin, end) evenly (a column may be empty when zoomed in
  // past one step per column: count == 0).
  std::vector<StepAggregate> columns(uint64_t begin, uint64_t end, uint32_t columns) const;

  static constexpr uint32_t kFanout = 16;

 private:
  struct Level {
    std::vector<uint32_t> min, max;
    std::vector<uint64_t> sum;
  };
  void add_to(StepAggregate& a, uint32_t level, uint64_t index) const;

  uint32_t lanes_ = 0;
  uint32_t width_ = 1;  // bytes per step
  uint64_t size_ = 0;
  std::vector<uint8_t> counts_;
  std::vector<Level> levels_;  // levels_[k] covers blocks of 16^(k+1) steps, complete ones only
  StepAggregate pending_;      // the incomplete block of level 0 (and its parents are derived)
};

}  // namespace ab::debugger
