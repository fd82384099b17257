#include "support/program_gen.h"

#include <fmt/format.h>

#include <optional>
#include <random>
#include <vector>

namespace ab::testing {
namespace {

enum class Ty { Int, UInt, Float, Bool, IntArr, FloatArr, Rec };

const char* spell(Ty t) {
  switch (t) {
    case Ty::Int:
      return "int";
    case Ty::UInt:
      return "uint";
    case Ty::Float:
      return "float";
    case Ty::Bool:
      return "bool";
    case Ty::IntArr:
      return "int[4]";
    case Ty::FloatArr:
      return "float[4]";
    case Ty::Rec:
      return "Rec";
  }
  return "int";
}

struct Signature {
  std::string name;
  std::vector<Ty> params;  // after the depth parameter
  Ty result = Ty::Int;
};

struct VarInfo {
  std::string name;
  Ty type;
  bool assignable;
};

class Generator {
 public:
  Generator(uint64_t seed, const GenOptions& options) : rng_(seed), opt_(options) {}

  std::string program() {
    std::string text = fmt::format("// generated program, seed {}\n", seed_text_);
    text += "struct Rec { i: int, f: float, a: int[4] }\n";
    text += "struct Out { v: int, f: float, u: uint, b: bool }\n";
    text += fmt::format("const C0: int = {};\n", below(40) - 10);
    text += fmt::format("const C1: int = (C0 * {}) ^ {};\n", below(9) + 1, below(64));
    declare_signatures();
    for (const Signature& sig : signatures_)
      text += function(sig);
    text += main_function();
    return text;
  }

  void set_seed_text(std::string s) { seed_text_ = std::move(s); }

 private:
  // ---- randomness (std distributions are not portable; modulo is good enough here) ----------
  int below(int n) { return n <= 1 ? 0 : static_cast<int>(rng_() % static_cast<uint64_t>(n)); }
  bool chance(int percent) { return below(100) < percent; }
  template <class T>
  const T& pick(const std::vector<T>& v) {
    return v[below(static_cast<int>(v.size()))];
  }
  Ty random_type() {
    static const std::vector<Ty> kTypes = {Ty::Int,   Ty::Int,  Ty::Int,    Ty::UInt,     Ty::Float,
                                           Ty::Float, Ty::Bool, Ty::IntArr, Ty::FloatArr, Ty::Rec};
    return pick(kTypes);
  }

  // ---- declarations -------------------------------------------------------------------------
  void declare_signatures() {
    for (int f = 0; f < opt_.functions; ++f) {
      Signature sig;
      sig.name = fmt::format("f{}", f);
      const int params = below(opt_.max_params + 1);
      for (int p = 0; p < params; ++p)
        sig.params.push_back(random_type());
      sig.result = chance(40) ? Ty::Int : random_type();
      signatures_.push_back(sig);
    }
  }

  std::string function(const Signature& sig) {
    begin_function(sig.result, opt_.calls_per_function);
    std::vector<VarInfo> params = {{"d", Ty::Int, false}};
    std::string header = fmt::format("fn {}(d: int", sig.name);
    for (size_t p = 0; p < sig.params.size(); ++p) {
      const std::string name = fmt::format("p{}", p);
      header += fmt::format(", {}: {}", name, spell(sig.params[p]));
      params.push_back({name, sig.params[p], false});
    }
    header += fmt::format(") -> {} {{\n", spell(sig.result));
    scopes_.push_back(params);

    // The guard: without calls, so depth 0 never recurses. Its spelling varies; `d == 0` looks
    // unbounded but d never goes below 0 (main passes d >= 0, calls pass d - 1 only past here).
    static const std::vector<std::string> kGuards = {"d <= 0", "d < 1", "!(d > 0)", "d == 0"};
    calls_allowed_ = false;
    line(fmt::format("if {} {{ return {}; }}", pick(kGuards), expr(sig.result, 1)));
    calls_allowed_ = true;
    depth_arg_ = "d - 1";

    block_statements(opt_.max_statements);
    line(fmt::format("return {};", returned(sig.result, opt_.max_expr_depth)));
    scopes_.pop_back();
    return header + body_ + "}\n";
  }

