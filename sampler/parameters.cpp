#include "sampler/parameters.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <optional>

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

// Every scalar of a value of type `t` called `name`, in flattening order: ("m[1][2]").
void scalar_names(const ValueType& t, const std::string& name, std::vector<std::string>& out) {
  if (!t.is_array()) {
    out.push_back(name);
    return;
  }
  for (uint32_t i = 0; i < t.count; ++i)
    scalar_names(t.elem(), fmt::format("{}[{}]", name, i), out);
}

// The stick-breaking offset of a simplex's k-th free coordinate, log(K - 1 - k) (Stan's), so
// that u = 0 is the simplex's centre.
double simplex_offset(uint32_t length, uint32_t k) {
  return std::log(static_cast<double>(length - 1 - k));
}

// u[i] shifted by a simplex's offset, as .ab.
std::string shifted(uint32_t i, double offset) {
  if (offset == 0) return fmt::format("u[{}]", i);
  return fmt::format("(u[{}] - {})", i, float_literal(static_cast<float>(offset)));
}

// nuts_constrain's and nuts_log_jacobian's bodies, a statement per coordinate: no loop (a loop
// that is not a sum would put a tape entry per iteration on the chain's stacks).
struct Maps {
  // A cholesky_factor_corr[K] from u[ui] on, row by row: z = tanh(u), L[i][j] = z sqrt(rest),
  // rest = rest sech(u)^2 (which is 1 - z^2, without z rounding to 1), L[i][i] = sqrt(rest).
  // Its log-Jacobian, log1m(z^2) per element and half the log of what a row has left at each of
  // its later elements (Stan's), is sum over row i's elements j of (i + 1 - j) log sech(u),
  // log sech(u) = u + log 2 - log1p_exp(2 u).
  void correlation_factor(const ConstrainedVector& v, uint32_t ui) {
    const uint32_t k = v.side();
    constrain += fmt::format("    x[{}] = 1.0;\n", v.first);
    for (uint32_t i = 1; i < k; ++i) {
      constrain += "    rest = 1.0;\n";
      for (uint32_t j = 0; j < i; ++j, ++ui) {
        const std::string log_sech =
            fmt::format("(u[{0}] + 0.693147182 - log1p_exp(2.0 * u[{0}]))", ui);
        constrain +=
            fmt::format("    x[{}] = tanh(u[{}]) * sqrt(rest);\n    rest = rest * exp(2.0 * {});\n",
                        v.first + i * k + j, ui, log_sech);
        jacobian += fmt::format("    j += {} * {};\n", float_literal(static_cast<float>(i + 1 - j)),
                                log_sech);
      }
      constrain += fmt::format("    x[{}] = sqrt(rest);\n", v.first + i * k + i);
    }
  }

  std::string constrain, jacobian;

  // Whether a bound depends on other parameters (`upper=1 - alpha1`): nuts_log_jacobian then
  // needs the constrained point x as well.
  bool jacobian_reads_x = false;

  // Coordinate x[xi] from u[ui] through its bounds; a free one only when `copy_free`. A
  // dependent bound is its function of the struct packed from x, whose earlier fields the
  // statements before this one have constrained already (declaration order, as Stan's).
  void bounded(const FloatBounds& b, uint32_t xi, uint32_t ui, bool copy_free) {
    const auto source = [](const std::optional<float>& value, const std::string& fn) {
      return fn.empty() ? float_literal(*value) : fmt::format("{}(nuts_params(x))", fn);
    };
    if (b.has_lower() && b.has_upper()) {
      const std::string L = source(b.lower, b.lower_fn), U = source(b.upper, b.upper_fn);
      if (b.dependent() || std::isfinite(*b.upper - *b.lower)) {
        constrain +=
            fmt::format("    x[{}] = {} + ({} - {}) * inv_logit(u[{}]);\n", xi, L, U, L, ui);
        jacobian += fmt::format(
            "    j += log({1} - {0}) - log1p_exp(-u[{2}]) - log1p_exp(u[{2}]);\n", L, U, ui);
        jacobian_reads_x |= b.dependent();
      } else {
        // U - L overflows float (bounds like +-2e38): the point as a weighted mean of the
        // bounds, and ln(U - L) folded here in double.
        constrain += fmt::format(
            "    x[{0}] = {1} * inv_logit(-u[{2}]) + {3} * inv_logit(u[{2}]);\n", xi, L, ui, U);
        const double log_width = std::log(double{*b.upper} - double{*b.lower});
        jacobian += fmt::format("    j += {1} - log1p_exp(-u[{0}]) - log1p_exp(u[{0}]);\n", ui,
                                float_literal(static_cast<float>(log_width)));
      }
    } else if (b.has_lower()) {
      constrain +=
          fmt::format("    x[{}] = {} + exp(u[{}]);\n", xi, source(b.lower, b.lower_fn), ui);
      jacobian += fmt::format("    j += u[{}];\n", ui);
    } else if (b.has_upper()) {
      constrain +=
          fmt::format("    x[{}] = {} - exp(u[{}]);\n", xi, source(b.upper, b.upper_fn), ui);
      jacobian += fmt::format("    j += u[{}];\n", ui);
    } else if (copy_free) {
      constrain += fmt::format("    x[{}] = u[{}];\n", xi, ui);
    }
  }

