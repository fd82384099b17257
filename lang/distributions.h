// Internal to the front end: Stan's distributions as builtins (lang/distributions.cpp) and the
// draws' library of functions written in the language (lang/rng_library.cpp).
//
// A log density (`normal_lpdf(y | mu, sigma)`, `poisson_lpmf(n | lambda)`, ...) is composed at
// its call of the language's own elementwise ops and `sum`: no op of its own, so the interpreter,
// the vm, the GLSL and `grad` all get it, with the bits of the ops it is made of. Any argument
// may be an array (those of one call share one shape), scalars broadcast, and the result is the
// `sum` of the elementwise log density (or that scalar). A random draw (`normal_rng(mu, sigma)`)
// is composed the same way from the lane's `uniform()` and `normal()`; the ones that need a loop
// (rejection sampling) call a function of the library. Every argument is checked first, as
// Stan's are: one outside its domain faults the lane (`assert_failed`) with a text naming the
// function and the argument ("normal_lpdf: sigma must be > 0"). docs/language.md,
// "Distributions", is the user's page.
#pragma once

#include <string>

#include "lang/ast.h"

namespace ab::frontend {

// Whether `name` is one of the distributions' builtins (a density or a draw): user functions may
// not reuse these names, nor those of the library's functions.
bool is_distribution_builtin(const std::string& name);
bool is_library_function(const std::string& name);

// Appends to `module` the library functions its functions call, directly or through a draw's
// builtin (and those these call), with no source location of their own.
void add_library_functions(ast::Module& module);

}  // namespace ab::frontend