  std::string main_function() {
    begin_function(Ty::Int, opt_.calls_per_function + 1);
    returns_out_ = true;
    scopes_.push_back({{"x", Ty::Int, false}, {"y", Ty::Int, false}});
    line("let d = x & 3;");
    scopes_.back().push_back({"d", Ty::Int, false});
    calls_allowed_ = true;
    depth_arg_ = "d";
    block_statements(opt_.max_statements);
    line(fmt::format("return {};", out_literal()));
    scopes_.pop_back();
    return "fn main(x: int, y: int) -> Out {\n" + body_ + "}\n";
  }

  void begin_function(Ty result, int call_budget) {
    body_.clear();
    indent_ = 1;
    next_var_ = 0;
    call_budget_ = call_budget;
    loop_multiplier_ = 1;
    loop_depth_ = 0;
    nesting_ = 0;
    result_ = result;
    returns_out_ = false;
  }

  std::string out_literal() {
    return fmt::format("Out {{ v: {}, f: {}, u: {}, b: {} }}", expr(Ty::Int, opt_.max_expr_depth),
                       expr(Ty::Float, opt_.max_expr_depth), expr(Ty::UInt, 2), expr(Ty::Bool, 2));
  }

  // ---- statements ---------------------------------------------------------------------------
  void line(const std::string& text) {
    body_ += std::string(static_cast<size_t>(indent_) * 4, ' ') + text + "\n";
  }

  void block_statements(int max_statements) {
    const int count = 1 + below(max_statements);
    for (int i = 0; i < count; ++i)
      statement();
  }

  // Runs `emit_body` as a nested `{ ... }` block with its own scope.
  template <class F>
  void nested(const std::string& opener, F emit_body, const std::string& closer = "}") {
    line(opener);
    ++indent_;
    ++nesting_;
    scopes_.emplace_back();
    emit_body();
    scopes_.pop_back();
    --nesting_;
    --indent_;
    line(closer);
  }

  void statement() {
    const int roll = below(100);
    const bool can_nest = nesting_ < opt_.max_nesting;
    if (roll < 28) return declaration();
    if (roll < 52) return assignment();
    if (roll < 64 && can_nest) return if_chain();
    if (roll < 71 && can_nest) return while_loop();
    if (roll < 78 && can_nest) return for_loop();
    if (roll < 84 && loop_depth_ > 0) {
      return line(
          fmt::format("if {} {{ {}; }}", expr(Ty::Bool, 2), chance(50) ? "break" : "continue"));
    }
    if (roll < 88) return assertion();
    if (roll < 93) {
      if (auto call = call_of(random_type(), 2)) return line(*call + ";");
    }
    if (roll < 96) {
      return line(fmt::format("if {} {{ return {}; }}", expr(Ty::Bool, 2),
                              returns_out_ ? out_literal() : returned(result_, 2)));
    }
    declaration();
  }

  void declaration() {
    const Ty type = random_type();
    const std::string name = fmt::format("v{}", next_var_++);
    const int form = below(10);
    if (form < 5) {
      line(fmt::format("var {}: {} = {};", name, spell(type), expr(type, opt_.max_expr_depth)));
      scopes_.back().push_back({name, type, true});
    } else if (form < 9) {
      line(fmt::format("let {} = {};", name, expr(type, opt_.max_expr_depth)));
      scopes_.back().push_back({name, type, false});
    } else {
      line(fmt::format("var {}: {};", name, spell(type)));  // zero-initialized
      scopes_.back().push_back({name, type, true});
    }
  }