  // A constrained vector from u[ui] on.
  void vector(const ConstrainedVector& v, uint32_t ui) {
    const uint32_t x = v.first;
    if (v.kind == VectorConstraint::CholeskyFactorCorr) return correlation_factor(v, ui);
    if (v.kind == VectorConstraint::Simplex) {
      constrain += "    stick = 1.0;\n";
      jacobian += "    stick = 1.0;\n";
      for (uint32_t k = 0; k + 1 < v.length; ++k) {
        const std::string t = shifted(ui + k, simplex_offset(v.length, k));
        constrain +=
            fmt::format("    x[{0}] = stick * inv_logit({1});\n    stick -= x[{0}];\n", x + k, t);
        jacobian += fmt::format("    j += log(stick) - log1p_exp(-{0}) - log1p_exp({0});\n", t);
        if (k + 2 < v.length) jacobian += fmt::format("    stick -= stick * inv_logit({});\n", t);
      }
      constrain += fmt::format("    x[{}] = stick;\n", x + v.length - 1);
      return;
    }
    if (v.kind == VectorConstraint::PositiveOrdered) {
      constrain += fmt::format("    x[{}] = exp(u[{}]);\n", x, ui);
      jacobian += fmt::format("    j += u[{}];\n", ui);
    } else {
      constrain += fmt::format("    x[{}] = u[{}];\n", x, ui);
    }
    for (uint32_t k = 1; k < v.length; ++k) {
      constrain += fmt::format("    x[{}] = x[{}] + exp(u[{}]);\n", x + k, x + k - 1, ui + k);
      jacobian += fmt::format("    j += u[{}];\n", ui + k);
    }
  }
};

// nuts_constrain, nuts_log_jacobian and nuts_params of a struct of parameters.
std::string struct_glue(const ParameterLayout& layout) {
  const bool reshaped = layout.unconstrained_dimension() != layout.dimension();
  Maps maps;
  // The running variables the transforms need: what is left of a simplex's stick, of a
  // correlation factor's row.
  const auto uses = [&](VectorConstraint kind) {
    return std::any_of(layout.vectors.begin(), layout.vectors.end(),
                       [&](const auto& v) { return v.kind == kind; });
  };
  const std::string stick =
      std::string(uses(VectorConstraint::Simplex) ? "    var stick = 1.0;\n" : "") +
      (uses(VectorConstraint::CholeskyFactorCorr) ? "    var rest = 1.0;\n" : "");
  size_t next_vector = 0;
  for (uint32_t i = 0, ui = 0; i < layout.dimension();) {
    if (next_vector < layout.vectors.size() && layout.vectors[next_vector].first == i) {
      const ConstrainedVector& v = layout.vectors[next_vector++];
      maps.vector(v, ui);
      i += v.length;
      ui += v.free_length();
      continue;
    }
    maps.bounded(layout.bounds[i], i, ui, reshaped);
    ++i;
    ++ui;
  }
  std::string out = "fn nuts_constrain(u: float[nuts_D]) -> float[nuts_P] {\n";
  out += reshaped ? "    var x = [0.0; nuts_P];\n" : "    var x = u;\n";
  out += stick + maps.constrain + "    return x;\n}\n";
  out += std::string("fn nuts_log_jacobian(u: float[nuts_D]) -> float {\n    var j = 0.0;\n") +
         (maps.jacobian_reads_x ? "    let x = nuts_constrain(u);\n" : "") + stick + maps.jacobian +
         "    return j;\n}\n";
  // The struct of parameters from the constrained coordinates.
  out += fmt::format("fn nuts_params(x: float[nuts_P]) -> {} {{\n    return {} {{ ",
                     layout.params.struct_name, layout.params.struct_name);
  uint32_t next = 0;
  for (size_t f = 0; f < layout.params.fields.size(); ++f)
    out += fmt::format("{}{}: {}", f ? ", " : "", layout.params.fields[f].name,
                       pack(layout.params.fields[f].type, next));
  out += " };\n}\n";
  out +=
      "fn nuts_log_density(u: float[nuts_D]) -> float {\n"
      "    return log_density(nuts_params(nuts_constrain(u))) + nuts_log_jacobian(u);\n}\n";
  return out;
}

