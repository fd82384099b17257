// The draws' library: the random draws that need a loop, written in the language itself and
// compiled into a program that calls them (lang/distributions.h). Each assumes arguments the
// calling builtin has checked.
#include <algorithm>
#include <map>
#include <set>
#include <stdexcept>

#include "lang/distributions.h"
#include "lang/lexer.h"
#include "lang/parser.h"

namespace ab::frontend {
namespace {

// gamma(alpha, 1) for alpha >= 1 is Marsaglia and Tsang's method (ACM TOMS 26(3), 2000); below 1
// their boost, in logs so that a tiny alpha keeps its draws' scale. Knuth's multiplication method
// draws a poisson below 10 and Hormann's PTRS (1993) above. A binomial splits its trials at a
// beta-distributed order statistic until at most 16 are left (Knuth, TAOCP 3.4.1), then counts
// them one by one.
constexpr const char* kLibrary = R"(
fn rng_gamma_large(alpha: float) -> float {
    let d = alpha - 1.0 / 3.0;
    let c = 1.0 / sqrt(9.0 * d);
    while true {
        let x = normal();
        let t = 1.0 + c * x;
        if t > 0.0 {
            let v = t * t * t;
            if log(1.0 - uniform()) < 0.5 * x * x + d - d * v + d * log(v) { return d * v; }
        }
    }
    return 0.0;
}
fn rng_log_gamma(alpha: float) -> float {
    if alpha >= 1.0 { return log(rng_gamma_large(alpha)); }
    let g = rng_gamma_large(alpha + 1.0);
    return log(g) + log(1.0 - uniform()) / alpha;
}
fn rng_gamma(alpha: float) -> float {
    if alpha >= 1.0 { return rng_gamma_large(alpha); }
    return exp(rng_log_gamma(alpha));
}
fn rng_beta(a: float, b: float) -> float {
    let la = rng_log_gamma(a);
    let lb = rng_log_gamma(b);
    return exp(la - log_sum_exp(la, lb));
}
fn rng_open_uniform() -> float {
    var u = uniform();
    while u == 0.0 { u = uniform(); }
    return u;
}
fn rng_poisson(lambda: float) -> int {
    if lambda < 10.0 {
        let limit = exp(-lambda);
        var k = 0;
        var p = uniform();
        while p > limit {
            p = p * uniform();
            k += 1;
        }
        return k;
    }
    let slam = sqrt(lambda);
    let loglam = log(lambda);
    let b = 0.931 + 2.53 * slam;
    let a = -0.059 + 0.02483 * b;
    let log_invalpha = log(1.1239 + 1.1328 / (b - 3.4));
    let vr = 0.9277 - 3.6224 / (b - 2.0);
    while true {
        let u = uniform() - 0.5;
        let v = uniform();
        let us = 0.5 - abs(u);
        let k = floor((2.0 * a / us + b) * u + lambda + 0.43);
        if us >= 0.07 && v <= vr { return int(k); }
        if k >= 0.0 && (us >= 0.013 || v <= us) {
            if log(v) + log_invalpha - log(a / (us * us) + b)
                <= -lambda + k * loglam - lgamma(k + 1.0) {
                return int(k);
            }
        }
    }
    return 0;
}
fn rng_binomial(n: int, theta: float) -> int {
    var count = 0;
    var rest = n;
    var p = theta;
    while rest > 16 {
        let a = rest / 2 + 1;
        let b = rest + 1 - a;
        let x = rng_beta(float(a), float(b));
        if x >= p {
            rest = a - 1;
            p = p / x;
        } else {
            count += a;
            rest = b - 1;
            p = (p - x) / (1.0 - x);
        }
    }
    for i in 0..rest {
        if uniform() < p { count += 1; }
    }
    return count;
}
)";

// The library's syntax, every location cleared: its functions are the draws' loops, not the
// user's code, so a fault in one names the function and no line.
ast::Module parse_library() {
  Diagnostics diags("<the draws' library>", kLibrary);
  std::vector<Token> tokens = lex(kLibrary, diags);
  for (Token& t : tokens)
    t.loc = SourceLoc{};
  ast::Module m = parse(tokens, diags);
  if (!diags.errors().empty())
    throw std::logic_error("the draws' library does not parse: " + diags.errors()[0].message);
  return m;
}

const std::vector<std::string>& library_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const ast::FnDecl& f : parse_library().functions)
      out.push_back(f.name);
    return out;
  }();
  return names;
}

