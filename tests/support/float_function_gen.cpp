// random_float_function (program_gen.h): random float functions of float[3] for the gradient
// tests, every value kept moderate so that float32 central differences stay meaningful.
#include <fmt/format.h>

#include <random>
#include <string>

#include "support/program_gen.h"

namespace ab::testing {

namespace {

class FloatGen {
 public:
  explicit FloatGen(uint64_t seed) : rng_(seed) {}

  std::string program() {
    std::string out;
    out += "fn h0(a: float, b: float) -> float { return " + helper_expr() + "; }\n";
    out +=
        "fn h1(a: float, b: float) -> float {\n    var r = a;\n    if b > 0.2 { r = "
        "sin(a * b); } else { r = tanh(a - b) * 2.0; }\n    return r + 0.5 * b;\n}\n";
    out += "fn f(x: float[3]) -> float {\n    var s = x[0];\n    var t = 0.5 * x[1];\n";
    block(out, 1, 2, 5);
    out += "    return s + t * x[2];\n}\n";
    return out;
  }

 private:
  int pick(int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng_); }
  std::string literal() {
    return fmt::format("{:.2f}", std::uniform_real_distribution<double>(-1.5, 1.5)(rng_));
  }
  std::string helper_expr() {
    static const char* const kForms[] = {"a * b + sin(a)", "log1p_exp(a) - b * b * 0.25",
                                         "erf(a) * b + cos(b)", "lgamma(1.5 + a * a) + b"};
    return kForms[pick(4)];
  }
  std::string leaf(int loop_depth) {
    const int n = loop_depth > 0 ? 5 : 4;
    switch (pick(n)) {
      case 0:
        return "s";
      case 1:
        return "t";
      case 2:
        return fmt::format("x[{}]", pick(3));
      case 3:
        return literal();
      default:
        return fmt::format("x[i{} % 3]", loop_depth - 1);
    }
  }
  std::string expr(int depth, int loop_depth) {
    if (depth == 0) return leaf(loop_depth);
    const std::string a = expr(depth - 1, loop_depth), b = expr(depth - 1, loop_depth);
    switch (pick(14)) {
      case 0:
        return fmt::format("({} + {})", a, b);
      case 1:
        return fmt::format("({} - {})", a, b);
      case 2:
        return fmt::format("({} * {})", a, b);
      case 3:
        return fmt::format("sin({})", a);
      case 4:
        return fmt::format("tanh({})", a);
      case 5:
        return fmt::format("exp(tanh({}))", a);
      case 6:
        return fmt::format("log(1.0 + {} * {})", a, a);
      case 7:
        return fmt::format("sqrt(1.0 + {} * {})", a, a);
      case 8:
        return fmt::format("h{}({}, {})", pick(2), a, b);
      case 9:
        return fmt::format("inv_logit({})", a);
      case 10:
        return fmt::format("log_sum_exp({}, {})", a, b);
      case 11:
        return fmt::format("max({}, {})", a, b);
      case 12:
        return fmt::format("({} / (1.5 + {} * {}))", a, b, b);
      default:
        return fmt::format("log1p_exp({})", a);
    }
  }
  void line(std::string& out, int indent, const std::string& text) {
    out += std::string(4 * indent, ' ') + text + "\n";
  }
  // ---- matrix products of random shapes (inner lengths past one 64-term block too), reduced
  // by a one-array reduction to a float --------------------------------------------------------
  std::string vector_of(int n, int loop_depth) {
    return array_literal(n, [&] { return pick(3) ? expr(pick(2), loop_depth) : literal(); });
  }
  std::string matrix(int rows, int cols, int loop_depth) {
    return array_literal(rows, [&] { return vector_of(cols, loop_depth); });
  }
  int length() { return pick(6) ? 1 + pick(4) : 64 + pick(6); }
  // A float array (its length in `n`) made by a product or a transpose.
  std::string product(int loop_depth, int& n) {
    const int m = 1 + pick(3), k = length(), p = 1 + pick(3);
    switch (pick(5)) {
      case 0:
        n = m;
        return fmt::format("({} @ {})", matrix(m, k, loop_depth), vector_of(k, loop_depth));
      case 1:
        n = p;
        return fmt::format("({} @ {})", vector_of(k, loop_depth), matrix(k, p, loop_depth));
      case 2:
        n = p;
        return fmt::format("({} @ {})[{}]", matrix(m, k, loop_depth), matrix(k, p, loop_depth),
                           pick(m));
      case 3:
        n = m;
        return fmt::format("(transpose({}) @ {})", matrix(k, m, loop_depth),
                           vector_of(k, loop_depth));
      default:
        n = m;
        return fmt::format("transpose({})[{}]", matrix(m, k, loop_depth), pick(k));
    }
  }
  std::string reduced_product(int loop_depth) {
    int n = 0;
    const std::string a = product(loop_depth, n);
    static const char* const kReductions[] = {"sum", "max", "min", "log_sum_exp", "mean"};
    const int which = pick(6);
    if (which == 5) return fmt::format("dot({}, {})", a, vector_of(n, loop_depth));
    return fmt::format("{}({})", kReductions[which], a);
  }