// Statements copying every scalar of `value` (of type `t`) into w[at], w[at + 1], … as floats.
void copy_columns(const ValueType& t, const std::string& value, uint32_t& at, std::string& out) {
  if (!t.is_array()) {
    out += fmt::format("    w[{}] = float({});\n", at++, value);
    return;
  }
  for (uint32_t i = 0; i < t.count; ++i)
    copy_columns(t.elem(), fmt::format("{}[{}]", value, i), at, out);
}

// nuts_draw(u): a draw's columns, the constrained coordinates and then the quantities.
std::string draw_glue(const ParameterLayout& layout) {
  if (layout.quantity_names.empty())
    return "fn nuts_draw(u: float[nuts_D]) -> float[nuts_W] { return nuts_constrain(u); }\n";
  std::string out =
      "fn nuts_draw(u: float[nuts_D]) -> float[nuts_W] {\n"
      "    let x = nuts_constrain(u);\n    let p = nuts_params(x);\n"
      "    var w = [0.0; nuts_W];\n"
      "    for i in 0..nuts_P { w[i] = x[i]; }\n";
  uint32_t at = layout.dimension();
  for (const auto& [result, fn] :
       {std::pair{&layout.transformed, "transformed"}, std::pair{&layout.generated, "generated"}}) {
    if (result->is_void()) continue;
    out += fmt::format("    let nuts_{0} = {0}(p);\n", fn);
    for (const ValueField& f : result->fields)
      copy_columns(f.type, fmt::format("nuts_{}.{}", fn, f.name), at, out);
  }
  return out + "    return w;\n}\n";
}

bool is_quantity_tree(const ValueType& t) {
  if (t.is_array()) return is_quantity_tree(t.elem());
  return t.is_scalar();
}

}  // namespace

uint32_t ConstrainedVector::side() const {
  return static_cast<uint32_t>(std::lround(std::sqrt(static_cast<double>(length))));
}

std::vector<uint8_t> structural_constants(const ParameterLayout& layout) {
  std::vector<uint8_t> fixed(layout.dimension(), 0);
  for (const ConstrainedVector& v : layout.vectors) {
    if (v.kind != VectorConstraint::CholeskyFactorCorr) continue;
    const uint32_t k = v.side();
    for (uint32_t i = 0; i < k; ++i)
      for (uint32_t j = 0; j < k; ++j)
        if (j > i || (i == 0 && j == 0)) fixed[v.first + i * k + j] = 1;
  }
  return fixed;
}

uint32_t ConstrainedVector::free_length() const {
  if (kind == VectorConstraint::Simplex) return length - 1;
  if (kind == VectorConstraint::CholeskyFactorCorr) return side() * (side() - 1) / 2;
  return length;
}

bool ParameterLayout::constrained() const {
  for (const FloatBounds& b : bounds)
    if (b.any()) return true;
  return false;
}

