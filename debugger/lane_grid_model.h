// The lane grid's settings and views as a plain model: how lanes are grouped into bands, the lane
// filter and the lanes it matches, the zoom and pan; and LaneGridJob, which builds everything the
// grid draws for one state (bands, layout, colours, filter count, histogram) from its own copy of
// the state, so that it can run on a worker thread while the model steps on.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "autobatch/expected.h"
#include "debugger/execution_source.h"
#include "debugger/lane_coloring.h"
#include "debugger/lane_filter.h"
#include "debugger/lane_views.h"

namespace ab::debugger {

class LaneGridModel {
 public:
  explicit LaneGridModel(const Module& module) : module_(&module) {}

  // Grouping: lanes laid out in bands. For GroupBy::Variable, `variable` is read as the filter
  // reads names (VariableReader); fails for a name that is no variable.
  Status set_grouping(GroupBy by, const std::string& variable = "");
  GroupBy grouping_mode() const { return group_by_; }
  const std::string& group_variable() const { return group_name_; }
  // The grouping of `state`, computed once per state (`state_epoch`) and setting.
  const LaneGrouping& grouping(const LaneState& state, uint64_t state_epoch) const;
  double grouping_ms() const { return grouping_ms_; }  // how long the last grouping took

  // The lane filter (lane_filter.h): "" or "off" clears it. Fails with the parser's message.
  Status set_filter(std::string_view text);
  const LaneFilter* filter() const { return filter_ ? &*filter_ : nullptr; }
  bool has_filter() const { return filter_.has_value(); }
  const std::string& filter_text() const;
  // [lane] 1 for the lanes of `state` that match (empty without a filter), computed once per
  // state and setting; and how many match.
  const std::vector<uint8_t>& filter_matches(const LaneState& state, uint64_t state_epoch) const;
  uint32_t filter_count(const LaneState& state, uint64_t state_epoch) const;
  double filter_ms() const { return filter_ms_; }  // how long the last evaluation took

  GridView& view() { return view_; }
  const GridView& view() const { return view_; }
  // Bumped by every grouping or filter change.
  uint64_t version() const { return version_; }

 private:
  friend class LaneGridJob;
  const Module* module_;
  GroupBy group_by_ = GroupBy::None;
  std::optional<VariableReader> group_var_;
  std::string group_name_;
  std::optional<LaneFilter> filter_;
  GridView view_;
  uint64_t version_ = 0;
  // Caches of the views of one state: (state epoch, version) when computed.
  mutable LaneGrouping grouping_;
  mutable std::pair<uint64_t, uint64_t> grouping_at_{UINT64_MAX, 0};
  mutable double grouping_ms_ = 0;
  mutable std::vector<uint8_t> matches_;
  mutable uint32_t match_count_ = 0;
  mutable std::pair<uint64_t, uint64_t> matches_at_{UINT64_MAX, 0};
  mutable double filter_ms_ = 0;
};

// Everything the lane grid draws for one state: the bands, their layout, the cells' colours
// (lanes the filter does not match faded), the filter's count and the depth histogram.
struct LaneGridViews {
  uint64_t state_epoch = UINT64_MAX, settings_epoch = UINT64_MAX;  // what it was built from
  uint32_t columns = 0;
  LaneGrouping grouping;
  GridLayout layout;
  std::vector<uint32_t> rgba;  // [cell]
  bool filtered = false;
  uint32_t match_count = 0;
  std::vector<uint32_t> histogram;
  double ms = 0;  // how long building it took
};

// A request for LaneGridViews holding its own copy of the lanes' state and the view settings.
class LaneGridJob {
 public:
  // The source's current state, as the colouring and the grid's settings view it; the epochs
  // are handed back in the views.
  LaneGridJob(const ExecutionSource& source, const LaneColoring& coloring,
              const LaneGridModel& grid, uint32_t columns, uint64_t state_epoch,
              uint64_t settings_epoch);
  LaneGridViews run() const;

 private:
  std::shared_ptr<const Module> module_;
  std::vector<int32_t> pcs_;
  std::vector<uint32_t> depths_;
  std::vector<uint8_t> faulted_;
  std::vector<uint32_t> registers_;  // [lane * words_ + word]: only the variables read
  std::vector<uint32_t> offsets_;    // [variable] its first word in registers_
  uint32_t words_ = 0;
  uint32_t columns_ = 1;
  ColorMode color_ = ColorMode::Block;
  int32_t watched_ = -1;
  GroupBy group_by_ = GroupBy::None;
  std::optional<VariableReader> group_var_;
  std::optional<LaneFilter> filter_;
  uint64_t state_epoch_ = 0, settings_epoch_ = 0;
};

}  // namespace ab::debugger
