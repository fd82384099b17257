// The program-level assembly of a generated source (glsl_codegen.h, generate_glsl): the header
// and extensions, the part's bounds, the bindings, the prelude, the lane state's access, the
// blocks, run_block, the loop counts and the entry points its caller supplies.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>

#include "codegen/glsl_codegen_parts.h"
#include "codegen/glsl_prelude.h"
#include "codegen/shader_texts.h"
#include "shaders/ab_layout.h"

namespace ab {

// Fills in a piece of shaders/ (shader_texts.h): each name in `values` that stands as a whole
// identifier (AB_RS_<SLOT>: the register of slot AB_SLOT_<SLOT>), and each line holding only a
// `//@marker` in `values`, with the line's indentation and end, is replaced by its text.
std::string fill_in(std::string_view piece,
                    std::initializer_list<std::pair<std::string_view, std::string>> values) {
  std::string text(piece);
  for (const auto& [name, value] : values) {
    for (size_t at = text.find(name); at != std::string::npos; at = text.find(name, at)) {
      size_t from = at, to = at + name.size();
      if (name.starts_with("//@")) {
        from = text.rfind('\n', at) + 1;  // 0 on the first line
        to = text.find('\n', at) + 1;
      } else if (to < text.size() &&
                 (std::isalnum(static_cast<unsigned char>(text[to])) || text[to] == '_')) {
        at = to;  // a longer name
        continue;
      }
      text.replace(from, to - from, value);
      at = from + value.size();
    }
  }
  return text;
}

std::string float_controls_header(const GlslTarget& target) {
  std::string out = "#version 450\n";
  // Float controls (SPIR-V 1.4 core): capability and execution mode ids, for 32-bit floats.
  if (target.preserve_float_specials || target.preserve_denorms)
    out += "#extension GL_EXT_spirv_intrinsics : require\n";
  if (target.preserve_float_specials)  // SignedZeroInfNanPreserve
    out += "spirv_execution_mode(capabilities = [4466], 4461, 32);\n";
  if (target.preserve_denorms)  // DenormPreserve
    out += "spirv_execution_mode(capabilities = [4464], 4459, 32);\n";
  return out;
}

std::string common_declarations() {
  std::string out = kAbLayoutText;
  std::string common = kAbCommonText;
  const std::string include_line = "#include \"ab_layout.h\"";
  if (auto at = common.find(include_line); at != std::string::npos)
    common.erase(at, include_line.size());
  out += common;
  return out +
         "layout(set = 0, binding = AB_BIND_UNIFORMS, std430) readonly buffer Uniforms { uint w[]; "
         "} uni;\n";
}

namespace {

// The numbers of ab_common.glsl's loop counting, for a kernel that runs many blocks per dispatch
// on a device with a loop limit. What one iteration of a dispatch loop costs whatever its lanes
// do, as lavapipe passes over every branch it predicates: AB_ITERATION_LOOPS for the kernels
// that pick a block (run_block's switch over every block of the part, counted 2, and the loop's
// test); the lane sweep counts its passes itself (SweepEmitter, AB_COUNT_PASS), and one pass over
// the whole sweep bounds its one more iteration. AB_LOOP_ROOM_ROW: the room below target.loop_limit
// for a SIMD row's own count (the subgroup, lane and fused kernels count each run block's loops
// once per row), AB_LOOP_ROOM_LANE for a lane's (the workgroup kernel: a row's count is at most the
// sum of its lanes'). After the last check that passed, a dispatch takes one more iteration and its
// fixed loops (ab_load and ab_store over the words, the fused kernel's counts). At least 1: a
// dispatch always takes a step, so a program whose one iteration alone could reach the limit is not
// protected (docs/engine.md).
// The slot words ab_load and ab_store move: all but the words of variables longer than
// `register_words`, which the blocks read and write in the state buffer (add_vars).
uint64_t moved_slot_words(const LoweredProgram& program, const StateLayout& layout,
                          uint32_t register_words) {
  uint64_t words = layout.slots;
  for (size_t v = 0; v < program.vars.size(); ++v) {
    const uint32_t n = program.types().words(program.vars[v].type);
    if (layout.var_slot[v] >= 0 && n > register_words) words -= n;
  }
  return words;
}

std::string loop_count_defines(const GlslTarget& target, const StateLayout& layout,
                               const LoweredProgram& program,
                               const std::vector<LoopCount>& block_loops, const LoopCount& sweep,
                               uint32_t private_stack_depth, uint32_t register_words) {
  const uint64_t lanes = std::max<uint32_t>(target.loop_lanes, 1);
  uint64_t passed = 0, longest = 0;  // over the part's blocks
  for (const LoopCount& c : block_loops) {
    passed += c.statements;
    longest = std::max(longest, c.iterations);
  }
  const uint64_t per_pick = passed + 3, per_sweep = sweep.statements + 2;
  const uint64_t one_more = std::max(longest + per_pick + lanes + 1, sweep.iterations + per_sweep);
  // ab_load and ab_store: the slots, and with private stacks a loop per stack copying its live
  // entries, in and back out (at most the private arrays' words each way).
  uint64_t private_words = 0;
  for (const StackPlacement& st : layout.stacks)
    private_words += uint64_t{private_stack_depth} * st.words;
  const uint64_t fixed = 6 * moved_slot_words(program, layout, register_words) +
                         2 * program.blocks.size() + 64 +
                         (private_stack_depth ? 2 * private_words + 4 * layout.stacks.size() : 0);
  const uint64_t usable = target.loop_limit > fixed ? target.loop_limit - fixed : 0;
  auto room = [&](uint64_t n) { return n > one_more ? n - one_more : 1; };
  return fmt::format(
      "#define AB_ITERATION_LOOPS {}u\n#define AB_LOOP_ROOM_ROW {}u\n#define AB_LOOP_ROOM_LANE "
      "{}u\n",
      per_pick, room(usable), room(usable / lanes));
}

// run_block: block b for a lane, once its step budget is checked (the same check the VM makes
// before every block, made in one place).
std::string run_block_function(bool slots_in_registers, const BlockSet& blocks) {
  const std::string steps =
      slots_in_registers ? slot_register(AB_SLOT_STEPS) : "state.w[AB_SLOT_STEPS * P.lanes + lane]";
  std::string out = fmt::format(
      "void run_block(uint lane, uint b) {{\n"
      "  const uint steps = {};\n"
      "  if (!AB_STEP_ALLOWED(steps, P.max_steps)) {{\n"
      "    ab_raise(lane, AB_FAULT_STEP_BUDGET, b, AB_NO_BLOCK, steps);\n"
      "    return;\n"
      "  }}\n"
      "  switch (b) {{\n",
      steps);
  blocks.each(
      [&](int32_t b) { out += fmt::format("    case {0}u: block_{0}(lane); break;\n", b); });
  return out + "    default: break;\n  }\n}\n";
}

// AB_FIRST_BLOCK and AB_END_BLOCK bound the part's blocks (the sweep's membership rows start at
// the first); AB_IN_PART tests each of its ranges.
std::string part_bounds(const LoweredProgram& program, const BlockSet& blocks) {
  const BlockRange hull = blocks.hull();
  std::string in_part = "(pc) >= AB_FIRST_BLOCK && (pc) < AB_END_BLOCK", listed;
  if (blocks.ranges.size() > 1) in_part.clear();
  for (const BlockRange& r : blocks.ranges) {
    if (blocks.ranges.size() > 1)
      in_part += fmt::format("{}((pc) >= {}u && (pc) < {}u)", in_part.empty() ? "" : " || ",
                             r.first, r.end);
    listed += fmt::format("{}[{}, {})", listed.empty() ? "" : " ", r.first, r.end);
  }
  return fmt::format(
      "// The blocks of this source: {0}{1}.\n#define AB_FIRST_BLOCK {2}u\n"
      "#define AB_END_BLOCK {3}u\n#define AB_IN_PART(pc) ({4})\n",
      listed,
      hull.first == 0 && static_cast<size_t>(hull.end) == program.blocks.size() &&
              blocks.ranges.size() == 1
          ? ", the whole program"
          : ", one part of a split program",
      hull.first, hull.end, in_part);
}

// ab_layout.h and ab_common.glsl (as the hand-written kernels include them), the bindings of the
// uniforms, the arenas and the stream, and the prelude.
std::string declarations(const LoweredProgram& program, const StateLayout& layout,
                         const Banks& banks) {
  std::string out = common_declarations();
  for (uint32_t a = 0; a < layout.arenas; ++a)
    out += fmt::format(
        "layout(set = 0, binding = AB_BIND_ARENA0 + {0}, std430) buffer Arena{0} {{ uint w[]; }} "
        "arena{0};\n",
        a);
  out += BankAddress(banks).declarations(layout.arenas);
  if (program.source && program.source->emit_type != Types::kVoid)
    out +=
        "layout(set = 0, binding = AB_BIND_STREAM, std430) buffer Stream { uint w[]; } stream;\n";
  return out + glsl_prelude();
}

// The source's first lines: the version, the extensions the target and the kernels need, where
// it comes from, and the bounds of the part's blocks.
std::string source_header(const LoweredProgram& program, Residency residency,
                          const GlslTarget& target, const BlockSet& blocks) {
  std::string out = float_controls_header(target);
  out +=
      "#if defined(AB_LOCAL_SUBGROUP) || defined(AB_LOCAL_LANE) || defined(AB_GLOBAL_FUSED)\n"
      "#extension GL_KHR_shader_subgroup_basic : require\n"
      "#extension GL_KHR_shader_subgroup_arithmetic : require\n#endif\n";
  // The lane sweep on a device with a loop cap keeps a row's lanes in each component loop with
  // subgroupAny (AB_LOOP_CONTINUE, ab_common.glsl).
  if (target.loop_limit > 0 && residency == Residency::Registers)
    out += "#ifdef AB_LOCAL_LANE\n#extension GL_KHR_shader_subgroup_vote : require\n#endif\n";
  if (target.subgroup_ballot)
    out +=
        "#define AB_SUBGROUP_BALLOT 1\n#extension GL_KHR_shader_subgroup_basic : require\n"
        "#extension GL_KHR_shader_subgroup_ballot : require\n";
  out += fmt::format("// Generated by autobatch from '{}': {} blocks, {} variables.\n",
                     program.source ? program.source->file : "", program.blocks.size(),
                     program.vars.size());
  return out + part_bounds(program, blocks);
}

}  // namespace

const char* kernel_macro(Kernel k) {
  switch (k) {
    case Kernel::GlobalMasked:
      return "AB_GLOBAL_MASKED";
    case Kernel::GlobalCompacted:
      return "AB_GLOBAL_COMPACTED";
    case Kernel::LocalSubgroup:
      return "AB_LOCAL_SUBGROUP";
    case Kernel::LocalWorkgroup:
      return "AB_LOCAL_WORKGROUP";
    case Kernel::LocalLane:
      return "AB_LOCAL_LANE";
    case Kernel::GlobalFused:
      return "AB_GLOBAL_FUSED";
  }
  return "";
}

Residency residency_of(Kernel k) {
  // Only the global kernels that run one block per dispatch read and write the state buffer.
  return k == Kernel::GlobalMasked || k == Kernel::GlobalCompacted ? Residency::Memory
                                                                   : Residency::Registers;
}

uint64_t step_loop_iterations(const LoweredProgram& program, const StateLayout& layout, int32_t b,
                              uint32_t register_words) {
  const SourcePart whole{BlockSet{{BlockRange{0, static_cast<int32_t>(program.blocks.size())}}}};
  std::string ignored;
  const LoopCount block =
      emit_block(program, layout, b, Residency::Memory, whole, ignored, /*unroll_long_loops=*/true);
  // ab_load/ab_store and the counts around a step, as loop_count_defines' `fixed`
  return block.iterations + block.statements +
         6 * moved_slot_words(program, layout, register_words) + 2 * program.blocks.size() + 64;
}

std::string generate_glsl(const LoweredProgram& program, const StateLayout& layout,
                          Residency residency, const GlslTarget& target, const SourcePart& part,
                          KernelEntries entries) {
  const BlockSet& blocks = part.blocks;
  std::string out = source_header(program, residency, target, blocks);
  // The blocks first: a device with a loop limit needs their loops' bounds ahead of them.
  std::string block_functions;
  std::vector<LoopCount> block_loops(program.blocks.size());
  blocks.each([&](int32_t b) {
    block_loops[b] =
        emit_block(program, layout, b, residency, part, block_functions, target.loop_limit > 0);
  });
  // Only the kernels that run many blocks per dispatch count their loops (ab_common.glsl).
  const bool count_loops = target.loop_limit > 0 && residency == Residency::Registers;
  if (count_loops) out += "#define AB_LOOP_LIMITED 1\n";
  out += declarations(program, layout, part.banks);
  const bool registers = residency == Residency::Registers;
  const bool slots_in_registers = registers || part.slots_in_registers;
  if (slots_in_registers)
    out +=
        lane_registers(program, layout, blocks, registers, part.compact_moves,
                       registers ? part.private_stack_depth : 0, part.register_words, part.banks) +
        raise_in_registers();
  else
    out += kAbRaiseMemoryText;
  out += block_functions;
  out += run_block_function(slots_in_registers, blocks);
  if (!registers)
    out += slots_in_registers ? "#define AB_STEP(lane, b) { ab_load(lane); run_block(lane, b); "
                                "ab_store(lane); }\n"
                              : "#define AB_STEP(lane, b) run_block(lane, b)\n";
  // The entry points after the loop counts, which include the lane sweep's loops.
  LoopCount sweep_loops;
  std::string entry_points;
  for (const KernelEntry& entry : entries) {
    if (residency_of(entry.kernel) != residency) continue;
    entry_points += entry.lane_sweep
                        ? lane_entry_point(program, part, block_loops, entry.glsl, sweep_loops)
                        : std::string(entry.glsl);
  }
  if (count_loops)
    out += loop_count_defines(target, layout, program, block_loops, sweep_loops,
                              part.private_stack_depth, part.register_words);
  return out + entry_points;
}

uint32_t private_stack_depth(const StateLayout& layout, uint32_t depth, uint32_t limit_words) {
  uint64_t words = 0;
  for (const StackPlacement& s : layout.stacks)
    words += s.words;
  return words * depth <= limit_words ? depth : 0;
}

std::string generate_glsl(const LoweredProgram& program, const StateLayout& layout,
                          Residency residency, const GlslTarget& target, KernelEntries entries) {
  return generate_glsl(
      program, layout, residency, target,
      SourcePart{BlockSet{{BlockRange{0, static_cast<int32_t>(program.blocks.size())}}}}, entries);
}

}  // namespace ab