uint32_t ParameterLayout::unconstrained_dimension() const {
  uint32_t out = dimension();
  for (const ConstrainedVector& v : vectors)
    out -= v.length - v.free_length();
  return out;
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
    std::function<void(const ValueType&)> add_vectors = [&](const ValueType& t) {
      if (f.bounds.vector == VectorConstraint::CholeskyFactorCorr) {  // one K x K matrix
        out.vectors.push_back(
            {static_cast<uint32_t>(out.names.size()), t.count * t.count, f.bounds.vector});
        out.names.resize(out.names.size() + t.count * t.count);
        return;
      }
      if (t.elem().is_array()) {
        for (uint32_t i = 0; i < t.count; ++i)
          add_vectors(t.elem());
        return;
      }
      out.vectors.push_back({static_cast<uint32_t>(out.names.size()), t.count, f.bounds.vector});
      for (uint32_t i = 0; i < t.count; ++i)
        out.names.push_back("");  // named below
    };
    const size_t first = out.names.size();
    if (f.bounds.vector != VectorConstraint::None) add_vectors(f.type);
    out.names.resize(first);
    scalar_names(f.type, f.name, out.names);
    out.bounds.resize(out.names.size(), f.bounds);
  }
  return out;
}

Status add_quantities(ParameterLayout& layout, const ValueType& t, bool generated) {
  const char* fn = generated ? "generated" : "transformed";
  std::vector<std::string> taken;  // the columns' fields so far: each name once in the fit
  for (const ValueType* earlier : {&layout.params, &layout.transformed, &layout.generated})
    for (const ValueField& f : earlier->fields)
      taken.push_back(f.name);
  for (const ValueField& f : t.fields) {
    if (!is_quantity_tree(f.type))
      return Error{fmt::format(
          "field '{}: {}' of '{}' ({}'s result): its fields are floats, ints, bools and arrays "
          "of them",
          f.name, f.type.spelling(), t.struct_name, fn)};
    if (std::find(taken.begin(), taken.end(), f.name) != taken.end())
      return Error{
          fmt::format("field '{}' of '{}' ({}'s result) has the name of an earlier "
                      "column; each name is reported once",
                      f.name, t.struct_name, fn)};
    if (f.name.size() >= 2 && f.name.substr(f.name.size() - 2) == "__")
      return Error{
          fmt::format("field '{}' of '{}': names ending in '__' are reserved for the "
                      "sampler's own columns",
                      f.name, t.struct_name)};
  }
  (generated ? layout.generated : layout.transformed) = t;
  for (const ValueField& f : t.fields)
    scalar_names(f.type, f.name, layout.quantity_names);
  return Ok{};
}

std::string sampler_glue(const ParameterLayout& layout, bool hand_gradient) {
  std::string out = fmt::format(
      "\n// The sampler's view of the model's parameters (sampler/parameters.h).\n"
      "const nuts_D: int = {};\nconst nuts_P: int = {};\nconst nuts_W: int = {};\n",
      layout.unconstrained_dimension(), layout.dimension(), layout.columns());
  if (!layout.params.is_struct())
    out += "fn nuts_constrain(u: float[nuts_D]) -> float[nuts_P] { return u; }\n";
  else
    out += struct_glue(layout);
  out += draw_glue(layout);
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
  if (b.dependent()) return std::nan("");  // the model's function: the caller evaluates it
  if (b.lower && b.upper) return *b.lower + (*b.upper - *b.lower) / (1 + std::exp(-u));
  if (b.lower) return *b.lower + std::exp(u);
  if (b.upper) return *b.upper - std::exp(u);
  return u;
}

