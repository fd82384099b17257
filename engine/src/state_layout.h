// Where each piece of a run's state lives on the device (see docs/engine.md, "State layout").
//
// Per-lane state (one storage buffer, structure of arrays): slot s of lane l is word s*lanes + l.
// The fixed slots of shaders/ab_layout.h come first, then one stack-pointer slot per Stacked
// variable, then every Register or Stacked variable's words (its current value). Temp variables
// have no slot: they are shader locals.
//
// Stacks: the PC stack and each Stacked variable's stack are laid out [depth][words][lanes] and
// packed into up to AB_ARENAS "arena" buffers (so no single binding exceeds the device's
// maxStorageBufferRange). A stack's place in its arena is `base` words per depth*lanes, i.e. it
// starts at word base*depth*lanes: the placement is fixed at compile time while lanes and depth
// are run-time values.
#pragma once

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

}  // namespace ab
