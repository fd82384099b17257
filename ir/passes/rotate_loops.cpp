#include "ir/passes/rotate_loops.h"

#include <algorithm>

namespace ab {
namespace {

bool is_small_test(const Block& block) {
  return block.term.kind == Terminator::Kind::Branch && block.ops.size() <= kMaxTestOps &&
         std::none_of(block.ops.begin(), block.ops.end(),
                      [](const Op& op) { return op.code == OpCode::Call; });
}

}  // namespace

void drop_unreachable_blocks(Function& fn) {
  const size_t n = fn.blocks.size();
  std::vector<int32_t> new_id(n, -1);
  std::vector<int32_t> work{0};
  new_id[0] = 0;
  while (!work.empty()) {
    const Terminator& t = fn.blocks[work.back()].term;
    work.pop_back();
    for (int32_t to : {t.target, t.target_else})
      if (to >= 0 && new_id[to] < 0) {
        new_id[to] = 0;
        work.push_back(to);
      }
  }
  int32_t kept = 0;
  for (size_t b = 0; b < n; ++b)
    if (new_id[b] >= 0) new_id[b] = kept++;
  if (static_cast<size_t>(kept) == n) return;
  std::vector<Block> blocks;
  blocks.reserve(kept);
  for (size_t b = 0; b < n; ++b) {
    if (new_id[b] < 0) continue;
    Block& block = blocks.emplace_back(std::move(fn.blocks[b]));
    if (block.term.target >= 0) block.term.target = new_id[block.term.target];
    if (block.term.target_else >= 0) block.term.target_else = new_id[block.term.target_else];
  }
  fn.blocks = std::move(blocks);
}

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
