// Where each piece of a run's state lives on the device (see docs/engine.md, "State layout").
//
// Per-lane state (one storage buffer, structure of arrays): slot s of lane l is word s*lanes + l.
// The fixed slots of shaders/ab_layout.h come first, then one stack-pointer slot per Stacked
// variable, then every Register or Stacked variable's words (its current value). Temp variables
// have no slot: they are shader locals.
//
// Stacks: the PC stack and each Stacked variable's stack are laid out [depth][words][lanes] and
// packed into up to AB_ARENAS "arena" buffers, so that few stacks share a binding (an arena
// larger than a binding may cover spans several: Banks, below). A stack's place in its arena is
// `base` words per depth*lanes, i.e. it starts at word base*depth*lanes: the placement is fixed at
// compile time while lanes and depth are run-time values.
//
// Banks (docs/engine.md, "Banks"): a run whose lane state or an arena is larger than one binding
// may hold (the device's maxStorageBufferRange) spreads it over several bindings of the same
// buffer, so the host reads and writes it as one; plan_banks chooses how for a run's lanes and
// depth. The generated code depends on the plan, so it is part of a kernel's key.
#pragma once

#include <compare>
#include <cstdint>
#include <vector>

#include "ir/ir.h"

namespace ab {

struct StackPlacement {
  uint32_t arena = 0;
  uint32_t base = 0;   // words of earlier stacks in the same arena, per depth*lanes
  uint32_t words = 0;  // words per entry
  VarId var = -1;      // -1 for the PC stack
};

struct StateLayout {
  std::vector<int32_t> var_slot;       // first slot of each variable's words; -1 for Temp
  std::vector<int32_t> sp_slot;        // stack-pointer slot of each Stacked variable; -1 otherwise
  std::vector<int32_t> stack_of;       // index into `stacks` per variable; -1 unless Stacked
  std::vector<StackPlacement> stacks;  // stacks[0] is the PC stack
  uint32_t slots = 0;
  uint32_t arenas = 0;                // arenas in use (>= 1)
  std::vector<uint32_t> arena_words;  // per arena, words per depth*lanes
  uint32_t uniform_words = 0;
  std::vector<uint32_t> uniform_base;  // word offset of each uniform in the uniform buffer
};

StateLayout plan_state(const LoweredProgram& program);

// How a run binds its lane state and its arenas. The default, one binding each, generates the code
// of a layout without banks.
struct Banks {
  // The lane state in `state` bindings (at most AB_STATE_BANKS): bank j holds the slots from
  // j * state_slots (the last up to StateLayout::slots), so the bank of a slot is known when the
  // code is generated. Bank 0, holding the fixed slots, is the `state` binding the hand-written
  // kernels use. A bank's binding starts at an offset rounded down to the device's alignment and
  // the code adds the rest: word w of bank j is at ((j * state_slots * lanes) & align_mask) + w.
  uint32_t state = 1;
  uint32_t state_slots = 0;  // 0 when state == 1
  uint32_t align_mask = 0;   // minStorageBufferOffsetAlignment / 4 - 1; 0 when state == 1
  // Every arena in `arena` windows (at most AB_ARENA_WINDOWS) of window_words words, a power of
  // two: word g of an arena is word g % window_words of window g / window_words. A stack's
  // entries move with the lane's depth, so the code picks the window per access.
  uint32_t arena = 1;
  uint32_t window_words = 0;  // 0 when arena == 1
  auto operator<=>(const Banks&) const = default;
  bool single() const { return state == 1 && arena == 1; }
};

// The fewest bindings under `bank_bytes` each for `lanes` lanes of `depth` stack entries; the
// counts may exceed AB_STATE_BANKS / AB_ARENA_WINDOWS (VulkanRun::create refuses such a run).
Banks plan_banks(const StateLayout& layout, uint64_t lanes, uint64_t depth, uint64_t bank_bytes,
                 uint64_t align_bytes);

}  // namespace ab
