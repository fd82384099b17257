// A model's parameters as the sampler sees them: D unconstrained coordinates that the chains move
// in, the P constrained ones (the model's space) they map to, each with the name it is reported
// under, and after those the columns of the model's transformed parameters and generated
// quantities.
//
// Two contracts (docs/nuts.md): the flat one, `log_density(q: float[D])`, whose coordinates are
// q[0] … q[D-1] with no bounds; and a struct of parameters, `log_density(p: Params)` with
// `struct Params { mu: float, tau: float<lower=0>, theta: float[8], s: simplex[3] }`, whose
// coordinates are its float fields in declaration order (arrays element by element,
// `theta[0]` …). Constrained coordinates are sampled unconstrained as Stan does (the Stan
// reference manual, "Constraint transforms"): x = L + exp(u) for a lower bound, x = U - exp(u)
// for an upper one, x = L + (U - L) inv_logit(u) for both (a bound may depend on earlier
// fields, `upper=1 - alpha1`: the transform runs in declaration order); an ordered vector x[0] =
// u[0], x[k] = x[k-1] + exp(u[k]) (positive_ordered: x[0] = exp(u[0])); a simplex of K from K - 1
// coordinates by stick-breaking, z[k] = inv_logit(u[k] - log(K - 1 - k)), x[k] = z[k] times what
// is left of the stick, x[K-1] the rest; a cholesky_factor_corr[K] from K (K - 1) / 2 canonical
// partial correlations z = tanh(u), row by row (Stan's): L[0][0] = 1, L[i][j] = z times the
// square root of what row i has left of its unit length, L[i][i] the rest. The log density gains
// the log Jacobian of the map.
//
// A struct model may also define `fn transformed(p: Params) -> T` and `fn generated(p: Params)
// -> G` (structs of floats, ints and bools, or arrays of them): their fields are columns after
// the parameters' (transformed first, as in CmdStan's CSV), computed once per kept draw.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "autobatch/expected.h"
#include "autobatch/value_type.h"

namespace ab::sample {

// A vector with a constrained type: coordinates [first, first + length) of the constrained ones
// (a cholesky_factor_corr[K]'s K x K, row by row).
struct ConstrainedVector {
  uint32_t first = 0, length = 0;
  VectorConstraint kind = VectorConstraint::None;
  // A cholesky_factor_corr's K.
  uint32_t side() const;
  // Its unconstrained coordinates: one fewer for a simplex, K (K - 1) / 2 for a
  // cholesky_factor_corr[K] (the elements below its diagonal).
  uint32_t free_length() const;
};

struct ParameterLayout {
  std::vector<std::string> names;          // per constrained coordinate: "q[3]", "tau", "m[1][2]"
  std::vector<FloatBounds> bounds;         // per constrained coordinate
  std::vector<ConstrainedVector> vectors;  // in order
  ValueType params;                        // the struct of parameters; void for the flat contract
  // The model's `transformed` and `generated` results (void when it has none) and their columns.
  ValueType transformed, generated;
  std::vector<std::string> quantity_names;
  uint32_t dimension() const { return static_cast<uint32_t>(names.size()); }  // constrained
  uint32_t unconstrained_dimension() const;
  uint32_t columns() const { return dimension() + static_cast<uint32_t>(quantity_names.size()); }
  bool constrained() const;  // some coordinate has a bound or a constrained type
};

ParameterLayout flat_layout(uint32_t dimension);

// Per constrained coordinate, 1 where its type alone fixes its value (a cholesky_factor_corr's
// L[0][0] = 1 and the zeros above its diagonal).
std::vector<uint8_t> structural_constants(const ParameterLayout& layout);

// The layout of a struct of parameters: every field a float or an array of floats (any shape).
// The error names the first field that is neither.
Expected<ParameterLayout> struct_layout(const ValueType& params);

// Adds the columns of `transformed` or `generated`'s result `t` (a struct of floats, ints, bools
// and arrays of them) under its fields' names; the error names a field of another type.
Status add_quantities(ParameterLayout& layout, const ValueType& t, bool generated);

// The .ab source the sampler (sampler/nuts.ab) needs from the model, appended after it:
// `const nuts_D` (unconstrained), `nuts_W` (columns), `nuts_density(u)` (value and gradient of
// the log density in the unconstrained space, the Jacobian included) and `nuts_draw(u)` (a
// draw's columns: the constrained coordinates, then the quantities). `hand_gradient`: the flat
// model returns its own LogDensity.
std::string sampler_glue(const ParameterLayout& layout, bool hand_gradient);

// For --init with bounds that depend on other parameters (Stan's rule): a function
// `nuts_init_bounds(x: float[nuts_P]) -> float[2 * nuts_P]` giving each coordinate's lower and
// upper bound computed from the constrained point x (0 where a bound is constant or absent), to
// be appended after sampler_glue's; "" when no bound depends on another parameter.
std::string init_bounds_glue(const ParameterLayout& layout);

// Constrained coordinates (dimension() of them) to unconstrained ones (for --init), in
// declaration order; the error names the coordinate that lies outside its bounds (or on one: a
// bound maps to infinity) or the vector that is not of its type. `dependent_bounds`: what
// nuts_init_bounds gives for `constrained` (without them a dependent bound is an error).
Expected<std::vector<float>> unconstrain(const ParameterLayout& layout,
                                         const std::vector<float>& constrained,
                                         const std::vector<float>* dependent_bounds = nullptr);

// The maps nuts_constrain and nuts_log_jacobian apply, in double precision (tests compare them);
// NaN for a coordinate whose bound depends on other parameters (the model computes that bound).
double constrain(const FloatBounds& b, double u);
std::vector<double> constrain(const ParameterLayout& layout, const std::vector<double>& u);

}  // namespace ab::sample
