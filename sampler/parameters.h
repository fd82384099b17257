// A model's parameters as the sampler sees them: D unconstrained coordinates, each with the name
// it is reported under and the bounds that map it to the model's (constrained) space.
//
// Two contracts (docs/nuts.md): the flat one, `log_density(q: float[D])`, whose coordinates are
// q[0] … q[D-1] with no bounds; and a struct of parameters, `log_density(p: Params)` with
// `struct Params { mu: float, tau: float<lower=0>, theta: float[8] }`, whose coordinates are its
// float fields in declaration order (arrays element by element, `theta[0]` …). Bounded
// coordinates are sampled unconstrained as Stan does: x = L + exp(u) for a lower bound,
// x = U - exp(u) for an upper one, x = L + (U - L) inv_logit(u) for both, and the log density
// gains the log Jacobian of that map.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "autobatch/expected.h"
#include "autobatch/value_type.h"

namespace ab::sample {

struct ParameterLayout {
  std::vector<std::string> names;   // per coordinate: "q[3]", "tau", "theta[0]", "m[1][2]"
  std::vector<FloatBounds> bounds;  // per coordinate
  ValueType params;                 // the struct of parameters; void for the flat contract
  uint32_t dimension() const { return static_cast<uint32_t>(names.size()); }
  bool constrained() const;  // some coordinate has a bound
};

ParameterLayout flat_layout(uint32_t dimension);

// The layout of a struct of parameters: every field a float or an array of floats (any shape).
// The error names the first field that is neither.
Expected<ParameterLayout> struct_layout(const ValueType& params);

// The .ab source the sampler (sampler/nuts.ab) needs from the model, appended after it:
// `const nuts_D`, `nuts_density(u)` (value and gradient of the log density in the unconstrained
// space, the Jacobian included) and `nuts_constrain(u)` (the constrained coordinates, what the
// draws hold). `hand_gradient`: the flat model returns its own LogDensity.
std::string sampler_glue(const ParameterLayout& layout, bool hand_gradient);

// Constrained coordinates to unconstrained ones (for --init); the error names the coordinate
// that lies outside its bounds (or on one: a bound maps to infinity).
Expected<std::vector<float>> unconstrain(const ParameterLayout& layout,
                                         const std::vector<float>& constrained);

// The map nuts_constrain applies, in double precision (tests compare the two).
double constrain(const FloatBounds& b, double u);

}  // namespace ab::sample