  void statement(std::string& out, int indent, int nesting, int loop_depth) {
    const char* const bounded[] = {"sin", "tanh", "erf", "inv_logit", "cos"};
    const std::string var = pick(2) ? "s" : "t";
    if (pick(5) == 0) {
      line(out, indent,
           fmt::format("{} = 0.7 * {} + 0.6 * tanh({});", var, var, reduced_product(loop_depth)));
      return;
    }
    switch (nesting > 0 ? pick(6) : pick(2)) {
      case 0:
      case 1:
        line(out, indent,
             fmt::format("{} = 0.7 * {} + 0.6 * {}({});", var, var, bounded[pick(5)],
                         expr(1 + pick(2), loop_depth)));
        return;
      case 2: {
        line(out, indent, fmt::format("if {} > {} {{", expr(1, loop_depth), literal()));
        block(out, indent + 1, nesting - 1, 2, loop_depth);
        line(out, indent, "} else {");
        block(out, indent + 1, nesting - 1, 2, loop_depth);
        line(out, indent, "}");
        return;
      }
      case 3: {  // a trip count that depends on x
        const std::string bound = pick(2) ? std::to_string(1 + pick(4))
                                          : fmt::format("int(abs(x[{}]) * 2.0) + 1", pick(3));
        line(out, indent, fmt::format("for i{} in 0..{} {{", loop_depth, bound));
        block(out, indent + 1, nesting - 1, 2, loop_depth + 1);
        line(out, indent, "}");
        return;
      }
      case 4: {
        const int k = next_var_++, j = pick(3);
        line(out, indent, fmt::format("var u{} = 0.5 + x[{}] * x[{}];", k, j, j));
        line(out, indent, fmt::format("while u{} < 3.0 {{", k));
        line(out, indent + 1, fmt::format("u{} = u{} * 1.6 + 0.3;", k, k));
        line(
            out, indent + 1,
            fmt::format("{} = 0.8 * {} + 0.3 * tanh(u{} * {});", var, var, k, expr(1, loop_depth)));
        line(out, indent, "}");
        return;
      }
      default:
        line(out, indent,
             fmt::format("{} = {} * 0.5 + 0.5 * h{}({}, {});", var, var, pick(2),
                         expr(1, loop_depth), expr(1, loop_depth)));
        return;
    }
  }
  void block(std::string& out, int indent, int nesting, int max, int loop_depth = 0) {
    const int n = 1 + pick(max);
    for (int k = 0; k < n; ++k)
      statement(out, indent, nesting, loop_depth);
  }

  std::mt19937_64 rng_;
  int next_var_ = 0;
};

}  // namespace

std::string random_float_function(uint64_t seed) {
  return FloatGen(seed).program();
}

}  // namespace ab::testing
