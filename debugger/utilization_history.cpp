#include "debugger/utilization_history.h"

#include <algorithm>
#include <cstring>

namespace ab::debugger {

void UtilizationHistory::reset(uint32_t lanes) {
  lanes_ = lanes;
  width_ = lanes <= 0xff ? 1 : lanes <= 0xffff ? 2 : 4;
  size_ = 0;
  counts_.clear();
  levels_.clear();
}

uint32_t UtilizationHistory::at(uint64_t step) const {
  uint32_t v = 0;
  std::memcpy(&v, counts_.data() + step * width_, width_);  // little-endian host
  return v;
}

size_t UtilizationHistory::bytes() const {
  size_t n = counts_.size();
  for (const Level& l : levels_)
    n += l.min.size() * 16;
  return n;
}

void UtilizationHistory::push(uint32_t active) {
  const size_t at_byte = counts_.size();
  counts_.resize(at_byte + width_);
  std::memcpy(counts_.data() + at_byte, &active, width_);
  ++size_;
  // Complete every pyramid block that this step closes, bottom up.
  uint64_t n = size_;
  for (uint32_t level = 0; n % kFanout == 0; ++level, n /= kFanout) {
    if (levels_.size() <= level) levels_.emplace_back();
    const uint64_t block = n / kFanout - 1;  // index of the completed block at this level
    StepAggregate a;
    a.min = UINT32_MAX;
    for (uint64_t child = block * kFanout; child < (block + 1) * kFanout; ++child)
      add_to(a, level, child);
    Level& l = levels_[level];
    l.min.push_back(a.min);
    l.max.push_back(a.max);
    l.sum.push_back(a.sum);
  }
}

// Adds element `index` of level `level` (level 0: raw steps; level k: levels_[k-1] blocks).
void UtilizationHistory::add_to(StepAggregate& a, uint32_t level, uint64_t index) const {
  uint32_t lo, hi;
  uint64_t sum, count = 1;
  if (level == 0) {
    lo = hi = at(index);
    sum = lo;
  } else {
    const Level& l = levels_[level - 1];
    lo = l.min[index];
    hi = l.max[index];
    sum = l.sum[index];
    for (uint32_t k = 0; k < level; ++k)
      count *= kFanout;
  }
  if (a.count == 0) {
    a.min = lo;
    a.max = hi;
  } else {
    a.min = std::min(a.min, lo);
    a.max = std::max(a.max, hi);
  }
  a.sum += sum;
  a.count += count;
}

StepAggregate UtilizationHistory::range(uint64_t begin, uint64_t end) const {
  StepAggregate a;
  end = std::min(end, size_);
  if (begin >= end) return a;
  // Walk up the pyramid: peel off elements that do not start or end on a parent's boundary,
  // then continue with the parents covering the middle.
  uint32_t level = 0;
  while (begin < end) {
    const bool has_parent = level < levels_.size();
    if (!has_parent) {
      for (; begin < end; ++begin)
        add_to(a, level, begin);
      break;
    }
    while (begin < end && begin % kFanout != 0)
      add_to(a, level, begin++);
    while (begin < end && end % kFanout != 0)
      add_to(a, level, --end);
    begin /= kFanout;
    end /= kFanout;
    ++level;
  }
  return a;
}

std::vector<StepAggregate> UtilizationHistory::columns(uint64_t begin, uint64_t end,
                                                       uint32_t columns) const {
  std::vector<StepAggregate> out(columns);
  if (columns == 0 || end <= begin) return out;
  const double per_column = static_cast<double>(end - begin) / columns;
  for (uint32_t c = 0; c < columns; ++c) {
    const uint64_t a = begin + static_cast<uint64_t>(c * per_column);
    uint64_t b = begin + static_cast<uint64_t>((c + 1) * per_column);
    if (c + 1 == columns) b = end;
    out[c] = range(a, b);
  }
  return out;
}

}  // namespace ab::debugger
