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

namespace {

// Each grouping's bands and every lane's key (its band's index). Every grouping ends with the
// finished lanes' band, then the faulted lanes'.
struct Keyed {
  std::vector<Band> bands;
  std::vector<uint32_t> key;

  explicit Keyed(uint32_t lanes) : key(lanes) {}
  // Adds the finished and faulted bands; returns the finished band's key.
  uint32_t add_tail() {
    bands.push_back({"finished", 0, 0, "finished"});
    bands.push_back({"faulted", 0, 0, "fault"});
    return static_cast<uint32_t>(bands.size() - 2);
  }
};

void key_by_block(const LaneState& s, Keyed& k) {
  for (int32_t b = 0; b < s.exit_pc; ++b) {
    const std::string& name = s.module->blocks()[b].name;
    k.bands.push_back({name, 0, 0, "block == " + name});
  }
  const uint32_t fin = k.add_tail();
  for (uint32_t lane = 0; lane < s.lanes; ++lane)
    k.key[lane] = s.faulted[lane]                               ? fin + 1
                  : s.pcs[lane] >= 0 && s.pcs[lane] < s.exit_pc ? static_cast<uint32_t>(s.pcs[lane])
                                                                : fin;
}

void key_by_depth(const LaneState& s, Keyed& k) {
  uint32_t max_depth = 0;
  for (uint32_t lane = 0; lane < s.lanes; ++lane)
    if (s.is_live(lane)) max_depth = std::max(max_depth, s.depths[lane]);
  for (uint32_t d = 0; d <= max_depth; ++d)
    k.bands.push_back({fmt::format("depth {}", d), 0, 0, fmt::format("live && depth == {}", d)});
  const uint32_t fin = k.add_tail();
  for (uint32_t lane = 0; lane < s.lanes; ++lane)
    k.key[lane] = s.faulted[lane] ? fin + 1 : s.is_finished(lane) ? fin : s.depths[lane];
}

void key_by_fault(const LaneState& s, Keyed& k) {
  k.bands.push_back({"running", 0, 0, "live"});
  k.add_tail();
  for (uint32_t lane = 0; lane < s.lanes; ++lane)
    k.key[lane] = s.faulted[lane] ? 2 : s.is_finished(lane) ? 1 : 0;
}

// A variable's live values: one band per value when there are at most kMaxDistinct of them,
// else kRanges equal ranges over [lo, hi].
struct ValueBands {
  static constexpr size_t kMaxDistinct = 24;
  static constexpr uint32_t kRanges = 16;
  std::vector<double> values;    // [lane]: NaN for lanes that are not live or have no such var
  std::vector<double> distinct;  // sorted; more than kMaxDistinct means ranges
  double lo = INFINITY, hi = -INFINITY;

  bool ranges() const { return distinct.size() > kMaxDistinct; }
  // The band of a value: its index among the distinct values, or its range [a, b) with
  // a = lo + width * r, the same bounds the predicates state.
  uint32_t band_of(double v) const {
    if (!ranges())
      return static_cast<uint32_t>(std::lower_bound(distinct.begin(), distinct.end(), v) -
                                   distinct.begin());
    const double width = (hi - lo) / kRanges;
    uint32_t r = std::min<uint32_t>(kRanges - 1, static_cast<uint32_t>((v - lo) / width));
    while (r > 0 && v < lo + width * r)
      --r;
    while (r + 1 < kRanges && v >= lo + width * (r + 1))
      ++r;
    return r;
  }
};

ValueBands read_values(const LaneState& s, const VariableReader& variable) {
  ValueBands vb;
  vb.values.resize(s.lanes);
  for (uint32_t lane = 0; lane < s.lanes; ++lane) {
    const double v = s.is_live(lane) ? variable.read(s, lane) : NAN;
    vb.values[lane] = v;
    if (std::isnan(v)) continue;
    vb.lo = std::min(vb.lo, v);
    vb.hi = std::max(vb.hi, v);
    if (vb.distinct.size() <= ValueBands::kMaxDistinct &&
        std::find(vb.distinct.begin(), vb.distinct.end(), v) == vb.distinct.end())
      vb.distinct.push_back(v);
  }
  std::sort(vb.distinct.begin(), vb.distinct.end());
  return vb;
}

void key_by_variable(const LaneState& s, const VariableReader& variable, Keyed& k) {
  const std::string& name = variable.name();
  const ValueBands vb = read_values(s, variable);
  if (!vb.ranges()) {
    for (double v : vb.distinct)
      k.bands.push_back({fmt::format("{} = {}", name, number_text(v)), 0, 0,
                         fmt::format("{} == {}", name, number_text(v))});
  } else {
    constexpr uint32_t kRanges = ValueBands::kRanges;
    const double width = (vb.hi - vb.lo) / kRanges;
    for (uint32_t r = 0; r < kRanges; ++r) {
      const bool last = r + 1 == kRanges;
      const double a = vb.lo + width * r, b = last ? vb.hi : vb.lo + width * (r + 1);
      k.bands.push_back(
          {fmt::format("{} in [{}, {}{}", name, number_text(a), number_text(b), last ? "]" : ")"),
           0, 0,
           fmt::format("{} >= {} && {} {} {}", name, number_text(a), name, last ? "<=" : "<",
                       number_text(b))});
    }
  }
  const auto none = static_cast<uint32_t>(k.bands.size());
  k.bands.push_back({fmt::format("no {} here", name), 0, 0, ""});
  const uint32_t fin = k.add_tail();
  for (uint32_t lane = 0; lane < s.lanes; ++lane) {
    const double v = vb.values[lane];
    k.key[lane] = s.faulted[lane]       ? fin + 1
                  : s.is_finished(lane) ? fin
                  : std::isnan(v)       ? none
                                        : vb.band_of(v);
  }
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
  Keyed k(s.lanes);
  if (by == GroupBy::Block) key_by_block(s, k);
  if (by == GroupBy::Depth) key_by_depth(s, k);
  if (by == GroupBy::Fault) key_by_fault(s, k);
  if (by == GroupBy::Variable) key_by_variable(s, *variable, k);
  bucket(k.key, std::move(k.bands), out);
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
