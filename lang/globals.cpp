#include "lang/globals.h"

#include <cmath>
#include <string_view>

#include <fmt/format.h>

#include "lang/distributions.h"
#include "lang/parser.h"

namespace ab::frontend {

namespace {

// The constrained vector type a field's type name spells, if any.
std::optional<VectorConstraint> vector_constraint(const std::string& type_name) {
  if (type_name == "simplex") return VectorConstraint::Simplex;
  if (type_name == "ordered") return VectorConstraint::Ordered;
  if (type_name == "positive_ordered") return VectorConstraint::PositiveOrdered;
  if (type_name == "cholesky_factor_corr") return VectorConstraint::CholeskyFactorCorr;
  return std::nullopt;
}

// The builtins that are not an op's own name (ir/ops.cpp's rows name those).
// clang-format off
constexpr const char* kBuiltins[] = {
    "dot", "sum", "len", "bool", "emit", "grad", "value_and_grad", "mean", "transpose",
    "cholesky_decompose", "mdivide_left_tri_low", "gp_exp_quad_cov", "cov_exp_quad", "add_diag",
    "log_determinant", "log_determinant_spd", "multi_normal_cholesky_lpdf", "lkj_corr_cholesky_lpdf",
};
// clang-format on

std::optional<TypeId> scalar_type(const std::string& name) {
  if (name == "bool") return Types::kBool;
  if (name == "int") return Types::kInt;
  if (name == "uint") return Types::kUInt;
  if (name == "float") return Types::kFloat;
  return std::nullopt;
}

}  // namespace

bool is_builtin_function(const std::string& name) {
  if (is_op_builtin(name)) return true;
  for (const char* b : kBuiltins)
    if (name == b) return true;
  return is_distribution_builtin(name) || is_library_function(name);
}

Globals::Globals(const ast::Module& module, Program& program, Diagnostics& diags)
    : module_(module), program_(program), diags_(diags) {}

// Structs, constants, uniforms and functions share one name space: a name means one thing
// wherever it is used. A clash between two kinds names both, since the first may be far away.
void Globals::declare_name(const std::string& name, SourceLoc loc, const char* what) {
  auto [it, inserted] = top_level_.emplace(name, Declared{loc, what});
  if (inserted) return;
  const Declared& first = it->second;
  if (std::string_view(first.what) == what)
    diags_.error(loc, fmt::format("{} '{}' is already declared at {}:{}", what, name,
                                  first.loc.line, first.loc.col));
  else
    diags_.error(loc, fmt::format("{} '{}' has the name of the {} declared at {}:{} (structs, "
                                  "constants, uniforms and functions share one name space)",
                                  what, name, first.what, first.loc.line, first.loc.col));
}

void Globals::declare() {
  for (const ast::StructDecl& s : module_.structs) {
    declare_name(s.name, s.name_loc, "struct");
    structs_.emplace(s.name, StructEntry{&s, State::Pending, -1});
  }
  for (const ast::ConstDecl& c : module_.consts) {
    declare_name(c.name, c.name_loc, "constant");
    consts_.emplace(c.name, ConstEntry{&c, State::Pending, {}});
  }
  for (const ast::UniformDecl& u : module_.uniforms)
    declare_name(u.name, u.name_loc, "uniform");
  for (const ast::FnDecl& f : module_.functions) {
    if (is_builtin_function(f.name) && !f.library)
      diags_.error(f.name_loc, fmt::format("cannot redefine builtin function '{}'", f.name));
    else
      declare_name(f.name, f.name_loc, "function");
  }

  // Names of uniforms and functions are known before any constant is evaluated, so a constant
  // that mentions one gets a precise message.
  for (size_t i = 0; i < module_.uniforms.size(); ++i)
    uniforms_.emplace(module_.uniforms[i].name, static_cast<int>(i));
  for (size_t i = 0; i < module_.functions.size(); ++i)
    functions_.emplace(module_.functions[i].name, static_cast<int>(i));

  // Constants first: array lengths in struct fields may use them.
  for (const ast::ConstDecl& c : module_.consts) {
    auto it = consts_.find(c.name);
    if (it->second.decl == &c) evaluate_const(it->second);
  }
  for (const ast::StructDecl& s : module_.structs) {
    auto it = structs_.find(s.name);
    if (it->second.decl == &s) resolve_struct(it->second);
  }
  for (const ast::UniformDecl& u : module_.uniforms) {
    Uniform uniform{u.name, Types::kVoid, u.loc};
    if (auto t = resolve_type(u.type)) uniform.type = *t;
    program_.uniforms.push_back(uniform);
  }
  for (size_t i = 0; i < module_.functions.size(); ++i) {
    const ast::FnDecl& f = module_.functions[i];
    Signature sig;
    for (const ast::Param& p : f.params) {
      auto t = resolve_type(p.type);
      sig.params.push_back(t ? *t : -1);
      sig.ok = sig.ok && t.has_value();
    }
    if (f.result) {
      auto t = resolve_type(*f.result);
      sig.result = t ? *t : -1;
      sig.ok = sig.ok && t.has_value();
    }
    signatures_.push_back(std::move(sig));
  }
}

void Globals::evaluate_const(ConstEntry& entry) {
  const ast::ConstDecl& c = *entry.decl;
  if (entry.state == State::Done || entry.state == State::Failed) return;
  if (++resolve_depth_ > kMaxNesting) {
    diags_.error(c.name_loc, "constants depend on each other too deeply");
    entry.state = State::Failed;
    --resolve_depth_;
    return;
  }
  entry.state = State::InProgress;
  std::optional<TypeId> type = scalar_type(c.type.name);
  if (!type || !c.type.dims.empty()) {
    diags_.error(c.type.loc, fmt::format("constant '{}' must have a scalar type (bool, int, "
                                         "uint or float)",
                                         c.name));
    type.reset();
  }
  std::optional<ConstScalar> value;
  if (type) {
    ConstLookup lookup = [this](const ast::Expr& n, Diagnostics* d) { return lookup_const(n, d); };
    const bool from_data = c.init->kind == ast::ExprKind::Name && c.init->name == "data";
    value = from_data ? data_const(c, *type)
                      : eval_const(program_.types, lookup, *c.init, *type, &diags_);
    if (value && value->type != *type) {
      diags_.error(c.init->loc,
                   fmt::format("expected '{}', found '{}'", program_.types.to_string(*type),
                               program_.types.to_string(value->type)));
      value.reset();
    }
  }
  --resolve_depth_;
  if (value) {
    entry.value = *value;
    entry.state = State::Done;
  } else {
    entry.state = State::Failed;
  }
}

std::optional<ConstScalar> Globals::data_const(const ast::ConstDecl& c, TypeId type) {
  if (!data_values_ || data_values_->count(c.name) == 0) {
    diags_.error(c.init->loc,
                 fmt::format("constant '{}' is read from the data, which hold no '{}': "
                             "give the data (--data FILE.json) with \"{}\" in them",
                             c.name, c.name, c.name));
    return std::nullopt;
  }
  const double v = data_values_->at(c.name);
  const auto out_of = [&](const char* what) {
    diags_.error(c.init->loc, fmt::format("constant '{}' is read from the data, whose '{}' is {}: "
                                          "not {}",
                                          c.name, c.name, v, what));
    return std::nullopt;
  };
  if (type == Types::kFloat) return ConstScalar{type, float_bits(static_cast<float>(v))};
  if (type == Types::kBool) {
    if (v != 0 && v != 1) return out_of("a bool (0 or 1)");
    return ConstScalar{type, static_cast<uint32_t>(v)};
  }
  const bool is_int = type == Types::kInt;
  const double lo = is_int ? -2147483648.0 : 0.0, hi = is_int ? 2147483647.0 : 4294967295.0;
  if (std::floor(v) != v || v < lo || v > hi) return out_of(is_int ? "an int" : "a uint");
  const uint32_t bits =
      is_int ? static_cast<uint32_t>(static_cast<int32_t>(v)) : static_cast<uint32_t>(v);
  return ConstScalar{type, bits};
}

std::optional<ConstScalar> Globals::lookup_const(const ast::Expr& name, Diagnostics* diags) {
  auto it = consts_.find(name.name);
  if (it == consts_.end()) {
    if (diags) {
      if (uniforms_.count(name.name))
        diags->error(name.loc, fmt::format("uniform '{}' cannot be used in a constant expression",
                                           name.name));
      else if (functions_.count(name.name))
        diags->error(name.loc, fmt::format("'{}' is a function, not a constant", name.name));
      else
        diags->error(name.loc, fmt::format("unknown constant '{}'", name.name));
    }
    return std::nullopt;
  }
  ConstEntry& entry = it->second;
  if (entry.state == State::InProgress) {
    // Reported once, by the constant that closes the cycle; it then counts as failed.
    if (diags) diags->error(name.loc, fmt::format("constant '{}' depends on itself", name.name));
    return std::nullopt;
  }
  if (entry.state == State::Pending) evaluate_const(entry);
  if (entry.state != State::Done) return std::nullopt;
  return entry.value;
}

void Globals::resolve_struct(StructEntry& entry) {
  const ast::StructDecl& s = *entry.decl;
  if (entry.state != State::Pending) return;
  if (++resolve_depth_ > kMaxNesting) {
    diags_.error(s.name_loc, "structs nested too deeply");
    entry.state = State::Failed;
    --resolve_depth_;
    return;
  }
  entry.state = State::InProgress;
  std::vector<Field> fields;
  bool ok = true;
  uint64_t words = 0;
  for (size_t i = 0; i < s.fields.size(); ++i) {
    const ast::FieldDecl& f = s.fields[i];
    for (size_t j = 0; j < i; ++j) {
      if (s.fields[j].name == f.name) {
        diags_.error(f.loc, fmt::format("duplicate field '{}' in struct '{}'", f.name, s.name));
        ok = false;
      }
    }
    auto it = structs_.find(f.type.name);
    if (it != structs_.end() && it->second.state == State::InProgress) {
      diags_.error(f.type.loc, it->second.decl == &s
                                   ? fmt::format("struct '{}' contains itself", s.name)
                                   : fmt::format("struct '{}' contains itself through '{}'",
                                                 f.type.name, s.name));
      ok = false;
      continue;
    }
    auto type = resolve_type(f.type, /*allow_bounds=*/true);
    auto bounds = type ? field_bounds(f.type, *type) : std::nullopt;
    if (!type || !bounds) {
      ok = false;
      continue;
    }
    words += program_.types.words(*type);
    fields.push_back(Field{f.name, *type, 0, *bounds});
  }
  if (ok && s.fields.empty()) {
    diags_.error(s.name_loc, fmt::format("struct '{}' has no fields", s.name));
    ok = false;
  }
  if (ok && words > kMaxTypeWords) {
    diags_.error(s.name_loc, fmt::format("struct '{}' is too large", s.name));
    ok = false;
  }
  --resolve_depth_;
  if (!ok) {
    entry.state = State::Failed;
    return;
  }
  auto added = program_.types.add_struct(s.name, std::move(fields));
  if (!added) {  // checked when the struct was declared: not reached
    diags_.error(s.name_loc, added.error());
    entry.state = State::Failed;
    return;
  }
  entry.type = *added;
  entry.state = State::Done;
}

std::optional<TypeId> Globals::struct_type(const std::string& name, SourceLoc loc) {
  auto it = structs_.find(name);
  if (it == structs_.end()) {
    diags_.error(loc, fmt::format("unknown struct '{}'", name));
    return std::nullopt;
  }
  resolve_struct(it->second);  // no-op once resolved
  if (it->second.state != State::Done) return std::nullopt;
  return it->second.type;
}

std::optional<uint32_t> Globals::array_length(const ast::Expr& dim) {
  ConstLookup lookup = [this](const ast::Expr& n, Diagnostics* d) { return lookup_const(n, d); };
  auto v = eval_const(program_.types, lookup, dim, Types::kInt, &diags_);
  if (!v) return std::nullopt;
  const bool is_int = v->type == Types::kInt || v->type == Types::kUInt;
  const bool positive = is_int && (v->type == Types::kUInt || static_cast<int32_t>(v->bits) > 0);
  if (!positive || v->bits == 0) {
    diags_.error(dim.loc, is_int ? fmt::format("array length must be positive, found {}",
                                               v->type == Types::kInt
                                                   ? std::to_string(static_cast<int32_t>(v->bits))
                                                   : std::to_string(v->bits))
                                 : fmt::format("array length must be an integer, found '{}'",
                                               program_.types.to_string(v->type)));
    return std::nullopt;
  }
  return v->bits;
}

std::optional<FloatBounds> Globals::field_bounds(const ast::TypeExpr& type, TypeId resolved) {
  FloatBounds out;
  if (auto constraint = vector_constraint(type.name)) {
    out.vector = *constraint;
    TypeId vector = resolved;  // the innermost array: simplex[M][K] is M simplexes of K
    while (program_.types.is_array(program_.types[vector].elem))
      vector = program_.types[vector].elem;
    if (out.vector == VectorConstraint::Simplex && program_.types[vector].count < 2) {
      diags_.error(type.loc, "a simplex needs at least 2 elements: simplex[1] is the constant 1");
      return std::nullopt;
    }
    if (out.vector == VectorConstraint::CholeskyFactorCorr && program_.types[vector].count < 2) {
      diags_.error(type.loc,
                   "a cholesky_factor_corr needs K >= 2: cholesky_factor_corr[1] is the constant "
                   "[[1.0]]");
      return std::nullopt;
    }
  }
  if (!type.lower && !type.upper && type.lower_fn.empty() && type.upper_fn.empty()) return out;
  TypeId leaf = resolved;
  while (program_.types[leaf].kind == Type::Kind::Array)
    leaf = program_.types[leaf].elem;
  if (leaf != Types::kFloat) {
    diags_.error(type.bounds_loc, fmt::format("bounds are for floats; '{}' is not a float",
                                              program_.types.to_string(resolved)));
    return std::nullopt;
  }
  ConstLookup lookup = [this](const ast::Expr& n, Diagnostics* d) { return lookup_const(n, d); };
  auto bound = [&](const ast::ExprPtr& e) -> std::optional<float> {
    auto v = eval_const(program_.types, lookup, *e, Types::kFloat, &diags_);
    if (!v) return std::nullopt;
    float x;
    if (v->type == Types::kFloat)
      x = bits_float(v->bits);
    else if (v->type == Types::kInt)
      x = static_cast<float>(static_cast<int32_t>(v->bits));
    else if (v->type == Types::kUInt)
      x = static_cast<float>(v->bits);
    else {
      diags_.error(e->loc, fmt::format("a bound must be a number, found '{}'",
                                       program_.types.to_string(v->type)));
      return std::nullopt;
    }
    if (!std::isfinite(x)) {
      diags_.error(e->loc, "a bound must be finite");
      return std::nullopt;
    }
    return x;
  };
  out.lower_fn = type.lower_fn;  // dependent bounds: the functions computing them
  out.upper_fn = type.upper_fn;
  if (type.lower && !(out.lower = bound(type.lower))) return std::nullopt;
  if (type.upper && !(out.upper = bound(type.upper))) return std::nullopt;
  if (out.lower && out.upper && !(*out.lower < *out.upper)) {
    diags_.error(type.bounds_loc, fmt::format("the lower bound {} is not below the upper bound {}",
                                              *out.lower, *out.upper));
    return std::nullopt;
  }
  return out;
}

// `simplex[K]`, `ordered[K]`, `positive_ordered[K]`, `cholesky_factor_corr[K]`: a struct
// field's type (the sampler's parameters), with a length and no bounds (the type is its own
// constraint, as in Stan).
Status Globals::check_vector_type(const ast::TypeExpr& type, bool allow_bounds) {
  if (!allow_bounds)
    return Error{
        fmt::format("'{}' is a constrained parameter type: it belongs on a field of the struct of "
                    "parameters (docs/nuts.md); elsewhere use float[..]",
                    type.name)};
  if (type.dims.empty())
    return Error{fmt::format("'{}' needs a length: {}[K]", type.name, type.name)};
  if (type.lower || type.upper || !type.lower_fn.empty() || !type.upper_fn.empty())
    return Error{fmt::format("'{}' takes no bounds: the type is its own constraint", type.name)};
  if (type.name == "cholesky_factor_corr" && type.dims.size() != 1)
    return Error{
        "'cholesky_factor_corr' takes one length: cholesky_factor_corr[K] is a "
        "float[K][K]"};
  return Ok{};
}

std::optional<TypeId> Globals::resolve_type(const ast::TypeExpr& type, bool allow_bounds) {
  if ((type.lower || type.upper) && !allow_bounds) {
    diags_.error(type.bounds_loc,
                 "bounds ('<lower=..., upper=...>') belong on a struct field's float type, the "
                 "sampler's parameters (docs/nuts.md)");
    return std::nullopt;
  }
  std::optional<TypeId> base = scalar_type(type.name);
  if (vector_constraint(type.name)) {
    if (auto s = check_vector_type(type, allow_bounds); !s) {
      diags_.error(type.loc, s.error());
      return std::nullopt;
    }
    base = Types::kFloat;
  }
  if (!base) {
    auto it = structs_.find(type.name);
    if (it == structs_.end()) {
      diags_.error(type.loc, fmt::format("unknown type '{}'", type.name));
      return std::nullopt;
    }
    base = struct_type(type.name, type.loc);
    if (!base) return std::nullopt;
  }
  // T[A][B] is A arrays of T[B]: wrap from the innermost (last) dimension outwards.
  std::vector<uint32_t> lengths;
  for (const ast::ExprPtr& dim : type.dims) {
    auto n = array_length(*dim);
    if (!n) return std::nullopt;
    lengths.push_back(*n);
  }
  if (type.name == "cholesky_factor_corr") lengths.push_back(lengths.back());  // K x K
  TypeId t = *base;
  for (size_t i = lengths.size(); i-- > 0;) {
    if (uint64_t{program_.types.words(t)} * lengths[i] > kMaxTypeWords) {
      diags_.error(type.loc,
                   fmt::format("array type is too large (more than {} words)", kMaxTypeWords));
      return std::nullopt;
    }
    t = program_.types.array(t, lengths[i]);
  }
  return t;
}

int Globals::uniform_index(const std::string& name) const {
  auto it = uniforms_.find(name);
  return it == uniforms_.end() ? -1 : it->second;
}

int Globals::function_index(const std::string& name) const {
  auto it = functions_.find(name);
  return it == functions_.end() ? -1 : it->second;
}

int Globals::derivative(int function, SourceLoc loc) {
  for (size_t k = 0; k < derivatives_.size(); ++k)
    if (derivatives_[k].function == function) return static_cast<int>(module_.functions.size() + k);
  derivatives_.push_back({function, loc});
  return static_cast<int>(module_.functions.size() + derivatives_.size() - 1);
}

}  // namespace ab::frontend
