// The lane grid's colouring as a plain model: how lanes are coloured (by block, call depth, fault
// state or a watched variable), the colour of each lane in a state, and the legend that explains
// them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "autobatch/expected.h"
#include "autobatch/module.h"
#include "debugger/lane_filter.h"

namespace ab::debugger {

enum class ColorMode : uint8_t { Block, Depth, Error, Variable };
const char* color_mode_name(ColorMode mode);

struct LegendEntry {
  std::string label;
  uint32_t rgba = 0;  // 0xAABBGGRR (byte order R, G, B, A in memory)
};

// One RGBA colour per lane by `mode` (`watched_variable`: an index into the module's variables,
// for ColorMode::Variable).
void lane_colors(const LaneState& state, ColorMode mode, int32_t watched_variable,
                 std::vector<uint32_t>& rgba);

// Colour helpers shared with the UI.
uint32_t categorical_color(uint32_t index);
uint32_t ramp_color(double t);  // t in [0, 1]

class LaneColoring {
 public:
  explicit LaneColoring(const Module& module) : module_(&module) {}

  // For ColorMode::Variable, `variable` names a lowered var ("fib.n") or a source variable of
  // any function ("n"); fails, naming the watchable variables, for any other name (and keeps
  // the colouring it had).
  Status set(ColorMode mode, const std::string& variable = "");
  ColorMode mode() const { return mode_; }
  int32_t watched() const { return watched_; }  // index into the module's variables, or -1
  const std::string& watched_name() const { return watched_name_; }
  // Bumped by every set(), so that views built from the colouring know when to rebuild.
  uint64_t version() const { return version_; }

  void colors(const LaneState& state, std::vector<uint32_t>& rgba) const;
  // The colours' meaning in `state`: the blocks lanes wait at (`waiting_per_block`), the depth
  // range, or the watched variable's range; then the finished and faulted lanes.
  std::vector<LegendEntry> legend(const LaneState& state,
                                  const std::vector<uint32_t>& waiting_per_block) const;
  // The watched variable's value in `lane`, at most `max_elements` elements of an array ("" unless
  // colouring by a variable).
  std::string value(const LaneState& state, uint32_t lane, uint32_t max_elements) const;

 private:
  const Module* module_;
  ColorMode mode_ = ColorMode::Block;
  int32_t watched_ = -1;
  std::string watched_name_;
  uint64_t version_ = 0;
};

}  // namespace ab::debugger