  void assignment() {
    std::vector<VarInfo> targets;
    for (const auto& scope : scopes_) {
      for (const VarInfo& v : scope) {
        if (v.assignable) targets.push_back(v);
      }
    }
    if (targets.empty()) return declaration();
    const VarInfo& target = pick(targets);
    const int depth = opt_.max_expr_depth;
    switch (target.type) {
      case Ty::Int:
      case Ty::UInt: {
        static const std::vector<std::string> kOps = {
            "=", "+=", "-=", "*=", "&=", "|=", "^=", "<<=", ">>=", "/=", "%="};
        const std::string op = pick(kOps);
        if (op == "/=" || op == "%=") {
          return line(fmt::format("{} {} {};", target.name, op, divisor(target.type, depth)));
        }
        return line(fmt::format("{} {} {};", target.name, op, expr(target.type, depth)));
      }
      case Ty::Float: {
        static const std::vector<std::string> kOps = {"=", "+=", "-=", "*=", "/="};
        return line(fmt::format("{} {} {};", target.name, pick(kOps), expr(Ty::Float, depth)));
      }
      case Ty::Bool:
        return line(fmt::format("{} = {};", target.name, expr(Ty::Bool, depth)));
      case Ty::IntArr:
        if (chance(50)) {
          return line(fmt::format("{}[{}] {} {};", target.name, index(depth - 1),
                                  chance(50) ? "=" : "+=", expr(Ty::Int, depth)));
        }
        return line(fmt::format("{} = {};", target.name, expr(Ty::IntArr, depth)));
      case Ty::FloatArr:
        if (chance(50)) {
          return line(
              fmt::format("{}[{}] = {};", target.name, index(depth - 1), expr(Ty::Float, depth)));
        }
        return line(fmt::format("{} = {};", target.name, expr(Ty::FloatArr, depth)));
      case Ty::Rec: {
        const int field = below(4);
        if (field == 0) return line(fmt::format("{}.i -= {};", target.name, expr(Ty::Int, depth)));
        if (field == 1) return line(fmt::format("{}.f = {};", target.name, expr(Ty::Float, depth)));
        if (field == 2) {
          return line(
              fmt::format("{}.a[{}] = {};", target.name, index(depth - 1), expr(Ty::Int, depth)));
        }
        return line(fmt::format("{} = {};", target.name, expr(Ty::Rec, depth)));
      }
    }
  }

  void if_chain() {
    nested(fmt::format("if {} {{", expr(Ty::Bool, 2)), [&] { block_statements(3); });
    // Re-open the chain: replace the closing brace just written with "} else ... {".
    const int arms = below(3);
    for (int arm = 0; arm < arms; ++arm) {
      body_.resize(body_.size() - 2);  // drop "}\n"
      const bool last = arm == arms - 1 && chance(50);
      const std::string opener =
          last ? "} else {" : fmt::format("}} else if {} {{", expr(Ty::Bool, 2));
      body_ += opener + "\n";
      ++indent_;
      ++nesting_;
      scopes_.emplace_back();
      block_statements(3);
      scopes_.pop_back();
      --nesting_;
      --indent_;
      line("}");
      if (last) break;
    }
  }

  void while_loop() {
    const int trips = 1 + below(4);
    const std::string counter = fmt::format("w{}", next_var_++);
    line(fmt::format("var {} = 0;", counter));
    scopes_.back().push_back({counter, Ty::Int, false});  // only the loop itself changes it
    const bool forever_form = chance(30);
    const std::string opener =
        forever_form ? "while true {" : fmt::format("while {} < {} {{", counter, trips);
    enter_loop(trips);
    nested(opener, [&] {
      // The counter moves first, so `continue` anywhere below cannot loop forever.
      line(fmt::format("{} += 1;", counter));
      if (forever_form) line(fmt::format("if {} > {} {{ break; }}", counter, trips));
      block_statements(3);
    });
    leave_loop(trips);
  }

