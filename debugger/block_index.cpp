#include "debugger/block_index.h"

#include <charconv>

#include "autobatch/engine.h"

namespace ab::debugger {

std::string BlockIndex::name(int32_t pc) const {
  if (pc < 0 || pc >= exit_pc()) return "finished";
  return module_->blocks()[pc].name;
}

int BlockIndex::line(int32_t block) const {
  if (block < 0 || block >= exit_pc() || lines(block).empty()) return 0;
  return lines(block).front();
}

int32_t BlockIndex::find(const std::string& name_or_index) const {
  const std::vector<BlockInfo>& blocks = module_->blocks();
  for (size_t b = 0; b < blocks.size(); ++b)
    if (blocks[b].name == name_or_index) return static_cast<int32_t>(b);
  int32_t index = -1;
  auto [ptr, ec] =
      std::from_chars(name_or_index.data(), name_or_index.data() + name_or_index.size(), index);
  if (ec != std::errc() || ptr != name_or_index.data() + name_or_index.size()) return -1;
  return index >= 0 && index < static_cast<int32_t>(blocks.size()) ? index : -1;
}

std::string BlockIndex::ir(int32_t block) const {
  return module_->block_ir_text(block);
}

std::string BlockIndex::glsl(int32_t block) const {
  return ab::block_glsl(*module_, block);
}

std::vector<uint32_t> BlockIndex::per_line(const std::vector<uint32_t>& per_block) const {
  std::vector<uint32_t> out(1, 0);
  for (size_t b = 0; b < per_block.size(); ++b) {
    const int at = line(static_cast<int32_t>(b));
    if (at <= 0 || !per_block[b]) continue;
    if (out.size() <= static_cast<size_t>(at)) out.resize(at + 1, 0);
    out[at] += per_block[b];
  }
  return out;
}

}  // namespace ab::debugger
