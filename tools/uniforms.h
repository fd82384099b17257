// Binding the program's uniforms from `--uniform NAME=@file.npy|@file.csv` (or NAME=VALUE for a
// scalar uniform). Every declared uniform must be bound, and a file's shape must match the
// declared type exactly:
//   .npy  shape () for a scalar, (N,) for T[N], (A, B) for T[A][B], ...
//   .csv  one value for a scalar; N rows of one value or one row of N values for T[N];
//         A rows of B*C values (row-major) for T[A][B][C].
// Numbers are converted to the uniform's scalar type with the checks of tools/values.h.
#pragma once

#include <string>
#include <vector>

#include "autobatch/batch.h"
#include "autobatch/expected.h"
#include "autobatch/module.h"

namespace ab::cli {

// `uniforms`: the module's, in declaration order (Module::uniforms()).
Expected<UniformData> bind_uniforms(const std::vector<ValueInfo>& uniforms,
                                    const std::vector<std::string>& bindings);

}  // namespace ab::cli
