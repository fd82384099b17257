// Stan's transformed data: a uniform with an initializer, `uniform logw: float[N] = log(weight);`,
// computed once from the bound data, never per lane.
//
// add_transformed_data_functions runs on the parsed module, before the top level is declared: each
// such uniform's expression becomes a function `ab_transformed_data_logw() -> float[N]` returning
// it (its name is the uniform's, behind a prefix the source may not use), appended to the
// module; the uniform itself stays an ordinary one, so every backend reads it as bound data.
//
// transformed_data(program) finds those functions again in the compiled program and orders them
// so that each comes after the transformed data it reads (directly or through the functions it
// calls). With `diags` it reports, at the uniform's name, a cycle among them and an expression
// that draws a random number or emits a record: a transformed datum is a pure function of the
// data. Binding the uniforms (core/transformed_data.cpp) runs the functions in that order on the
// interpreter, the oracle, so every backend sees the same bits.
#pragma once

#include <string>
#include <vector>

#include "ir/diagnostics.h"
#include "ir/ir.h"
#include "lang/ast.h"

namespace ab {

constexpr const char* kTransformedDataPrefix = "ab_transformed_data_";

struct TransformedData {
  int uniform = -1;   // Program::uniforms
  int function = -1;  // Program::functions: computes it, with no parameters
};

// In dependency order; empty for a program without transformed data. With `diags`, reports a
// cycle, a random draw or an emit (see above) and returns what it could order.
std::vector<TransformedData> transformed_data(const Program& program, Diagnostics* diags = nullptr);

}  // namespace ab

namespace ab::frontend {

void add_transformed_data_functions(ast::Module& module, Diagnostics& diags);

}  // namespace ab::frontend
