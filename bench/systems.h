// The systems a benchmark row can run on: the CPU VM, the two hand-written baselines (native C++,
// the CPU's ceiling; per-lane GLSL kernels, the device's ceiling) and the Vulkan engine's five
// schedule variants. Names are what --systems takes and the report prints.
#pragma once

#include <string>
#include <vector>

#include "autobatch/expected.h"

#include "autobatch/engine.h"

namespace ab::bench {

enum class SystemKind {
  Vm,
  Native,  // bench/native*.cpp
  Glsl,    // bench/ceiling/*.glsl through ComputeKernel (bench/ceiling.h)
  Vulkan,  // the engine
};

struct System {
  std::string name;
  SystemKind kind = SystemKind::Vm;
  Schedule schedule = Schedule::Global;  // Vulkan only
  GlobalMode global_mode = GlobalMode::Compacted;
  LocalScope local_scope = LocalScope::Subgroup;
};

// vm, native, glsl, global-masked, global-compacted, local-subgroup, local-workgroup, local-lane.
const std::vector<System>& all_systems();
// Expands names ("vulkan" = the engine's five variants, not glsl; "all" = every system) in the
// canonical order, without duplicates; none: every system. A bad name is an Error that names it
// and the known ones.
Expected<std::vector<System>> select_systems(const std::vector<std::string>& names);

}  // namespace ab::bench