  void for_loop() {
    const std::string name = fmt::format("i{}", next_var_++);
    std::string range;
    int trips = 4;
    Ty index_type = Ty::Int;
    switch (below(4)) {
      case 0:
        range = fmt::format("0..{}", 1 + below(4));
        break;
      case 1:
        range = fmt::format("{}..4", below(3));
        break;
      case 2:
        range = fmt::format("0..({} & 3)", expr(Ty::Int, 1));
        trips = 3;
        break;
      default:
        range = "0u..3u";
        trips = 3;
        index_type = Ty::UInt;
        break;
    }
    enter_loop(trips);
    line(fmt::format("for {} in {} {{", name, range));
    ++indent_;
    ++nesting_;
    scopes_.push_back({{name, index_type, false}});
    block_statements(3);
    scopes_.pop_back();
    --nesting_;
    --indent_;
    line("}");
    leave_loop(trips);
  }

  void enter_loop(int trips) {
    loop_multiplier_ *= trips;
    ++loop_depth_;
  }
  void leave_loop(int trips) {
    loop_multiplier_ /= trips;
    --loop_depth_;
  }

  void assertion() {
    if (opt_.faults && chance(50)) {
      // Fails for about one value in 16.
      return line(fmt::format("assert(({} & 15) != 7);", expr(Ty::Int, 2)));
    }
    line(fmt::format("assert({} || true);", expr(Ty::Bool, 1)));
  }

  // ---- expressions --------------------------------------------------------------------------
  std::optional<std::string> var_of(Ty type) {
    std::vector<std::string> names;
    for (const auto& scope : scopes_) {
      for (const VarInfo& v : scope) {
        if (v.type == type) names.push_back(v.name);
      }
    }
    if (names.empty()) return std::nullopt;
    return pick(names);
  }

  // What a `return` returns: sometimes a call, which is then a tail call (docs/language.md).
  std::string returned(Ty type, int depth) {
    if (chance(30))
      if (auto call = call_of(type, depth)) return *call;
    return expr(type, depth);
  }

  std::optional<std::string> call_of(Ty type, int depth) {
    if (!calls_allowed_ || call_budget_ < loop_multiplier_) return std::nullopt;
    std::vector<const Signature*> candidates;
    for (const Signature& sig : signatures_) {
      if (sig.result == type) candidates.push_back(&sig);
    }
    if (candidates.empty()) return std::nullopt;
    const Signature& callee = *pick(candidates);
    call_budget_ -= loop_multiplier_;
    std::string text = fmt::format("{}({}", callee.name, depth_arg_);
    for (Ty param : callee.params)
      text += ", " + expr(param, depth - 1);
    return text + ")";
  }

  // An index for a 4-element array: in range, unless faults are on and the dice say otherwise.
  std::string index(int depth) {
    if (opt_.faults && chance(4)) {
      // Mixes in d so the index is never a compile-time constant (those are checked statically).
      return fmt::format("(({} + d) % 5)", expr(Ty::Int, depth));
    }
    if (chance(15)) return std::to_string(below(4));
    if (chance(20)) return fmt::format("({} & 3u)", expr(Ty::UInt, depth));
    return fmt::format("({} & 3)", expr(Ty::Int, depth));
  }

  // A divisor for int or uint: never zero unless faults are on and the dice say otherwise.
  std::string divisor(Ty type, int depth) {
    const std::string e = expr(type, depth);
    const bool is_uint = type == Ty::UInt;
    if (opt_.faults && chance(10)) return fmt::format("({} & {})", e, is_uint ? "7u" : "7");
    return fmt::format("({} | {})", e, is_uint ? "1u" : "1");
  }

  std::string expr(Ty type, int depth) {
    if (depth <= 0 || chance(20)) return leaf(type);
    if (chance(12)) {
      if (auto call = call_of(type, depth)) return *call;
    }
    switch (type) {
      case Ty::Int:
        return int_expr(depth);
      case Ty::UInt:
        return uint_expr(depth);
      case Ty::Float:
        return float_expr(depth);
      case Ty::Bool:
        return bool_expr(depth);
      case Ty::IntArr:
        return int_array_expr(depth);
      case Ty::FloatArr:
        return float_array_expr(depth);
      case Ty::Rec:
        return rec_expr(depth);
    }
    return leaf(type);
  }

