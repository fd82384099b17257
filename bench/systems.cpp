#include "bench/systems.h"

#include <fmt/format.h>

#include <algorithm>

namespace ab::bench {

const std::vector<System>& all_systems() {
  static const std::vector<System> systems = {
      {"vm", SystemKind::Vm},
      {"native", SystemKind::Native},
      {"glsl", SystemKind::Glsl},
      {"global-masked", SystemKind::Vulkan, Schedule::Global, GlobalMode::Masked},
      {"global-compacted", SystemKind::Vulkan, Schedule::Global, GlobalMode::Compacted},
      {"local-subgroup", SystemKind::Vulkan, Schedule::Local, GlobalMode::Compacted,
       LocalScope::Subgroup},
      {"local-workgroup", SystemKind::Vulkan, Schedule::Local, GlobalMode::Compacted,
       LocalScope::Workgroup},
      {"local-lane", SystemKind::Vulkan, Schedule::Local, GlobalMode::Compacted, LocalScope::Lane},
  };
  return systems;
}

Expected<std::vector<System>> select_systems(const std::vector<std::string>& names) {
  std::vector<bool> wanted(all_systems().size(), names.empty());
  for (const std::string& name : names) {
    bool matched = false;
    for (size_t i = 0; i < all_systems().size(); ++i) {
      const System& s = all_systems()[i];
      if (name == s.name || name == "all" || (name == "vulkan" && s.kind == SystemKind::Vulkan)) {
        wanted[i] = true;
        matched = true;
      }
    }
    if (!matched) {
      std::string known = "vulkan, all";
      for (const System& s : all_systems())
        known += ", " + s.name;
      return Error{fmt::format("unknown system '{}' (known: {})", name, known)};
    }
  }
  std::vector<System> selected;
  for (size_t i = 0; i < all_systems().size(); ++i)
    if (wanted[i]) selected.push_back(all_systems()[i]);
  return selected;
}

}  // namespace ab::bench
