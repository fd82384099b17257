// GLSL code generation: LoweredProgram (Figure 4) -> a GLSL compute source holding every block as
// a function over the per-lane state of state_layout.h, plus the entry points of the generated
// kernels, selected by a macro at compile time (one source per Residency, below). The entry points
// are the schedules' (KernelEntry): the caller hands them in, so that adding a schedule does not
// change the code generator.
//   AB_GLOBAL_MASKED     one global step; every lane tests whether its PC is the chosen block
//   AB_GLOBAL_COMPACTED  one global step over the active-lane list (indirect dispatch)
//   AB_GLOBAL_FUSED      many global steps, pick included, for a batch that fits one subgroup
//   AB_LOCAL_SUBGROUP    a bounded PC loop per subgroup (min PC via subgroupMin)
//   AB_LOCAL_WORKGROUP   a bounded PC loop per workgroup (min PC via shared memory)
//   AB_LOCAL_LANE        a bounded PC loop per lane, in sweep order (passes/analysis/sweep_order.h)
// Op semantics are not restated here: elementwise ops are spelled from OpInfo::glsl, whose
// helpers live in the prelude (glsl_prelude.h).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "codegen/state_layout.h"
#include "ir/ir.h"

namespace ab {

enum class Kernel {
  GlobalMasked,
  GlobalCompacted,
  GlobalFused,
  LocalSubgroup,
  LocalWorkgroup,
  LocalLane
};
const char* kernel_macro(Kernel k);  // "AB_GLOBAL_MASKED", ...

// Where blocks read and write a lane's state. Memory: the state buffer, every block (the masked
// and compacted global kernels run one block per dispatch). Registers: private variables loaded
// once per dispatch and stored at its end (the local kernels and the fused global kernel run
// thousands of blocks per dispatch; only the stacks, and values longer than
// SourcePart::register_words, stay in memory). Each residency has its own source and kernels.
enum class Residency { Memory, Registers };
Residency residency_of(Kernel k);

// What the device offers that changes the generated source.
struct GlslTarget {
  // Subgroup ballot in compute shaders: the global step then counts lanes into their next blocks
  // with one atomic per subgroup and block, not one per lane.
  bool subgroup_ballot = false;
  // shaderSignedZeroInfNanPreserveFloat32: the kernels declare the SignedZeroInfNanPreserve
  // execution mode, so the driver may not fold `x * 0.0` to 0 or `x / 0.0` away (fast math).
  bool preserve_float_specials = false;
  // shaderDenormPreserveFloat32: the kernels declare DenormPreserve (no flush to zero).
  bool preserve_denorms = false;
  // Loop iterations after which the device silently ends every loop of a shader invocation, 0
  // for none. lavapipe: 65,535, one count per SIMD row of `loop_lanes` lanes, shared by every
  // loop of the kernel (the dispatch loop, copies of long values, the math helpers' loops). The
  // kernels that run many blocks per dispatch then count their loop iterations and end the
  // dispatch while the row's count is surely below it, so no loop is ever cut short.
  uint32_t loop_limit = 0;
  uint32_t loop_lanes = 1;
};
// A range of blocks, [first, end) in block numbers.
struct BlockRange {
  int32_t first = 0;
  int32_t end = 0;
  bool contains(int32_t b) const { return b >= first && b < end; }
};
// The blocks one generated source holds: disjoint ranges in ascending order. A program too large
// to compile as one kernel is split into parts (kernel_split.h), each compiled into kernels of its
// own that run only its blocks: a lane whose PC leaves the part stops until the part holding its
// block runs. The whole program is one range {0, blocks}.
struct BlockSet {
  std::vector<BlockRange> ranges;

