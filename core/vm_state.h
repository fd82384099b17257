// The inside of an ab::VmState (autobatch/vm.h): a VM checkpoint. The trace reader makes states
// of the checkpoints it reads, and the trace writer takes them back.
#pragma once

#include <memory>

#include "autobatch/vm.h"
#include "cpu/vm.h"

namespace ab {

struct VmState::Impl {
  VmCheckpoint checkpoint;
};

std::shared_ptr<const VmState> make_vm_state(VmCheckpoint checkpoint);

}  // namespace ab
