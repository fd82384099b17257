// Bounds that depend on other parameters, as Stan writes GARCH's
// `real<lower=0, upper=1 - alpha1> beta1;`: in .ab `beta1: float<lower=0, upper=1 - alpha1>`.
//
// add_bound_functions runs on the parsed module, before the top level is declared. A field's
// bound that names an earlier field of its struct, or a uniform (data), cannot be folded to a
// constant; it becomes a function `nuts_bound_S_f_lower(nuts_p: S) -> float` returning the
// expression with each earlier field `a` read as `nuts_p.a`, appended to the module, and the
// field's TypeExpr keeps only the function's name (lower_fn / upper_fn). The sampler's glue
// (sampler/parameters.cpp) calls it with the coordinates constrained so far, which is why only
// earlier fields may appear: the transform runs in declaration order (Stan's rule). A bound
// naming its own field or a later one is an error at that name; a bound of another type than
// float is reported by the function's return (function_builder.cpp names the bound).
#pragma once

#include "ir/diagnostics.h"
#include "lang/ast.h"

namespace ab::frontend {

void add_bound_functions(ast::Module& module, Diagnostics& diags);

}  // namespace ab::frontend
