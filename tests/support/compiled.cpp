#include "support/compiled.h"

#include <doctest/doctest.h>

namespace ab::testing {

std::shared_ptr<const Module> compiled(const std::string& source, const CompileOptions& options) {
  auto module = Module::compile(source, options);
  REQUIRE_MESSAGE(module.ok(), (module.ok() ? "" : module.error()));
  return *module;
}

}  // namespace ab::testing
