#include "debugger/lane_views.h"

#include <fmt/format.h>
#include <algorithm>
#include <cmath>

namespace ab::debugger {

const char* group_by_name(GroupBy by) {
  switch (by) {
    case GroupBy::None:
      return "none";
    case GroupBy::Block:
      return "block";
    case GroupBy::Depth:
      return "depth";
    case GroupBy::Fault:
      return "fault";
    case GroupBy::Variable:
      return "var";
  }
  return "?";
}

namespace {

// A value as the filter reads it back exactly ("7", "2.5", "1e+30").
std::string number_text(double v) {
  return fmt::format("{}", v);
}

// Counting sort of the lanes by key[lane] into bands (keys with no lanes are dropped).
void bucket(const std::vector<uint32_t>& key, std::vector<Band> bands, LaneGrouping& out) {
  std::vector<uint32_t> start(bands.size() + 1, 0);
  for (uint32_t k : key)
    ++start[k + 1];
  for (size_t b = 0; b < bands.size(); ++b) {
    bands[b].count = start[b + 1];
    start[b + 1] += start[b];
    bands[b].first = start[b];
  }
  out.order.resize(key.size());
  for (uint32_t lane = 0; lane < key.size(); ++lane)
    out.order[start[key[lane]]++] = lane;
  for (Band& b : bands)
    if (b.count) out.bands.push_back(std::move(b));
}

}  // namespace

LaneGrouping group_lanes(const LaneState& s, GroupBy by, const VariableReader* variable) {
  LaneGrouping out;
  out.by = by;
  if (by == GroupBy::Variable && !variable) by = out.by = GroupBy::None;
  if (by == GroupBy::None) {
    out.order.resize(s.lanes);
    for (uint32_t lane = 0; lane < s.lanes; ++lane)
      out.order[lane] = lane;
    out.bands.push_back({"all lanes", 0, s.lanes, ""});
    return out;
  }
  std::vector<uint32_t> key(s.lanes);
  std::vector<Band> bands;
  // The last two bands of every grouping: finished, then faulted.
  auto tail = [&](std::vector<Band>& b) {
    b.push_back({"finished", 0, 0, "finished"});
    b.push_back({"faulted", 0, 0, "fault"});
  };
  const auto finished_key = [&] { return static_cast<uint32_t>(bands.size() - 2); };
  switch (by) {
    case GroupBy::Block: {
      for (int32_t b = 0; b < s.exit_pc; ++b) {
        const std::string& name = s.module->blocks()[b].name;
        bands.push_back({name, 0, 0, "block == " + name});
      }
      tail(bands);
      const uint32_t fin = finished_key();
      for (uint32_t lane = 0; lane < s.lanes; ++lane)
        key[lane] = s.faulted[lane] ? fin + 1
                    : s.pcs[lane] >= 0 && s.pcs[lane] < s.exit_pc
                        ? static_cast<uint32_t>(s.pcs[lane])
                        : fin;
      break;
    }
    case GroupBy::Depth: {
      uint32_t max_depth = 0;
      for (uint32_t lane = 0; lane < s.lanes; ++lane)
        if (s.is_live(lane)) max_depth = std::max(max_depth, s.depths[lane]);
      for (uint32_t d = 0; d <= max_depth; ++d)
        bands.push_back({fmt::format("depth {}", d), 0, 0, fmt::format("live && depth == {}", d)});
      tail(bands);
      const uint32_t fin = finished_key();
      for (uint32_t lane = 0; lane < s.lanes; ++lane)
        key[lane] = s.faulted[lane] ? fin + 1 : s.is_finished(lane) ? fin : s.depths[lane];
      break;
    }
    case GroupBy::Fault: {
      bands.push_back({"running", 0, 0, "live"});
      tail(bands);
      for (uint32_t lane = 0; lane < s.lanes; ++lane)
        key[lane] = s.faulted[lane] ? 2 : s.is_finished(lane) ? 1 : 0;
      break;
    }
    case GroupBy::Variable: {
      const std::string& name = variable->name();
      std::vector<double> values(s.lanes);
      std::vector<double> distinct;
      double lo = INFINITY, hi = -INFINITY;
      constexpr size_t kMaxDistinct = 24;
      for (uint32_t lane = 0; lane < s.lanes; ++lane) {
        const double v = s.is_live(lane) ? variable->read(s, lane) : NAN;
        values[lane] = v;
        if (std::isnan(v)) continue;
        lo = std::min(lo, v);
        hi = std::max(hi, v);
        if (distinct.size() <= kMaxDistinct &&
            std::find(distinct.begin(), distinct.end(), v) == distinct.end())
          distinct.push_back(v);
      }
      std::sort(distinct.begin(), distinct.end());
      const bool ranges = distinct.size() > kMaxDistinct;
      constexpr uint32_t kRanges = 16;
      uint32_t value_bands = 0;
      if (!ranges) {
        for (double v : distinct)
          bands.push_back({fmt::format("{} = {}", name, number_text(v)), 0, 0,
                           fmt::format("{} == {}", name, number_text(v))});
        value_bands = static_cast<uint32_t>(distinct.size());
      } else {
        const double width = (hi - lo) / kRanges;
        for (uint32_t r = 0; r < kRanges; ++r) {
          const double a = lo + width * r, b = r + 1 == kRanges ? hi : lo + width * (r + 1);
          const bool last = r + 1 == kRanges;
          bands.push_back({fmt::format("{} in [{}, {}{}", name, number_text(a), number_text(b),
                                       last ? "]" : ")"),
                           0, 0,
                           fmt::format("{} >= {} && {} {} {}", name, number_text(a), name,
                                       last ? "<=" : "<", number_text(b))});
        }
        value_bands = kRanges;
      }
      bands.push_back({fmt::format("no {} here", name), 0, 0, ""});
      tail(bands);
      const uint32_t none = value_bands, fin = none + 1;
      for (uint32_t lane = 0; lane < s.lanes; ++lane) {
        const double v = values[lane];
        if (s.faulted[lane]) {
          key[lane] = fin + 1;
        } else if (s.is_finished(lane)) {
          key[lane] = fin;
        } else if (std::isnan(v)) {
          key[lane] = none;
        } else if (!ranges) {
          key[lane] = static_cast<uint32_t>(std::lower_bound(distinct.begin(), distinct.end(), v) -
                                            distinct.begin());
        } else {
          // The same bounds the predicates state: [a, b) with a = lo + width * r.
          const double width = (hi - lo) / kRanges;
          uint32_t r = std::min<uint32_t>(kRanges - 1, static_cast<uint32_t>((v - lo) / width));
          while (r > 0 && v < lo + width * r)
            --r;
          while (r + 1 < kRanges && v >= lo + width * (r + 1))
            ++r;
          key[lane] = r;
        }
      }
      break;
    }
    case GroupBy::None:
      break;
  }
  bucket(key, std::move(bands), out);
  return out;
}

uint32_t grid_columns(uint32_t lanes, float aspect) {
  lanes = std::max(1u, lanes);
  const auto columns = static_cast<uint32_t>(std::ceil(std::sqrt(lanes * std::max(0.1f, aspect))));
  return std::clamp(columns, 1u, lanes);
}

GridLayout layout_grid(const LaneGrouping& g, uint32_t lanes, uint32_t columns) {
  GridLayout out;
  out.columns = std::max(1u, columns);
  for (const Band& b : g.bands) {
    out.band_row.push_back(out.rows);
    const uint32_t rows = (b.count + out.columns - 1) / out.columns;
    out.band_rows.push_back(rows);
    out.rows += rows;
  }
  out.rows = std::max(1u, out.rows);
  out.cell_lane.assign(size_t{out.columns} * out.rows, GridLayout::kEmpty);
  out.lane_cell.assign(lanes, 0);
  for (size_t b = 0; b < g.bands.size(); ++b) {
    const size_t base = size_t{out.band_row[b]} * out.columns;
    const Band& band = g.bands[b];
    for (uint32_t i = 0; i < band.count; ++i) {
      const uint32_t lane = g.order[band.first + i];
      out.cell_lane[base + i] = lane;
      out.lane_cell[lane] = static_cast<uint32_t>(base + i);
    }
  }
  return out;
}

std::vector<uint32_t> depth_histogram(const LaneState& s) {
  std::vector<uint32_t> out;
  for (uint32_t lane = 0; lane < s.lanes; ++lane) {
    if (!s.is_live(lane)) continue;
    const uint32_t d = s.depths[lane];
    if (out.size() <= d) out.resize(d + 1, 0);
    ++out[d];
  }
  return out;
}

void BlockHeatmap::reset(uint32_t blocks, size_t budget_bytes) {
  blocks_ = blocks;
  budget_ = std::max<size_t>(budget_bytes, size_t{blocks} * 64);
  steps_ = 0;
  per_row_ = 1;
  waiting_.clear();
  ran_.clear();
}

void BlockHeatmap::push(const std::vector<uint32_t>& waiting, const std::vector<uint32_t>& ran) {
  const uint64_t row = steps_ / per_row_;
  if (waiting_.size() <= row * blocks_) {
    waiting_.resize((row + 1) * blocks_, 0);
    ran_.resize((row + 1) * blocks_, 0);
  }
  for (uint32_t b = 0; b < blocks_; ++b) {
    waiting_[row * blocks_ + b] += b < waiting.size() ? waiting[b] : 0;
    ran_[row * blocks_ + b] += b < ran.size() ? ran[b] : 0;
  }
  ++steps_;
  if (bytes() > budget_) halve();
}

void BlockHeatmap::halve() {
  const size_t rows = blocks_ ? waiting_.size() / blocks_ : 0;
  const size_t half = (rows + 1) / 2;
  for (size_t r = 0; r < half; ++r)
    for (uint32_t b = 0; b < blocks_; ++b) {
      const size_t a = 2 * r * blocks_ + b, c = (2 * r + 1) * blocks_ + b;
      waiting_[r * blocks_ + b] = waiting_[a] + (2 * r + 1 < rows ? waiting_[c] : 0);
      ran_[r * blocks_ + b] = ran_[a] + (2 * r + 1 < rows ? ran_[c] : 0);
    }
  waiting_.resize(half * blocks_);
  ran_.resize(half * blocks_);
  per_row_ *= 2;
}

void BlockHeatmap::range(uint64_t begin, uint64_t end, std::vector<double>& waiting,
                         std::vector<double>& ran) const {
  waiting.assign(blocks_, 0);
  ran.assign(blocks_, 0);
  end = std::min(end, steps_);
  if (begin >= end) return;
  const uint64_t first = begin / per_row_, last = (end - 1) / per_row_;
  for (uint64_t r = first; r <= last; ++r)
    for (uint32_t b = 0; b < blocks_; ++b) {
      waiting[b] += static_cast<double>(waiting_[r * blocks_ + b]);
      ran[b] += static_cast<double>(ran_[r * blocks_ + b]);
    }
  const double steps =
      static_cast<double>(std::min(steps_, (last + 1) * per_row_) - first * per_row_);
  for (uint32_t b = 0; b < blocks_; ++b) {
    waiting[b] /= steps;
    ran[b] /= steps;
  }
}

}  // namespace ab::debugger
