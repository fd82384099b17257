#include "codegen/state_layout.h"

#include <algorithm>

#include "shaders/ab_layout.h"

namespace ab {

StateLayout plan_state(const LoweredProgram& program) {
  const Types& types = program.types();
  const size_t nv = program.vars.size();
  StateLayout L;
  L.var_slot.assign(nv, -1);
  L.sp_slot.assign(nv, -1);
  L.stack_of.assign(nv, -1);
  uint32_t slot = AB_FIXED_SLOTS;
  L.stacks.push_back({0, 0, 1, -1});
  for (size_t v = 0; v < nv; ++v) {
    if (program.vars[v].storage != Storage::Stacked) continue;
    L.sp_slot[v] = static_cast<int32_t>(slot++);
    L.stack_of[v] = static_cast<int32_t>(L.stacks.size());
    L.stacks.push_back({0, 0, types.words(program.vars[v].type), static_cast<VarId>(v)});
  }
  for (size_t v = 0; v < nv; ++v) {
    if (program.vars[v].storage == Storage::Temp) continue;
    L.var_slot[v] = static_cast<int32_t>(slot);
    slot += types.words(program.vars[v].type);
  }
  L.slots = slot;

  // Spread the stacks over the arenas, each to the currently smallest (the PC stack to arena 0).
  L.arenas = static_cast<uint32_t>(std::min<size_t>(AB_ARENAS, L.stacks.size()));
  L.arena_words.assign(L.arenas, 0);
  for (size_t k = 0; k < L.stacks.size(); ++k) {
    const auto smallest = std::min_element(L.arena_words.begin(), L.arena_words.end());
    StackPlacement& s = L.stacks[k];
    s.arena = static_cast<uint32_t>(smallest - L.arena_words.begin());
    s.base = *smallest;
    *smallest += s.words;
  }

  for (const Uniform& u : program.source->uniforms) {
    L.uniform_base.push_back(L.uniform_words);
    L.uniform_words += types.words(u.type);
  }
  return L;
}

Banks plan_banks(const StateLayout& layout, uint64_t lanes, uint64_t depth, uint64_t bank_bytes,
                 uint64_t align_bytes) {
  Banks banks;
  const uint64_t slots = layout.slots;
  const uint64_t bank_words = bank_bytes / 4;
  // Room a bank's rounded-down start may take from its binding.
  const uint64_t slack = align_bytes > 4 ? align_bytes / 4 - 1 : 0;
  if (slots * lanes > bank_words) {
    // Equal banks of whole slots (bank 0 at least the fixed ones); one slot per bank at most.
    for (uint64_t n = 2; n <= slots; ++n) {
      const uint64_t per = std::max<uint64_t>((slots + n - 1) / n, AB_FIXED_SLOTS);
      banks.state = static_cast<uint32_t>((slots + per - 1) / per);
      banks.state_slots = static_cast<uint32_t>(per);
      if (per * lanes + slack <= bank_words) break;
    }
    banks.align_mask = static_cast<uint32_t>(slack);
  }
  uint64_t largest = 0;  // words of the largest arena
  for (uint32_t words : layout.arena_words)
    largest = std::max(largest, uint64_t{words} * depth * lanes);
  if (largest > bank_words) {
    uint64_t window = 1;
    while (window * 2 <= bank_words || window <= slack)  // a window starts aligned
      window *= 2;
    banks.window_words = static_cast<uint32_t>(window);
    banks.arena = static_cast<uint32_t>((largest + window - 1) / window);
  }
  return banks;
}

}  // namespace ab
