// The lane sweep (glsl_codegen_parts.h): the local schedule per lane's entry point, the blocks in
// sweep order (passes/analysis/sweep_order.h) with a loop per component.
#include <fmt/format.h>

#include <algorithm>

#include "codegen/glsl_codegen_parts.h"
#include "codegen/shader_texts.h"
#include "passes/analysis/sweep_order.h"
#include "shaders/ab_layout.h"

namespace ab {
namespace {

// Emits the items of a sweep: a block runs for the lanes waiting at it; a component is a loop
// that goes on while any lane of the subgroup waits at one of its blocks (its row of
// ab_members, a bit per block).
class SweepEmitter {
 public:
  // Up to this many words per row, each component's row is inlined as constants.
  static constexpr uint32_t kInlineMemberWords = 8;
  // block_loops: each block's loops (by block number), summed into loops() over the items.
  SweepEmitter(const BlockSet& part, const std::vector<LoopCount>& block_loops)
      : part_(part),
        hull_(part.hull()),
        words_(static_cast<uint32_t>(hull_.end - hull_.first) / 32 + 1),
        block_loops_(block_loops) {}

  // Emits the items whose blocks are in the part; a component without any is left out. Returns
  // the loop iterations one pass over these items costs at most on a device that counts them
  // (AB_COUNT_PASS): every block's loops as if it ran, and one pass of each nested component
  // loop's statement, whose further passes count themselves.
  uint64_t emit(const std::vector<SweepItem>& items, int indent, std::string& out) {
    const std::string pad(indent * 2, ' ');
    uint64_t pass = 0;
    for (const SweepItem& item : items) {
      if (item.block >= 0) {
        if (!part_.contains(item.block)) continue;
        loops_.iterations += block_loops_[item.block].iterations;
        loops_.statements += block_loops_[item.block].statements;
        pass += block_loops_[item.block].iterations + block_loops_[item.block].statements;
        // A lane out of step budget runs nothing more; the loop's top records its fault.
        out += fmt::format("{}if (AB_PC(lane) == {}u && AB_BUDGET_LEFT) block_{}(lane);\n", pad,
                           item.block, item.block);
        continue;
      }
      std::vector<bool> in = blocks_inside(item, static_cast<size_t>(hull_.end));
      for (int32_t b = hull_.first; b < hull_.end; ++b)
        in[b] = in[b] && part_.contains(b);
      if (std::find(in.begin() + hull_.first, in.end(), true) == in.end()) continue;
      const int component = components_++;
      loops_.statements += 1;
      pass += 1;
      for (uint32_t w = 0; w < words_; ++w) {
        uint32_t bits = 0;
        for (uint32_t i = 0; i < 32; ++i) {
          const int64_t b = int64_t{hull_.first} + w * 32 + i;
          if (b < hull_.end && in[b]) bits |= 1u << i;
        }
        members_.push_back(bits);
      }
      // A do-while with the test at its end: a while loop's test at its top would cost one more
      // (masked) pass over the body on devices that run every branch, such as lavapipe. Entering
      // does not test the budget, so every dispatch runs each live lane's block at least once,
      // however small the budget (one iteration more per nesting level at most).
      const std::string inside = words_ <= kInlineMemberWords
                                     ? fmt::format("ab_inside_{}()", component)
                                     : fmt::format("ab_inside({}u)", component);
      std::string body;
      const uint64_t body_pass = emit(item.children, indent + 3, body);
      out += fmt::format(
          "{}{{\n{}  bool go = {};\n{}  do {{\n{}    AB_COUNT_PASS({}u)\n{}    if (go) {{\n", pad,
          pad, inside, pad, pad, body_pass + 2, pad);
      out += pad + "      AB_ITERATION\n";
      out += body;
      out += fmt::format(
          "{}    }}\n{}    go = go && {} && AB_ROOM_LEFT && AB_BUDGET_LEFT;\n{}  }} while "
          "(AB_LOOP_CONTINUE(go));\n"
          "{}}}\n",
          pad, pad, inside, pad, pad);
    }
    return pass;
  }

  // The membership table and ab_inside, which the emitted loops call. A component's row has a
  // bit per block of the part's hull (set for the component's blocks in the part) and one more,
  // never set, for every PC outside it.
  std::string declarations() const {
    if (members_.empty()) return "";
    const std::string pc =
        "  const uint pc = min(AB_PC(gl_GlobalInvocationID.x) - AB_FIRST_BLOCK, "
        "AB_END_BLOCK - AB_FIRST_BLOCK);\n";
    if (words_ <= kInlineMemberWords) {
      // A function per component with its row as constants: a table indexed by the PC is a
      // gather of one load per SIMD lane on lavapipe, in every iteration of every loop.
      std::string out;
      for (size_t c = 0; c * words_ < members_.size(); ++c) {
        std::string row = "0u";
        for (uint32_t w = words_; w-- > 0;)
          row = fmt::format("w == {}u ? 0x{:08x}u : {}", w, members_[c * words_ + w], row);
        out += fmt::format(
            "bool ab_inside_{}() {{\n{}  const uint w = pc >> 5u;\n"
            "  return (({}) & (1u << (pc & 31u))) != 0u;\n}}\n",
            c, pc, row);
      }
      return out;
    }
    std::string table;
    for (size_t i = 0; i < members_.size(); ++i)
      table += fmt::format("{}0x{:08x}u", i ? ", " : "", members_[i]);
    return fmt::format(
        "const uint ab_members[{0}] = uint[]({1});\n"
        "bool ab_inside(uint component) {{\n{3}"
        "  return (ab_members[component * {2}u + (pc >> 5u)] & (1u << (pc & 31u))) != 0u;\n"
        "}}\n",
        members_.size(), table, words_, pc);
  }

  // The loops of one pass over the emitted items (each component loop once).
  const LoopCount& loops() const { return loops_; }

 private:
  BlockSet part_;
  BlockRange hull_;  // the membership rows' bits start at its first block
  uint32_t words_;   // per component
  const std::vector<LoopCount>& block_loops_;
  LoopCount loops_;
  int components_ = 0;
  std::vector<uint32_t> members_;
};

}  // namespace

// The local schedule per lane: each lane runs its own PC loop, visiting the blocks in sweep order
// (passes/analysis/sweep_order.h) with a loop per component, so lanes of a subgroup at the same
// block still run it together, a lane follows its forward edges within one iteration, and only a
// cycle costs another. A step is one loop iteration of the subgroup (at any nesting level).
// `sweep_loops`: the loops of one pass over the sweep (SweepEmitter::loops).
std::string lane_entry_point(const LoweredProgram& program, const SourcePart& part,
                             const std::vector<LoopCount>& block_loops, LoopCount& sweep_loops) {
  SweepEmitter sweep(part.blocks, block_loops);
  std::string body;
  const uint64_t outer_pass = sweep.emit(sweep_order(program, part.copy_callees), 2, body);
  sweep_loops = sweep.loops();
  const std::string outer = fmt::format("#define AB_OUTER_PASS_LOOPS {}u\n", outer_pass + 2);
  return fill_in(kAbEntryLaneText, {{"//@members", outer + sweep.declarations()},
                                    {"//@blocks", body},
                                    {"AB_RS_STEPS", slot_register(AB_SLOT_STEPS)}});
}

}  // namespace ab