  std::string leaf(Ty type) {
    if (chance(65)) {
      if (auto v = var_of(type)) return *v;
    }
    switch (type) {
      case Ty::Int: {
        if (chance(10)) return chance(50) ? "C0" : "C1";
        static const std::vector<std::string> kInts = {
            "0", "1", "2", "3", "5", "7", "(-1)", "(-3)", "100", "12345", "2147483647", "31", "33"};
        return pick(kInts);
      }
      case Ty::UInt: {
        static const std::vector<std::string> kUInts = {"0u",  "1u",          "3u",
                                                        "17u", "4294967295u", "2654435769u"};
        return pick(kUInts);
      }
      case Ty::Float: {
        static const std::vector<std::string> kFloats = {"0.0", "1.0", "0.5",   "2.25", "(-1.5)",
                                                         "3.0", "0.1", "100.0", "1e3",  "2.0e-3"};
        // inf, -inf, NaN (spelled as the language computes them), -0, a denormal, huge values.
        static const std::vector<std::string> kSpecials = {
            "(1.0 / 0.0)", "(-1.0 / 0.0)", "(0.0 / 0.0)", "(-0.0)",
            "1e-40",       "3e9",          "(-1e30)",     "16777217.0"};
        if (opt_.float_specials && chance(20)) return pick(kSpecials);
        return pick(kFloats);
      }
      case Ty::Bool:
        return chance(50) ? "true" : "false";
      case Ty::IntArr:
        return fmt::format("[{}; 4]", leaf(Ty::Int));
      case Ty::FloatArr:
        return fmt::format("[{}, {}, {}, {}]", leaf(Ty::Float), leaf(Ty::Float), leaf(Ty::Float),
                           leaf(Ty::Float));
      case Ty::Rec:
        return fmt::format("Rec {{ i: {}, f: {}, a: {} }}", leaf(Ty::Int), leaf(Ty::Float),
                           leaf(Ty::IntArr));
    }
    return "0";
  }

  std::string int_expr(int depth) {
    const int d = depth - 1;
    switch (below(14)) {
      case 0:
      case 1: {
        static const std::vector<std::string> kOps = {"+", "-", "*", "&", "|", "^"};
        return fmt::format("({} {} {})", expr(Ty::Int, d), pick(kOps), expr(Ty::Int, d));
      }
      case 2:
        return fmt::format("({} {} {})", expr(Ty::Int, d), chance(50) ? "<<" : ">>",
                           expr(Ty::Int, d));
      case 3:
        return fmt::format("({} {} {})", expr(Ty::Int, d), chance(50) ? "/" : "%",
                           divisor(Ty::Int, d));
      case 4:
        return fmt::format("{}({})", chance(50) ? "-" : "~", expr(Ty::Int, d));
      case 5:
        return fmt::format("int({})", expr(Ty::Float, d));
      case 6:
        return fmt::format("int({})", expr(chance(50) ? Ty::UInt : Ty::Bool, d));
      case 7: {
        if (auto arr = var_of(Ty::IntArr)) return fmt::format("{}[{}]", *arr, index(d));
        return fmt::format("{}[{}]", int_array_expr(d), index(d));
      }
      case 8: {
        if (auto rec = var_of(Ty::Rec)) {
          return chance(50) ? *rec + ".i" : fmt::format("{}.a[{}]", *rec, index(d));
        }
        return fmt::format("abs({})", expr(Ty::Int, d));
      }
      case 9:
        return fmt::format("{}({}, {})", chance(50) ? "min" : "max", expr(Ty::Int, d),
                           expr(Ty::Int, d));
      case 10:
        return fmt::format("clamp({}, -20, 20)", expr(Ty::Int, d));
      case 11:
        return chance(50) ? fmt::format("sum({})", expr(Ty::IntArr, d))
                          : fmt::format("dot({}, {})", expr(Ty::IntArr, d), expr(Ty::IntArr, d));
      case 12:
        return fmt::format("len({})", leaf(Ty::IntArr));
      default:
        if (auto call = call_of(Ty::Int, depth)) return *call;
        return fmt::format("({} + {})", expr(Ty::Int, d), leaf(Ty::Int));
    }
  }