std::vector<double> constrain(const ParameterLayout& layout, const std::vector<double>& u) {
  std::vector<double> x(layout.dimension());
  size_t next_vector = 0;
  for (uint32_t i = 0, ui = 0; i < layout.dimension();) {
    if (next_vector == layout.vectors.size() || layout.vectors[next_vector].first != i) {
      x[i] = constrain(layout.bounds[i], u[ui]);
      ++i;
      ++ui;
      continue;
    }
    const ConstrainedVector& v = layout.vectors[next_vector++];
    if (v.kind == VectorConstraint::CholeskyFactorCorr) {
      const uint32_t k = v.side();
      x[i] = 1;
      for (uint32_t r = 1, next = ui; r < k; ++r) {
        double rest = 1;
        for (uint32_t c = 0; c < r; ++c) {
          const double z = std::tanh(u[next++]);
          x[i + r * k + c] = z * std::sqrt(rest);
          rest *= 1 - z * z;
        }
        x[i + r * k + r] = std::sqrt(rest);
      }
    } else if (v.kind == VectorConstraint::Simplex) {
      double stick = 1;
      for (uint32_t k = 0; k + 1 < v.length; ++k) {
        x[i + k] = stick / (1 + std::exp(-(u[ui + k] - simplex_offset(v.length, k))));
        stick -= x[i + k];
      }
      x[i + v.length - 1] = stick;
    } else {
      x[i] = v.kind == VectorConstraint::PositiveOrdered ? std::exp(u[ui]) : u[ui];
      for (uint32_t k = 1; k < v.length; ++k)
        x[i + k] = x[i + k - 1] + std::exp(u[ui + k]);
    }
    i += v.length;
    ui += v.free_length();
  }
  return x;
}

namespace {

// A cholesky_factor_corr[K]'s unconstrained coordinates, atanh of the canonical partial
// correlations, or nullopt when x is not such a factor (float32 rows of length 1 within 1e-5).
std::optional<std::vector<double>> unconstrain_correlation_factor(uint32_t k, const float* x) {
  std::vector<double> u;
  for (uint32_t r = 0; r < k; ++r) {
    double length = 0;
    for (uint32_t c = 0; c < k; ++c) {
      if (c > r && x[r * k + c] != 0) return std::nullopt;
      length += double{x[r * k + c]} * x[r * k + c];
    }
    if (!(x[r * k + r] > 0) || std::abs(length - 1) > 1e-5) return std::nullopt;
    double rest = 1;
    for (uint32_t c = 0; c < r; ++c) {
      const double z = x[r * k + c] / std::sqrt(rest);
      if (!(std::abs(z) < 1)) return std::nullopt;
      u.push_back(std::atanh(z));
      rest -= double{x[r * k + c]} * x[r * k + c];
    }
  }
  return u;
}

// The unconstrained coordinates of constrained vector `v` given its values `x`, or why not.
Expected<std::vector<double>> unconstrain_vector(const ParameterLayout& layout,
                                                 const ConstrainedVector& v, const float* x) {
  const bool matrix = v.kind == VectorConstraint::CholeskyFactorCorr;
  const std::string& first = layout.names[v.first];
  const std::string name = first.substr(0, matrix ? first.find('[') : first.rfind('['));
  std::string values;
  for (uint32_t k = 0; k < v.length; ++k)
    values += fmt::format("{}{}", k ? ", " : "", x[k]);
  const auto refuse = [&](const char* what) {
    return Error{fmt::format("{} = [{}] is not {}", name, values, what)};
  };
  for (uint32_t k = 0; k < v.length; ++k)
    if (!std::isfinite(x[k])) return refuse("finite");
  if (matrix) {
    auto u = unconstrain_correlation_factor(v.side(), x);
    if (!u)
      return refuse(
          "the Cholesky factor of a correlation matrix (lower triangular, a positive diagonal, "
          "rows of length 1)");
    return *u;
  }
  std::vector<double> u;
  if (v.kind == VectorConstraint::Simplex) {
    double sum = 0;
    for (uint32_t k = 0; k < v.length; ++k) {
      if (!(x[k] > 0)) return refuse("a simplex (every element above 0, summing to 1)");
      sum += x[k];
    }
    // float32 values: a sum within 1e-5 of 1 (Stan, in double, allows 1e-8).
    if (std::abs(sum - 1) > 1e-5) return refuse("a simplex (every element above 0, summing to 1)");
    double rest = sum;  // what is left of the stick, as the elements give it
    for (uint32_t k = 0; k + 1 < v.length; ++k) {
      const double z = x[k] / rest;
      u.push_back(std::log(z) - std::log1p(-z) + simplex_offset(v.length, k));
      rest -= x[k];
    }
    return u;
  }
  if (v.kind == VectorConstraint::PositiveOrdered && !(x[0] > 0))
    return refuse("positive and strictly increasing (a positive_ordered)");
  for (uint32_t k = 1; k < v.length; ++k)
    if (!(x[k] > x[k - 1]))
      return refuse(v.kind == VectorConstraint::Ordered
                        ? "strictly increasing (an ordered)"
                        : "positive and strictly increasing (a positive_ordered)");
  u.push_back(v.kind == VectorConstraint::PositiveOrdered ? std::log(x[0]) : x[0]);
  for (uint32_t k = 1; k < v.length; ++k)
    u.push_back(std::log(double{x[k]} - double{x[k - 1]}));
  return u;
}

// `bounds` as nuts_init_bounds gives them, or null.
Expected<double> unconstrain_coordinate(const ParameterLayout& layout, uint32_t i, double x,
                                        const std::vector<float>* bounds) {
  FloatBounds b = layout.bounds[i];
  if (b.dependent()) {
    if (!bounds || bounds->size() != 2 * size_t{layout.dimension()})
      return Error{
          fmt::format("{}: its bound depends on other parameters, which the data and "
                      "the earlier fields' values decide (a bug: they were not given)",
                      layout.names[i])};
    if (!b.lower_fn.empty()) b.lower = (*bounds)[2 * i];
    if (!b.upper_fn.empty()) b.upper = (*bounds)[2 * i + 1];
  }
  const bool inside = std::isfinite(x) && (!b.lower || x > *b.lower) && (!b.upper || x < *b.upper);
  if (!inside)
    return Error{fmt::format(
        "{} = {} is not {}{}", layout.names[i], static_cast<float>(x),
        b.lower && b.upper ? fmt::format("inside ({}, {})", *b.lower, *b.upper)
        : b.lower          ? fmt::format("above its lower bound {}", *b.lower)
        : b.upper          ? fmt::format("below its upper bound {}", *b.upper)
                           : std::string("finite"),
        b.dependent() ? " (its bound computed from the data and the fields before it)" : "")};
  if (b.lower && b.upper) {
    const double p = (x - *b.lower) / (*b.upper - *b.lower);
    return std::log(p) - std::log1p(-p);
  }
  if (b.lower) return std::log(x - *b.lower);
  if (b.upper) return std::log(*b.upper - x);
  return x;
}

}  // namespace

