// spirv-val over every module of a Vulkan program, for the engine's white-box tests (it links
// into autobatch_engine_tests alone: the validator is engine/device's).
#pragma once

#include <cstddef>

#include "autobatch/engine.h"

namespace ab::enginetest {

// Checks that every module of `program` (the generated kernel variants and the hand-written
// ones) passes spirv-val; returns how many there are.
size_t check_spirv(VulkanProgram& program);

}  // namespace ab::enginetest
