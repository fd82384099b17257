// A module compiled through the public API for a test, which stops (REQUIRE) with the compiler's
// diagnostics when the source does not compile.
#pragma once

#include <memory>
#include <string>

#include "autobatch/module.h"

namespace ab::testing {

std::shared_ptr<const Module> compiled(const std::string& source,
                                       const CompileOptions& options = {});

}  // namespace ab::testing
