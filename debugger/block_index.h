// The program's blocks as the source view and the block view name them: a block's name and source
// lines, a block found by name or index, its lowered IR and generated GLSL, and lane counts per
// block summed per source line.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "autobatch/module.h"

namespace ab::debugger {

class BlockIndex {
 public:
  explicit BlockIndex(const Module& module) : module_(&module) {}

  int32_t exit_pc() const { return static_cast<int32_t>(module_->blocks().size()); }
  // The block name of a PC ("finished" for exit_pc() or any PC that is no block).
  std::string name(int32_t pc) const;
  // The source lines with code of `block`, and the line a lane waiting there is shown at (0
  // when it has none).
  const std::vector<int>& lines(int32_t block) const { return module_->blocks()[block].lines; }
  int line(int32_t block) const;
  // A block by name ("fib.b2") or index ("3"); -1 if there is none.
  int32_t find(const std::string& name_or_index) const;
  // The lowered IR of a block (Module::block_ir_text) and its generated GLSL function
  // (ab::block_glsl; needs no device). "" for a block that does not exist.
  std::string ir(int32_t block) const;
  std::string glsl(int32_t block) const;
  // [line] the counts of `per_block` at each block's line (index 0 unused).
  std::vector<uint32_t> per_line(const std::vector<uint32_t>& per_block) const;

 private:
  const Module* module_;
};

}  // namespace ab::debugger