  std::string uint_expr(int depth) {
    const int d = depth - 1;
    switch (below(7)) {
      case 0:
      case 1: {
        static const std::vector<std::string> kOps = {"+", "-", "*", "&", "|", "^", "<<", ">>"};
        return fmt::format("({} {} {})", expr(Ty::UInt, d), pick(kOps), expr(Ty::UInt, d));
      }
      case 2:
        return fmt::format("({} {} {})", expr(Ty::UInt, d), chance(50) ? "/" : "%",
                           divisor(Ty::UInt, d));
      case 3:
        return fmt::format("uint({})", expr(Ty::Int, d));
      case 4:
        return fmt::format("uint({})", expr(Ty::Float, d));
      case 5:
        return fmt::format("{}({}, {})", chance(50) ? "min" : "max", expr(Ty::UInt, d),
                           expr(Ty::UInt, d));
      default:
        return fmt::format("~({})", expr(Ty::UInt, d));
    }
  }

  std::string float_expr(int depth) {
    const int d = depth - 1;
    if (opt_.float_specials && chance(12)) {  // any argument, however large or special
      static const std::vector<std::string> kFns = {"exp", "log", "sin", "cos", "tanh"};
      if (chance(25)) return fmt::format("pow({}, {})", expr(Ty::Float, d), expr(Ty::Float, d));
      return fmt::format("{}({})", pick(kFns), expr(Ty::Float, d));
    }
    switch (below(opt_.products ? 14 : 13)) {
      case 0:
      case 1: {
        static const std::vector<std::string> kOps = {"+", "-", "*", "/", "%"};
        return fmt::format("({} {} {})", expr(Ty::Float, d), pick(kOps), expr(Ty::Float, d));
      }
      case 2:
        return fmt::format("float({})", expr(chance(70) ? Ty::Int : Ty::Bool, d));
      case 3: {
        static const std::vector<std::string> kFns = {"sin", "cos", "tanh", "floor", "ceil", "abs"};
        return fmt::format("{}({})", pick(kFns), expr(Ty::Float, d));
      }
      case 4:
        return fmt::format("sqrt(abs({}))", expr(Ty::Float, d));
      case 5:
        return fmt::format("exp(clamp({}, -10.0, 10.0))", expr(Ty::Float, d));
      case 6:
        return fmt::format("log(abs({}) + 1.0)", expr(Ty::Float, d));
      case 7:
        return fmt::format("pow(abs({}) + 0.5, {})", expr(Ty::Float, d),
                           pick(std::vector<std::string>{"0.5", "2.0", "(-1.0)", "1.5"}));
      case 8:
        if (opt_.random_draws) return chance(50) ? "uniform()" : "normal()";
        return leaf(Ty::Float);
      case 9: {
        if (auto arr = var_of(Ty::FloatArr)) return fmt::format("{}[{}]", *arr, index(d));
        if (auto rec = var_of(Ty::Rec)) return *rec + ".f";
        return fmt::format("sum({})", expr(Ty::FloatArr, d));
      }
      case 10:
        return fmt::format("dot({}, {})", expr(Ty::FloatArr, d), expr(Ty::FloatArr, d));
      case 11:
        return fmt::format("{}({}, {})", chance(50) ? "min" : "max", expr(Ty::Float, d),
                           expr(Ty::Float, d));
      case 12:
        if (auto call = call_of(Ty::Float, depth)) return *call;
        return fmt::format("-({})", expr(Ty::Float, d));
      default: {  // one array's reduction
        static const std::vector<std::string> kFns = {"max", "min", "log_sum_exp", "mean"};
        return fmt::format("{}({})", pick(kFns), expr(Ty::FloatArr, d));
      }
    }
  }

