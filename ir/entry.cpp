#include "ir/entry.h"

#include <fmt/format.h>

namespace ab {

std::string missing_entry_message(const Program& program, const std::string& shown) {
  std::vector<std::string> names;
  for (const Function& f : program.functions)
    names.push_back(f.name);
  return fmt::format("no function '{}' in '{}' to use as the entry; its functions are: {}", shown,
                     program.file,
                     names.empty() ? "none" : fmt::format("{}", fmt::join(names, ", ")));
}

}  // namespace ab
