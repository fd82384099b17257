// add_bound_functions (lang/dependent_bounds.h): each struct field's bound that uses earlier
// fields or data becomes a function of the struct.
#include "lang/dependent_bounds.h"

#include <algorithm>
#include <set>

#include <fmt/format.h>

namespace ab::frontend {
namespace {

using ast::ExprKind;

// The name the bound functions give their struct parameter ('nuts_' names are the sampler's,
// so no user name can shadow it).
constexpr const char* kStruct = "nuts_p";

struct BoundScan {
  const ast::StructDecl& s;
  size_t field;                       // the bounded field's index
  const std::set<std::string>& data;  // the module's uniforms
  Diagnostics& diags;
  bool dependent = false;

  // Whether `name` is a field of the struct; reports it when it is not an earlier one.
  bool names_field(const std::string& name, SourceLoc loc) {
    const auto it = std::find_if(s.fields.begin(), s.fields.end(),
                                 [&](const ast::FieldDecl& f) { return f.name == name; });
    if (it == s.fields.end()) return false;
    const size_t at = static_cast<size_t>(it - s.fields.begin());
    if (at >= field)
      diags.error(loc, fmt::format("the bound of '{}' uses '{}', {}: a bound may use the fields "
                                   "declared before it, which are constrained first",
                                   s.fields[field].name, name,
                                   at == field ? "the field itself" : "declared after it"));
    return true;
  }

  // Rewrites each earlier field `a` in `e` to `nuts_p.a`; notes whether it read any field or data.
  void rewrite(ast::Expr& e) {
    if (e.kind == ExprKind::Name) {
      if (names_field(e.name, e.loc)) {
        auto base = std::make_unique<ast::Expr>();
        base->kind = ExprKind::Name;
        base->loc = e.loc;
        base->name = kStruct;
        e.kind = ExprKind::Field;
        e.op_loc = e.loc;
        e.args.push_back(std::move(base));
        dependent = true;
      } else if (data.count(e.name)) {
        dependent = true;
      }
      return;
    }
    // A struct literal's or a field access's base is an expression; a field's name is not.
    for (ast::ExprPtr& arg : e.args)
      if (arg) rewrite(*arg);
  }
};

ast::FnDecl bound_function(const ast::StructDecl& s, const ast::FieldDecl& f, ast::ExprPtr value,
                           const char* side) {
  ast::FnDecl fn;
  fn.name = fmt::format("nuts_bound_{}_{}_{}", s.name, f.name, side);
  fn.bound_of = fmt::format("the {} bound of '{}'", side, f.name);
  fn.loc = fn.name_loc = value->loc;
  ast::Param p;
  p.name = kStruct;
  p.loc = value->loc;
  p.type.name = s.name;
  p.type.loc = value->loc;
  fn.params.push_back(std::move(p));
  ast::TypeExpr result;
  result.name = "float";
  result.loc = value->loc;
  fn.result = std::move(result);
  auto ret = std::make_unique<ast::Stmt>();
  ret->kind = ast::StmtKind::Return;
  ret->loc = value->loc;
  ret->expr = std::move(value);
  fn.body.loc = fn.body.end_loc = fn.loc;
  fn.body.stmts.push_back(std::move(ret));
  return fn;
}

}  // namespace

void add_bound_functions(ast::Module& module, Diagnostics& diags) {
  std::set<std::string> data;
  for (const ast::UniformDecl& u : module.uniforms)
    data.insert(u.name);
  std::vector<ast::FnDecl> added;
  for (ast::StructDecl& s : module.structs) {
    for (size_t i = 0; i < s.fields.size(); ++i) {
      ast::TypeExpr& t = s.fields[i].type;
      for (auto [bound, fn, side] : {std::tuple{&t.lower, &t.lower_fn, "lower"},
                                     std::tuple{&t.upper, &t.upper_fn, "upper"}}) {
        if (!*bound) continue;
        BoundScan scan{s, i, data, diags};
        scan.rewrite(**bound);
        if (!scan.dependent) continue;
        added.push_back(bound_function(s, s.fields[i], std::move(*bound), side));
        *fn = added.back().name;
      }
    }
  }
  for (ast::FnDecl& f : added)
    module.functions.push_back(std::move(f));
}

}  // namespace ab::frontend