  std::string bool_expr(int depth) {
    const int d = depth - 1;
    static const std::vector<std::string> kCompare = {"<", "<=", ">", ">=", "==", "!="};
    switch (below(8)) {
      case 0:
      case 1: {
        const Ty t = pick(std::vector<Ty>{Ty::Int, Ty::Int, Ty::UInt, Ty::Float});
        return fmt::format("({} {} {})", expr(t, d), pick(kCompare), expr(t, d));
      }
      case 2:
        return fmt::format("!({})", expr(Ty::Bool, d));
      case 3:
      case 4: {
        // && and || with a call (or anything) on the right: short-circuit control flow.
        std::string right;
        if (chance(60)) {
          if (auto call = call_of(Ty::Int, depth)) {
            right = fmt::format("({} {} {})", *call, pick(kCompare), leaf(Ty::Int));
          } else if (auto bcall = call_of(Ty::Bool, depth)) {
            right = *bcall;
          }
        }
        if (right.empty()) right = expr(Ty::Bool, d);
        return fmt::format("({} {} {})", expr(Ty::Bool, d), chance(50) ? "&&" : "||", right);
      }
      case 5: {
        // A divide on the right of && only runs when the left holds.
        const std::string divisor_var = leaf(Ty::Int);
        return fmt::format("(({} != 0) && ((100 / {}) > {}))", divisor_var, divisor_var,
                           leaf(Ty::Int));
      }
      case 6: {
        if (auto rec = var_of(Ty::Rec)) return fmt::format("({}.f > {})", *rec, leaf(Ty::Float));
        return fmt::format("({} < {})", expr(Ty::Float, d), expr(Ty::Float, d));
      }
      default:
        if (auto call = call_of(Ty::Bool, depth)) return *call;
        return fmt::format("({} == {})", expr(Ty::Int, d), leaf(Ty::Int));
    }
  }

  std::string int_array_expr(int depth) {
    const int d = depth - 1;
    switch (below(6)) {
      case 0:
        return fmt::format("[{}, {}, {}, {}]", expr(Ty::Int, d), expr(Ty::Int, d), expr(Ty::Int, d),
                           expr(Ty::Int, d));
      case 1:
        return fmt::format("[{}; 4]", expr(Ty::Int, d));
      case 2:
        return fmt::format("({} {} {})", expr(Ty::IntArr, d), chance(50) ? "+" : "-",
                           expr(Ty::IntArr, d));
      case 3:
        return fmt::format("({} * {})", expr(Ty::IntArr, d), expr(Ty::Int, d));
      case 4:
        if (auto rec = var_of(Ty::Rec)) return *rec + ".a";
        return fmt::format("abs({})", expr(Ty::IntArr, d));
      default:
        return fmt::format("{}({}, {})", chance(50) ? "min" : "max", expr(Ty::IntArr, d),
                           expr(Ty::IntArr, d));
    }
  }

  std::string float_array_expr(int depth) {
    const int d = depth - 1;
    switch (below(opt_.products ? 8 : 6)) {
      case 0:
        return fmt::format("[{}, {}, {}, {}]", expr(Ty::Float, d), expr(Ty::Float, d),
                           expr(Ty::Float, d), expr(Ty::Float, d));
      case 1:
        return fmt::format("[{}; 4]", expr(Ty::Float, d));
      case 2: {
        static const std::vector<std::string> kOps = {"+", "-", "*", "/"};
        return fmt::format("({} {} {})", expr(Ty::FloatArr, d), pick(kOps), expr(Ty::FloatArr, d));
      }
      case 3:
        return fmt::format("({} * {})", expr(Ty::FloatArr, d), expr(Ty::Float, d));
      case 4:
        return fmt::format("float({})", expr(Ty::IntArr, d));
      case 5:
        return fmt::format("sin({})", expr(Ty::FloatArr, d));
      case 6:
        return product_expr(d);
      default:
        return fmt::format("transpose({})[{}]", matrix(4, 4, d), index(d));
    }
  }

