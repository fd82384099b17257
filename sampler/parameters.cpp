#include "sampler/parameters.h"

#include <cmath>
#include <functional>

#include <fmt/format.h>

namespace ab::sample {
namespace {

bool is_float_tree(const ValueType& t) {
  if (t.is_array()) return is_float_tree(t.elem());
  return t.is_scalar() && t.scalar == Scalar::Float;
}

// A float as an .ab literal that reads back as the same float.
std::string float_literal(float v) {
  std::string s = fmt::format("{:.9g}", v);
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

// The struct literal of type `t` whose floats are x[first], x[first + 1], … in flattening order.
std::string pack(const ValueType& t, uint32_t& next) {
  if (t.is_scalar()) return fmt::format("x[{}]", next++);
  std::string out = "[";
  for (uint32_t i = 0; i < t.count; ++i)
    out += (i ? ", " : "") + pack(t.elem(), next);
  return out + "]";
}

}  // namespace

bool ParameterLayout::constrained() const {
  for (const FloatBounds& b : bounds)
    if (b.any()) return true;
  return false;
}

ParameterLayout flat_layout(uint32_t dimension) {
  ParameterLayout out;
  for (uint32_t i = 0; i < dimension; ++i) {
    out.names.push_back(fmt::format("q[{}]", i));
    out.bounds.emplace_back();
  }
  return out;
}

Expected<ParameterLayout> struct_layout(const ValueType& params) {
  ParameterLayout out;
  out.params = params;
  for (const ValueField& f : params.fields) {
    if (!is_float_tree(f.type))
      return Error{fmt::format(
          "field '{}: {}' of '{}': a struct of parameters holds floats and arrays of floats",
          f.name, f.type.spelling(), params.struct_name)};
    std::function<void(const ValueType&, const std::string&)> add = [&](const ValueType& t,
                                                                        const std::string& name) {
      if (t.is_scalar()) {
        out.names.push_back(name);
        out.bounds.push_back(f.bounds);
        return;
      }
      for (uint32_t i = 0; i < t.count; ++i)
        add(t.elem(), fmt::format("{}[{}]", name, i));
    };
    add(f.type, f.name);
  }
  return out;
}

std::string sampler_glue(const ParameterLayout& layout, bool hand_gradient) {
  const uint32_t D = layout.dimension();
  std::string out = fmt::format(
      "\n// The sampler's view of the model's parameters (sampler/parameters.h).\n"
      "const nuts_D: int = {};\n",
      D);
  if (!layout.params.is_struct()) {
    out += "fn nuts_constrain(u: float[nuts_D]) -> float[nuts_D] { return u; }\n";
  } else {
    // The constrained coordinates: one statement per bounded one, no loop (a loop that is not a
    // sum would put a tape entry per iteration on the chain's stacks).
    out += "fn nuts_constrain(u: float[nuts_D]) -> float[nuts_D] {\n    var x = u;\n";
    std::string jacobian = "    var j = 0.0;\n";
    for (uint32_t i = 0; i < D; ++i) {
      const FloatBounds& b = layout.bounds[i];
      if (!b.any()) continue;
      if (b.lower && b.upper) {
        const std::string L = float_literal(*b.lower), U = float_literal(*b.upper);
        const float width = *b.upper - *b.lower;
        if (std::isfinite(width)) {
          out += fmt::format("    x[{0}] = {1} + ({2} - {1}) * inv_logit(u[{0}]);\n", i, L, U);
          jacobian += fmt::format(
              "    j += log({2} - {1}) - log1p_exp(-u[{0}]) - log1p_exp(u[{0}]);\n", i, L, U);
        } else {
          // U - L overflows float (bounds like +-2e38): the point as a weighted mean of the
          // bounds, and ln(U - L) folded here in double.
          out += fmt::format("    x[{0}] = {1} * inv_logit(-u[{0}]) + {2} * inv_logit(u[{0}]);\n",
                             i, L, U);
          const double log_width = std::log(double{*b.upper} - double{*b.lower});
          jacobian += fmt::format("    j += {1} - log1p_exp(-u[{0}]) - log1p_exp(u[{0}]);\n", i,
                                  float_literal(static_cast<float>(log_width)));
        }
      } else if (b.lower) {
        out += fmt::format("    x[{0}] = {1} + exp(u[{0}]);\n", i, float_literal(*b.lower));
        jacobian += fmt::format("    j += u[{}];\n", i);
      } else {
        out += fmt::format("    x[{0}] = {1} - exp(u[{0}]);\n", i, float_literal(*b.upper));
        jacobian += fmt::format("    j += u[{}];\n", i);
      }
    }
    out += "    return x;\n}\n";
    out += "fn nuts_log_jacobian(u: float[nuts_D]) -> float {\n" + jacobian + "    return j;\n}\n";
    // The struct of parameters from the constrained coordinates.
    out += fmt::format("fn nuts_params(x: float[nuts_D]) -> {} {{\n    return {} {{ ",
                       layout.params.struct_name, layout.params.struct_name);
    uint32_t next = 0;
    for (size_t f = 0; f < layout.params.fields.size(); ++f)
      out += fmt::format("{}{}: {}", f ? ", " : "", layout.params.fields[f].name,
                         pack(layout.params.fields[f].type, next));
    out += " };\n}\n";
    out +=
        "fn nuts_log_density(u: float[nuts_D]) -> float {\n"
        "    return log_density(nuts_params(nuts_constrain(u))) + nuts_log_jacobian(u);\n}\n";
  }
  if (hand_gradient)
    out += "fn nuts_density(q: float[nuts_D]) -> LogDensity { return log_density(q); }\n";
  else
    out +=
        "struct nuts_Density { value: float, grad: float[nuts_D] }\n"
        "fn nuts_density(u: float[nuts_D]) -> nuts_Density {\n"
        "    let d = value_and_grad(" +
        std::string(layout.params.is_struct() ? "nuts_log_density" : "log_density") +
        ", u);\n"
        "    return nuts_Density { value: d.value, grad: d.grad };\n}\n";
  return out;
}

double constrain(const FloatBounds& b, double u) {
  if (b.lower && b.upper) return *b.lower + (*b.upper - *b.lower) / (1 + std::exp(-u));
  if (b.lower) return *b.lower + std::exp(u);
  if (b.upper) return *b.upper - std::exp(u);
  return u;
}

Expected<std::vector<float>> unconstrain(const ParameterLayout& layout,
                                         const std::vector<float>& constrained) {
  std::vector<float> out(constrained.size());
  for (size_t i = 0; i < constrained.size(); ++i) {
    const FloatBounds& b = layout.bounds[i % layout.bounds.size()];
    const double x = constrained[i];
    const bool inside =
        std::isfinite(x) && (!b.lower || x > *b.lower) && (!b.upper || x < *b.upper);
    if (!inside)
      return Error{fmt::format("{} = {} is not {}", layout.names[i % layout.names.size()], x,
                               b.lower && b.upper
                                   ? fmt::format("inside ({}, {})", *b.lower, *b.upper)
                               : b.lower ? fmt::format("above its lower bound {}", *b.lower)
                               : b.upper ? fmt::format("below its upper bound {}", *b.upper)
                                         : std::string("finite"))};
    double u = x;
    if (b.lower && b.upper) {
      const double p = (x - *b.lower) / (*b.upper - *b.lower);
      u = std::log(p) - std::log1p(-p);
    } else if (b.lower) {
      u = std::log(x - *b.lower);
    } else if (b.upper) {
      u = std::log(*b.upper - x);
    }
    out[i] = static_cast<float>(u);
  }
  return out;
}

}  // namespace ab::sample
