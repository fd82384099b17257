#include "passes/drop_unreachable_blocks.h"

namespace ab {

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

}  // namespace ab
