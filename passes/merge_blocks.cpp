#include "passes/merge_blocks.h"

#include "passes/analysis/liveness.h"  // successors()
#include "passes/drop_unreachable_blocks.h"

namespace ab {

int merge_blocks(Program& program) {
  int merged = 0;
  for (Function& fn : program.functions) {
    const size_t n = fn.blocks.size();
    std::vector<uint32_t> preds(n, 0);  // edges into each block (a Branch's two count twice)
    for (const Block& block : fn.blocks)
      for (int32_t to : {block.term.target, block.term.target_else})
        if (to >= 0) ++preds[to];
    bool changed = false;
    for (Block& into : fn.blocks) {
      // Follow the chain: after a merge, `into` ends as the merged block did.
      for (;;) {
        if (into.term.kind != Terminator::Kind::Jump) break;
        const int32_t c = into.term.target;
        Block& next = fn.blocks[c];
        if (c == 0 || &next == &into || preds[c] != 1) break;
        into.ops.insert(into.ops.end(), std::make_move_iterator(next.ops.begin()),
                        std::make_move_iterator(next.ops.end()));
        next.ops.clear();
        into.term = next.term;
        // `next` is now unreachable; point it at itself so no later chain walks into it.
        next.term = Terminator{Terminator::Kind::Jump, -1, c, -1, next.term.loc};
        preds[c] = 0;
        ++merged;
        changed = true;
      }
    }
    if (changed) drop_unreachable_blocks(fn);
  }
  return merged;
}

void merge_straight_chains(Function& fn) {
  const size_t n = fn.blocks.size();
  std::vector<int> preds(n, 0);
  for (const Block& b : fn.blocks)
    for (int s : successors(b.term))
      ++preds[s];
  std::vector<bool> dead(n, false);
  for (size_t b = 0; b < n; ++b) {
    if (dead[b]) continue;
    for (;;) {
      const Terminator& t = fn.blocks[b].term;
      if (t.kind != Terminator::Kind::Jump) break;
      const int c = t.target;
      if (c == 0 || c == static_cast<int>(b) || preds[c] != 1 || dead[c]) break;
      Block& into = fn.blocks[b];
      Block& from = fn.blocks[c];
      into.ops.insert(into.ops.end(), from.ops.begin(), from.ops.end());
      into.term = from.term;
      from.ops.clear();
      dead[c] = true;
    }
  }
  std::vector<int> index(n, -1);
  std::vector<Block> kept;
  for (size_t b = 0; b < n; ++b)
    if (!dead[b]) {
      index[b] = static_cast<int>(kept.size());
      kept.push_back(std::move(fn.blocks[b]));
    }
  for (Block& b : kept) {
    if (b.term.target >= 0) b.term.target = index[b.term.target];
    if (b.term.target_else >= 0) b.term.target_else = index[b.term.target_else];
  }
  fn.blocks = std::move(kept);
}

}  // namespace ab