  // ---- matrix products: float[4] results of random inner shapes ------------------------------
  // A vector of n floats: a float[4] expression, a literal of n elements, or (long) a repeat.
  std::string vector_of(int n, int depth) {
    if (n == 4 && chance(50)) return expr(Ty::FloatArr, depth);
    return array_literal(n, [&] { return expr(Ty::Float, depth); });
  }
  std::string matrix(int rows, int cols, int depth) {
    return array_literal(rows, [&] { return vector_of(cols, depth); });
  }
  // The summed length: short, or past one block of the summation order (docs/language.md).
  int inner_length() { return chance(15) ? 64 + below(8) : 1 + below(5); }
  std::string product_expr(int depth) {
    const int k = inner_length(), d = depth - 1;
    switch (below(4)) {
      case 0:
        return fmt::format("({} @ {})", matrix(4, k, d), vector_of(k, d));
      case 1:
        return fmt::format("({} @ {})", vector_of(k, d), matrix(k, 4, d));
      case 2:
        return fmt::format("({} @ {})[{}]", matrix(4, k, d), matrix(k, 4, d), index(d));
      default:  // a row of the transpose: column `c` of a 4 x k matrix
        return fmt::format("transpose({})[{}]", matrix(4, k, d), below(k));
    }
  }

  std::string rec_expr(int depth) {
    const int d = depth - 1;
    return fmt::format("Rec {{ i: {}, f: {}, a: {} }}", expr(Ty::Int, d), expr(Ty::Float, d),
                       expr(Ty::IntArr, d));
  }

  std::mt19937_64 rng_;
  GenOptions opt_;
  std::string seed_text_;
  std::vector<Signature> signatures_;

  // The function being generated.
  std::vector<std::vector<VarInfo>> scopes_;
  std::string body_;
  int indent_ = 1;
  int next_var_ = 0;
  int call_budget_ = 0;
  int loop_multiplier_ = 1;  // product of the trip counts of the loops around the cursor
  int loop_depth_ = 0;
  int nesting_ = 0;
  bool calls_allowed_ = false;
  std::string depth_arg_;
  Ty result_ = Ty::Int;
  bool returns_out_ = false;
};

}  // namespace

std::string array_literal(int n, const std::function<std::string()>& element) {
  if (n > 4) return fmt::format("[{}; {}]", element(), n);
  std::string text = "[";
  for (int i = 0; i < n; ++i)
    text += (i ? ", " : "") + element();
  return text + "]";
}

std::string generate_program(uint64_t seed, const GenOptions& options) {
  Generator generator(seed, options);
  generator.set_seed_text(std::to_string(seed));
  return generator.program();
}

namespace {

std::string call_program(int functions, bool ring) {
  std::string text = fmt::format("// {} of {} functions, written by scripts/gen_calls.py\n",
                                 ring ? "ring" : "chain", functions);
  for (int i = 0; i < functions; ++i) {
    if (i + 1 == functions && !ring) {
      text += fmt::format("fn f{}(n: int) -> int {{\n    return n * 3 + {};\n}}\n", i, i);
      continue;
    }
    const int next = (i + 1) % functions;
    text += fmt::format("fn f{}(n: int) -> int {{\n", i);
    if (ring) text += fmt::format("    if n <= 0 {{ return {}; }}\n", i);
    text += ring ? fmt::format("    let r = f{}(n - 1);\n", next)
                 : fmt::format("    let r = f{}(n + {});\n", next, i % 7);
    text += fmt::format("    return r * 3 + {};\n}}\n", i);
  }
  return text + "fn main(n: int) -> int {\n    return f0(n);\n}\n";
}

}  // namespace

std::string call_chain_program(int functions) {
  return call_program(functions, false);
}
std::string call_ring_program(int functions) {
  return call_program(functions, true);
}

}  // namespace ab::testing
