#include "support/spirv_check.h"

#include <doctest/doctest.h>

#include <string>

#include "engine/device/shader_compiler.h"

namespace ab::enginetest {

size_t check_spirv(VulkanProgram& program) {
  auto all = program.all_spirv();
  REQUIRE_MESSAGE(all.ok(), all.error());
  for (size_t i = 0; i < all->size(); ++i) {
    const std::string problem = validate_spirv((*all)[i]);
    CHECK_MESSAGE(problem.empty(), "module ", i, ": ", problem);
  }
  return all->size();
}

}  // namespace ab::enginetest
