// The systems a benchmark row can run on: the CPU VM, the hand-written native baseline, and the
// Vulkan engine's four schedule variants. Names are what --systems takes and the report prints.
#pragma once

#include <string>
#include <vector>

#include "autobatch/engine.h"

namespace ab::bench {

enum class SystemKind { Vm, Native, Vulkan };

struct System {
  std::string name;
  SystemKind kind = SystemKind::Vm;
  Schedule schedule = Schedule::Global;  // Vulkan only
  GlobalMode global_mode = GlobalMode::Compacted;
  LocalScope local_scope = LocalScope::Subgroup;
};

// vm, native, global-masked, global-compacted, local-subgroup, local-workgroup.
const std::vector<System>& all_systems();
// Expands names ("vulkan" = the four Vulkan variants, "all" = every system) in the canonical
// order, without duplicates. Returns false and names the culprit in `unknown` on a bad name.
bool select_systems(const std::vector<std::string>& names, std::vector<System>& selected,
                    std::string& unknown);

}  // namespace ab::bench
