// The generated kernels' entry points, which the schedules supply to the code generator
// (codegen/glsl_codegen.h, KernelEntry): each schedule class names its kernel's entry (a static
// entry() beside its step_kernel()), and schedule_entries() lists them all, for every caller of
// generate_glsl (VulkanProgram, the tests). A new schedule adds its shaders/ab_entry_<kernel>.glsl
// (embedded by engine/CMakeLists.txt), its entry() and its row in schedule_entries.cpp; the code
// generator does not change.
#pragma once

#include "codegen/glsl_codegen.h"

namespace ab {

// Every kernel's entry, in the order its residency's source holds them.
KernelEntries schedule_entries();

}  // namespace ab
