// Checking a VM checkpoint that came from outside the run (a trace file, a host) before
// VmRun::restore takes it: restoring a checkpoint that does not fit its program and batch, or
// running on from it, must not index out of bounds. Used by the public VmSession::restore and by
// the debugger's trace replay.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "cpu/vm.h"

namespace ab {

class VmCheckpointCheck {
 public:
  // `shards`: how many shards the run steps apart (VmRun's shard_lanes).
  VmCheckpointCheck(const LoweredProgram& program, uint32_t lanes, uint32_t stack_depth,
                    size_t shards = 0);
  // "" if `checkpoint` fits, else what does not ("a PC is outside the program", ...).
  std::string operator()(const VmCheckpoint& checkpoint) const;

 private:
  const LoweredProgram* program_;
  uint32_t lanes_, stack_depth_;
  size_t shards_;
  std::vector<std::vector<uint32_t>> demand_;  // see vm_check.cpp
};

}  // namespace ab
