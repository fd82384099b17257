#include "passes/rotate_loops.h"

#include <algorithm>

#include "passes/drop_unreachable_blocks.h"

namespace ab {
namespace {

bool is_small_test(const Block& block) {
  return block.term.kind == Terminator::Kind::Branch && block.ops.size() <= kMaxTestOps &&
         std::none_of(block.ops.begin(), block.ops.end(), [](const Op& op) { return is_call(op); });
}

}  // namespace

int rotate_loops(Program& program) {
  int replaced = 0;
  for (Function& fn : program.functions) {
    bool changed = false;
    for (Block& from : fn.blocks) {
      if (from.term.kind != Terminator::Kind::Jump) continue;
      const int32_t h = from.term.target;
      if (h == 0 || !is_small_test(fn.blocks[h])) continue;
      const Block& test = fn.blocks[h];  // not `from`: a Jump block is no small test
      from.ops.insert(from.ops.end(), test.ops.begin(), test.ops.end());
      from.term = test.term;
      ++replaced;
      changed = true;
    }
    if (changed) drop_unreachable_blocks(fn);
  }
  return replaced;
}

}  // namespace ab
