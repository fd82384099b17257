// Splitting a large program's kernels. A device compiler's time can grow faster than the code it
// is given: lavapipe (Mesa 22.3, LLVM 15) builds every compute shader as an LLVM coroutine, and
// LLVM's coroutine splitting recomputes a dominator tree per stack slot and keeps a bit per block
// pair, so one kernel holding every block of a thousand-function program did not compile in ten
// minutes (docs/performance.md, "Compile time"). A program whose estimated code exceeds a bound is
// therefore compiled as several parts, each a set of blocks with kernels of its own
// (glsl_codegen.h: BlockSet), so compile time grows with the number of parts: linearly. A lane
// whose PC leaves its part waits for a round of part dispatches, so the parts are chosen to keep
// the cycles that lanes run most (a NUTS tree's recursion, its leapfrog and the model's gradient)
// inside one part.
#pragma once

#include <cstdint>
#include <vector>

#include "codegen/glsl_codegen.h"
#include "ir/ir.h"

namespace ab {

// An estimate of the code the kernels of one residency hold for block b, in rough GLSL
// statements: its ops, a heavier weight for each storage-buffer access (lavapipe expands every
// one into a loop over the SIMD lanes), fault checks, and its variables: in Memory residency
// every Register or Stacked variable it uses is a load (and a store if written), in Registers
// residency a case of ab_load's and ab_store's loops, or, for a variable of more than
// register_words words (SourcePart::register_words), a load and store as in Memory residency.
uint32_t block_cost(const LoweredProgram& program, int32_t b, Residency residency,
                    uint32_t register_words = kRegisterWords);

struct KernelSplit {
  // Per residency (the two sources differ in size), sets of blocks covering every block once,
  // in the order of their first blocks.
  std::vector<BlockSet> memory_parts, register_parts;
  bool copy_callees = true;  // for the lane sweep (SourcePart::copy_callees)

  const std::vector<BlockSet>& parts(Residency r) const {
    return r == Residency::Memory ? memory_parts : register_parts;
  }
};

// A program is split only above kSplitAbove times max_cost: below that, one kernel compiles in
// seconds (the largest sample, nuts_tree, costs ~10,400 in Memory residency), and a split costs
// dispatches at run time; above it, parts of max_cost (3000 by default, about the size at which
// lavapipe's compile time per block is lowest: fewer parts pay more fixed cost per kernel, larger
// ones more of the quadratic part) keep compile time linear.
inline constexpr uint32_t kSplitAbove = 4;

// How many more parts than the fewest contiguous ranges a split may use to keep hot edges inside
// its parts: each part costs a dispatch per round and a kernel to compile, so only one more.
inline constexpr size_t kExtraHotParts = 1;

// Per residency: one part when the whole program costs at most kSplitAbove * max_cost (or
// max_cost is 0). Otherwise sets of blocks covering every block once, each costing at most
// max_cost (a block costlier than that alone in its part), at most kExtraHotParts more than the
// fewest contiguous ranges of at most max_cost, chosen so that the control-flow edges between
// parts are cold. An edge of the sweep graph without copies (sweep_order.h: a call goes to the
// callee's entry, a Return to every continuation) has the heat 8^d, d the number of
// cycles (nested components of the sweep order) around its cooler end: a static estimate of how
// often lanes take it. Two candidates, the one whose crossing edges are colder (of equals, the
// first): the contiguous ranges of least crossing heat (exact, by dynamic programming over the
// cut points), and parts of any blocks built by joining runs of one function's blocks along their
// hottest edges while the cost allows (Pettis and Hansen's code layout, capped), packed
// first-fit. The lane sweep copies shared callees only when the register kernels stay one part
// and the copies keep them within kSplitAbove * max_cost.
KernelSplit split_kernels(const LoweredProgram& program, uint32_t max_cost,
                          uint32_t register_words = kRegisterWords);

// What split_kernels minimises: the heat of the edges between blocks in different `parts` (sets
// covering every block once).
uint64_t crossing_heat(const LoweredProgram& program, const std::vector<BlockSet>& parts);

// VulkanOptions::register_value_words = 0 (automatic): kLargeProgramRegisterWords for a program
// whose register kernels, every value a register, split into several parts; kRegisterWords
// (every value a register) otherwise. On lavapipe long values in the state buffer made a large
// program cheaper to compile and faster to run and a small one dearer and slower
// (docs/engine.md, "Residency by size").
uint32_t automatic_register_words(const LoweredProgram& program, uint32_t max_cost);

}  // namespace ab
