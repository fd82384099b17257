// Transformed data (lang/transformed_data.h): a uniform's initializer as a function of no
// parameters, and the order the functions run in when the uniforms are bound.
#include "lang/transformed_data.h"

#include <algorithm>
#include <functional>
#include <map>
#include <set>

#include <fmt/format.h>

namespace ab {
namespace {

bool is_transformed_data_name(const std::string& name) {
  return name.rfind(kTransformedDataPrefix, 0) == 0;
}

// What a function reads and does, through every function it calls.
struct Reach {
  std::set<int> uniforms;
  const Op* impure = nullptr;  // the first random draw or emit
};

Reach reach(const Program& program, int function) {
  Reach r;
  std::set<int> seen;
  std::function<void(int)> visit = [&](int f) {
    if (f < 0 || f >= static_cast<int>(program.functions.size()) || !seen.insert(f).second) return;
    for (const Block& b : program.functions[f].blocks)
      for (const Op& op : b.ops) {
        if (is_uniform_get(op)) r.uniforms.insert(op.index);
        if (is_call(op)) visit(op.index);
        if ((is_random(op) || is_emit(op)) && !r.impure) r.impure = &op;
      }
  };
  visit(function);
  return r;
}

}  // namespace

std::vector<TransformedData> transformed_data(const Program& program, Diagnostics* diags) {
  // by uniform: its function, and the transformed data it reads
  std::map<int, int> function_of;
  for (size_t f = 0; f < program.functions.size(); ++f) {
    const Function& fn = program.functions[f];
    if (!is_transformed_data_name(fn.name) || !fn.params.empty()) continue;
    const int u = program.find_uniform(fn.name.substr(std::string(kTransformedDataPrefix).size()));
    if (u >= 0) function_of[u] = static_cast<int>(f);
  }
  std::map<int, std::vector<int>> reads;
  for (const auto& [u, f] : function_of) {
    const Reach r = reach(program, f);
    if (r.impure && diags)
      diags->error(r.impure->loc,
                   fmt::format("uniform '{}' is transformed data, computed once from the data: "
                               "it cannot {}",
                               program.uniforms[u].name,
                               is_emit(*r.impure) ? "emit a record" : "draw a random number"));
    for (int v : r.uniforms)
      if (function_of.count(v)) reads[u].push_back(v);
  }
  // Depth first, each after what it reads; a uniform met again on the path is a cycle.
  std::vector<TransformedData> order;
  std::map<int, int> state;  // 1: on the path, 2: ordered
  std::vector<int> path;
  std::function<bool(int)> visit = [&](int u) {
    if (state[u] == 2) return true;
    if (state[u] == 1) {
      if (diags) {
        std::string chain;
        for (auto it = std::find(path.begin(), path.end(), u); it != path.end(); ++it)
          chain += program.uniforms[*it].name + " -> ";
        diags->error(program.functions[function_of[u]].loc,
                     fmt::format("transformed data '{}' depends on itself: {}{}",
                                 program.uniforms[u].name, chain, program.uniforms[u].name));
      }
      return false;
    }
    state[u] = 1;
    path.push_back(u);
    bool ok = true;
    for (int v : reads[u])
      ok = ok && visit(v);
    path.pop_back();
    if (!ok) return false;
    state[u] = 2;
    order.push_back({u, function_of[u]});
    return true;
  };
  for (const auto& entry : function_of)
    if (!visit(entry.first)) break;
  return order;
}

}  // namespace ab

namespace ab::frontend {
namespace {

ast::ExprPtr clone(const ast::Expr& e) {
  auto copy = std::make_unique<ast::Expr>();
  copy->kind = e.kind;
  copy->loc = e.loc;
  copy->op_loc = e.op_loc;
  copy->op = e.op;
  copy->name = e.name;
  copy->int_value = e.int_value;
  copy->unsigned_suffix = e.unsigned_suffix;
  copy->hex = e.hex;
  copy->float_value = e.float_value;
  copy->bool_value = e.bool_value;
  copy->parenthesized = e.parenthesized;
  for (const ast::ExprPtr& a : e.args)
    copy->args.push_back(a ? clone(*a) : nullptr);
  copy->field_names = e.field_names;
  copy->field_locs = e.field_locs;
  copy->depth = e.depth;
  return copy;
}

}  // namespace

void add_transformed_data_functions(ast::Module& module, Diagnostics& diags) {
  for (const ast::FnDecl& f : module.functions)
    if (is_transformed_data_name(f.name))
      diags.error(f.name_loc, fmt::format("'{}': names beginning '{}' are the transformed data's",
                                          f.name, kTransformedDataPrefix));
  for (ast::UniformDecl& u : module.uniforms) {
    if (!u.init) continue;
    ast::FnDecl fn;
    fn.name = kTransformedDataPrefix + u.name;
    fn.transformed_data = u.name;
    fn.loc = fn.name_loc = u.name_loc;
    ast::TypeExpr result;
    result.name = u.type.name;
    result.loc = u.type.loc;
    for (const ast::ExprPtr& d : u.type.dims)
      result.dims.push_back(d ? clone(*d) : nullptr);
    fn.result = std::move(result);
    auto ret = std::make_unique<ast::Stmt>();
    ret->kind = ast::StmtKind::Return;
    ret->loc = u.init->loc;
    ret->expr = std::move(u.init);
    fn.body.loc = fn.body.end_loc = u.name_loc;
    fn.body.stmts.push_back(std::move(ret));
    module.functions.push_back(std::move(fn));
  }
}

}  // namespace ab::frontend
