// The systems a benchmark row can run on: the CPU VM, the two hand-written baselines (native C++,
// the CPU's ceiling; per-lane GLSL kernels, the device's ceiling) and the Vulkan engine's five
// schedule variants. Names are what --systems takes and the report prints.
#pragma once

#include <string>
#include <vector>

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
// canonical order, without duplicates. Returns false and names the culprit in `unknown` on a bad
// name.
bool select_systems(const std::vector<std::string>& names, std::vector<System>& selected,
                    std::string& unknown);

}  // namespace ab::bench
