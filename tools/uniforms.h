// Binding the program's uniforms from `--uniform NAME=@file.npy|@file.csv` (or NAME=VALUE for a
// scalar uniform). Every declared uniform must be bound, and a file's shape must match the
// declared type exactly:
//   .npy  shape () for a scalar, (N,) for T[N], (A, B) for T[A][B], ...
//   .csv  one value for a scalar; N rows of one value or one row of N values for T[N];
//         A rows of B*C values (row-major) for T[A][B][C].
// Numbers are converted to the uniform's scalar type with the checks of tools/values.h.
// `--data FILE.json` (tools/json_data.h) binds every uniform its object names, by name; a
// `--uniform` binding of the same name takes precedence, and a name in two data files is refused.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "autobatch/batch.h"
#include "autobatch/expected.h"
#include "autobatch/module.h"

namespace ab::cli {

// How much a float uniform's data changed when rounded from float64 (a CSV number, an .npy
// float64) to float32: the largest relative change and where.
struct Rounding {
  std::string uniform;
  double relative_change = 0;
  uint64_t element = 0;  // C order
};

// `uniforms`: the module's, in declaration order (Module::uniforms()). `data_files`: the
// --data files, JSON. `rounded`, when given, receives one entry per float uniform whose data
// changed in rounding.
Expected<UniformData> bind_uniforms(const std::vector<ValueInfo>& uniforms,
                                    const std::vector<std::string>& bindings,
                                    const std::vector<std::string>& data_files = {},
                                    std::vector<Rounding>* rounded = nullptr);

// As above for `module`'s uniforms, whose transformed data (autobatch/transformed_data.h) are
// computed, not bound: binding one by name is an error, as is a fault computing it.
Expected<UniformData> bind_uniforms(const Module& module, const std::vector<std::string>& bindings,
                                    const std::vector<std::string>& data_files = {},
                                    std::vector<Rounding>* rounded = nullptr);

// The numbers of the --data files by name (JsonData::numbers), the first file's where two hold
// one: the values of a program's `const N: int = data;`.
Expected<std::map<std::string, double>> data_constants(const std::vector<std::string>& data_files);

}  // namespace ab::cli