  bool contains(int32_t b) const {
    for (const BlockRange& r : ranges)
      if (r.contains(b)) return true;
    return false;
  }
  // The smallest range holding every block of the set.
  BlockRange hull() const {
    return ranges.empty() ? BlockRange{} : BlockRange{ranges.front().first, ranges.back().end};
  }
  template <typename F>
  void each(F&& f) const {
    for (const BlockRange& r : ranges)
      for (int32_t b = r.first; b < r.end; ++b)
        f(b);
  }
};
// SourcePart::register_words: every value in registers (the default), and what a program too
// large for one kernel keeps there (VulkanOptions::register_value_words = 0, automatic).
constexpr uint32_t kRegisterWords = 0xffffffffu;
constexpr uint32_t kLargeProgramRegisterWords = 16;
// What goes into one source besides the target: the part's blocks, whether the lane sweep copies
// shared callees per call site (sweep_order.h; off for a split program, whose parts would
// otherwise hold copies of each other's blocks), and where Memory residency keeps the slots.
struct SourcePart {
  BlockSet blocks;
  bool copy_callees = true;
  // Memory residency: the fixed and stack-pointer slots in registers, loaded before the step's
  // block and stored after it, so that they are one state-buffer access each in the kernel
  // instead of one per block that uses them (for a split program, whose kernel size matters more
  // than the few extra words a step moves).
  bool slots_in_registers = false;
  // ab_load/ab_store move the words through one access each in a loop (less code, more time per
  // dispatch) instead of one access per word: for a split program, where kernel size matters.
  bool compact_moves = false;
  // Register residency: the lane's stacks are copied into private arrays of this many entries
  // for the dispatch (in ab_load, back in ab_store) instead of being read and written in the
  // arenas at every push and pop; 0 keeps them in the arenas. It must equal the run's
  // RunOptions::stack_depth (private_stack_depth() picks it).
  uint32_t private_stack_depth = 0;
  // Register residency: a Register or Stacked variable of more words than this is not a register
  // but stays in the state buffer, where the blocks that use it read and write it as in Memory
  // residency, so a kernel's code and the driver's compile time do not grow with the size of the
  // values (a model's points and gradients, a NUTS tree): VulkanOptions::register_value_words.
  uint32_t register_words = kRegisterWords;
  // How the run binds its lane state and arenas (state_layout.h, Banks; plan_banks).
  Banks banks{};
  // Blocks of `blocks` whose ops another kernel runs just before (the product kernel, on the
  // global schedule: codegen/product_blocks.h): the code for such a block takes its step and its
  // jump only.
  std::vector<int32_t> ops_apart{};
};
// The private_stack_depth for a run of `depth` entries per stack: `depth` when the register
// kernels' private copy of every stack of a lane fits `limit_words` (private_stack_words() in
// context_impl.h: kPrivateStackWords on CPU devices), else 0. On lavapipe a storage-buffer
// access is a loop over the SIMD lanes with a bounds check each, a private array access a few
// vector instructions (docs/performance.md, issue 13's second round).
constexpr uint32_t kPrivateStackWords = 4096;
uint32_t private_stack_depth(const StateLayout& layout, uint32_t depth,
                             uint32_t limit_words = kPrivateStackWords);
// The entry point of one kernel, as its schedule supplies it (engine/schedules/): GLSL guarded by
// `#ifdef <kernel_macro(kernel)>`, appended to the source of the kernel's residency after the
// blocks, run_block and the loop counts. A `lane_sweep` entry is a template the code generator
// fills with the part's lane sweep (glsl_sweep.cpp: its `//@members` and `//@blocks` lines and the
// name AB_RS_STEPS), whose loops the source's loop counts include.
struct KernelEntry {
  Kernel kernel;
  std::string_view glsl;
  bool lane_sweep = false;
};
// A source ends with the entries of its residency, in the order given.
using KernelEntries = std::span<const KernelEntry>;
std::string generate_glsl(const LoweredProgram& program, const StateLayout& layout,
                          Residency residency, const GlslTarget& target, const SourcePart& part,
                          KernelEntries entries);
// At most how many loop iterations block b's code runs for a lane in one step (every loop over a
// value's words and its final test, the helpers' loops), with the loops every kernel runs around a
// step: what a device that ends a shader's loops after GlslTarget::loop_limit iterations must
// allow one step (docs/engine.md, "lavapipe's loop cap"), for kernels that keep variables of at
// most `register_words` words in registers (SourcePart::register_words).
uint64_t step_loop_iterations(const LoweredProgram& program, const StateLayout& layout, int32_t b,
                              uint32_t register_words = kRegisterWords);
// The whole program in one source (the form of every program that is not split).
std::string generate_glsl(const LoweredProgram& program, const StateLayout& layout,
                          Residency residency, const GlslTarget& target, KernelEntries entries);
// The GLSL function of one block, as it appears in generate_glsl's output ("" for a bad index).
std::string generate_block_glsl(const LoweredProgram& program, const StateLayout& layout,
                                int32_t block);

}  // namespace ab