std::string init_bounds_glue(const ParameterLayout& layout) {
  std::string sets;
  for (uint32_t i = 0; i < layout.dimension(); ++i) {
    const FloatBounds& b = layout.bounds[i];
    if (!b.lower_fn.empty()) sets += fmt::format("    b[{}] = {}(p);\n", 2 * i, b.lower_fn);
    if (!b.upper_fn.empty()) sets += fmt::format("    b[{}] = {}(p);\n", 2 * i + 1, b.upper_fn);
  }
  if (sets.empty()) return "";
  return fmt::format(
      "fn nuts_init_bounds(x: float[nuts_P]) -> float[{0}] {{\n    let p = nuts_params(x);\n"
      "    var b = [0.0; {0}];\n{1}    return b;\n}}\n",
      2 * layout.dimension(), sets);
}

Expected<std::vector<float>> unconstrain(const ParameterLayout& layout,
                                         const std::vector<float>& constrained,
                                         const std::vector<float>* dependent_bounds) {
  if (constrained.size() != layout.dimension())
    return Error{
        fmt::format("{} values for {} parameters", constrained.size(), layout.dimension())};
  std::vector<float> out;
  size_t next_vector = 0;
  for (uint32_t i = 0; i < layout.dimension();) {
    if (next_vector < layout.vectors.size() && layout.vectors[next_vector].first == i) {
      const ConstrainedVector& v = layout.vectors[next_vector++];
      auto u = unconstrain_vector(layout, v, constrained.data() + i);
      if (!u) return u.failure();
      for (double value : *u)
        out.push_back(static_cast<float>(value));
      i += v.length;
      continue;
    }
    auto u = unconstrain_coordinate(layout, i, constrained[i], dependent_bounds);
    if (!u) return u.failure();
    out.push_back(static_cast<float>(*u));
    ++i;
  }
  return out;
}

}  // namespace ab::sample