void collect_calls(const ast::Expr& e, std::set<std::string>& out) {
  if (e.kind == ast::ExprKind::Call) out.insert(e.name);
  for (const ast::ExprPtr& a : e.args)
    if (a) collect_calls(*a, out);
}

void collect_calls(const ast::Block& b, std::set<std::string>& out);

void collect_calls(const ast::Stmt& s, std::set<std::string>& out) {
  for (const ast::Expr* e : {s.expr.get(), s.expr2.get()})
    if (e) collect_calls(*e, out);
  if (s.body) collect_calls(*s.body, out);
  for (const ast::ElseIf& arm : s.else_ifs) {
    collect_calls(*arm.condition, out);
    collect_calls(*arm.body, out);
  }
  if (s.else_body) collect_calls(*s.else_body, out);
}

void collect_calls(const ast::Block& b, std::set<std::string>& out) {
  for (const ast::StmtPtr& s : b.stmts)
    collect_calls(*s, out);
}

// The library functions a builtin draw calls (lang/distributions.cpp).
const std::map<std::string, std::vector<std::string>>& draws_calling_library() {
  static const std::map<std::string, std::vector<std::string>> calls = {
      {"gamma_rng", {"rng_gamma"}},
      {"inv_gamma_rng", {"rng_gamma"}},
      {"chi_square_rng", {"rng_gamma"}},
      {"student_t_rng", {"rng_gamma"}},
      {"beta_rng", {"rng_beta"}},
      {"poisson_rng", {"rng_poisson"}},
      {"poisson_log_rng", {"rng_poisson"}},
      {"binomial_rng", {"rng_binomial"}},
      {"binomial_logit_rng", {"rng_binomial"}},
      {"neg_binomial_2_rng", {"rng_gamma", "rng_poisson"}},
      {"neg_binomial_2_log_rng", {"rng_gamma", "rng_poisson"}},
      {"logistic_rng", {"rng_open_uniform"}},
  };
  return calls;
}

}  // namespace

bool is_library_function(const std::string& name) {
  const std::vector<std::string>& names = library_names();
  return std::find(names.begin(), names.end(), name) != names.end();
}

void add_library_functions(ast::Module& module) {
  std::set<std::string> called;
  for (const ast::FnDecl& f : module.functions)
    collect_calls(f.body, called);
  std::vector<std::string> pending;
  for (const std::string& name : called) {
    auto it = draws_calling_library().find(name);
    if (it != draws_calling_library().end())
      pending.insert(pending.end(), it->second.begin(), it->second.end());
    if (is_library_function(name)) pending.push_back(name);
  }
  if (pending.empty()) return;  // most programs: nothing to parse
  ast::Module library = parse_library();
  std::set<std::string> wanted;
  while (!pending.empty()) {
    const std::string name = pending.back();
    pending.pop_back();
    if (!wanted.insert(name).second) continue;
    for (const ast::FnDecl& f : library.functions) {
      if (f.name != name) continue;
      std::set<std::string> inner;
      collect_calls(f.body, inner);
      for (const std::string& n : inner)
        if (is_library_function(n)) pending.push_back(n);
    }
  }
  for (ast::FnDecl& f : library.functions)
    if (wanted.count(f.name)) {
      f.library = true;
      module.functions.push_back(std::move(f));
    }
}

}  // namespace ab::frontend
