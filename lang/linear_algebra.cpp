// The linear algebra builtins of the function builder, composed at their call: Stan's
// cholesky_decompose and mdivide_left_tri_low are the op table's Cholesky and TriSolve
// (ir/linear_algebra.h) with their argument checks; gp_exp_quad_cov (cov_exp_quad), add_diag,
// log_determinant (of a triangular factor), log_determinant_spd and multi_normal_cholesky_lpdf
// are made of other ops (outer, elementwise arithmetic, dot, sum), so
// every backend and `grad` get them with the bits of the ops they are made of. docs/language.md,
// "Linear algebra", is the user's page.
#include <fmt/format.h>

#include <limits>
#include <utility>

#include "lang/builder_state.h"
#include "lang/composer.h"

namespace ab::frontend {

class LinearAlgebraCall {
 public:
  LinearAlgebraCall(FunctionBuilder& fb, const ast::Expr& e) : fb(fb), e(e), c(fb, e.loc) {}

  std::optional<Value> call() {
    const std::string& n = e.name;
    if (n == "cholesky_decompose") return cholesky();
    if (n == "mdivide_left_tri_low") return tri_solve();
    if (n == "gp_exp_quad_cov" || n == "cov_exp_quad") return exp_quad_cov();
    if (n == "add_diag") return add_diag();
    if (n == "log_determinant") return log_determinant();
    if (n == "log_determinant_spd") return log_determinant_spd();
    if (n == "multi_normal_cholesky_lpdf") return multi_normal_cholesky();
    if (n == "lkj_corr_cholesky_lpdf") return lkj_corr_cholesky();
    return std::nullopt;
  }

 private:
  enum class Shape : uint8_t { Scalar, Vector, Matrix, VectorOrMatrix, ScalarOrVector };

  // cholesky_decompose(A): the lower factor; a diagonal element that is not a positive finite
  // float (A not positive definite, or not finite) faults the lane.
  Value cholesky() {
    const auto args = arguments({{"A", Shape::Matrix}});
    if (!args) return Value{};
    const Value l = fb.matrix_op(OpCode::Cholesky, (*args)[0], Value{}, e.loc);
    if (!l.ok()) return l;
    c.check(positive_finite(diagonal(l)),
            e.name +
                ": A must be symmetric positive definite (its factor's diagonal positive and "
                "finite)");
    return l;
  }

  // mdivide_left_tri_low(L, b): L \ b, L's lower triangle read.
  Value tri_solve() {
    const auto args = arguments({{"L", Shape::Matrix}, {"b", Shape::VectorOrMatrix}});
    if (!args) return Value{};
    return fb.matrix_op(OpCode::TriSolve, (*args)[0], (*args)[1], e.loc);
  }

  // gp_exp_quad_cov(x, alpha, rho)[i][j] = alpha^2 exp((x[i] - x[j])^2 (-0.5 / rho^2)), as Stan
  // computes it (alpha^2 on the diagonal, since exp(-0) is 1).
  Value exp_quad_cov() {
    const auto args =
        arguments({{"x", Shape::Vector}, {"alpha", Shape::Scalar}, {"rho", Shape::Scalar}});
    if (!args) return Value{};
    const Value &x = (*args)[0], &alpha = (*args)[1], &rho = (*args)[2];
    check_not_nan(x, "x");
    for (const auto& [v, name] : {std::pair{alpha, "alpha"}, std::pair{rho, "rho"}})
      c.check(positive_finite(v), fmt::format("{}: {} must be finite and > 0", e.name, name));
    const Value ones = filled(x.type, 1.0f);
    const Value d = c.op(OpCode::Sub, {fb.matrix_op(OpCode::Outer, x, ones, e.loc),
                                       fb.matrix_op(OpCode::Outer, ones, x, e.loc)});
    const Value scale = c.op(OpCode::Div, {c.constant(-0.5f), c.op(OpCode::Mul, {rho, rho})});
    const Value e2 = c.op(OpCode::Exp, {c.op(OpCode::Mul, {c.op(OpCode::Mul, {d, d}), scale})});
    return c.op(OpCode::Mul, {c.op(OpCode::Mul, {alpha, alpha}), e2});
  }

  // add_diag(A, d): A + d I, d a float or a float[N] (d[i] on row i).
  Value add_diag() {
    const auto args = arguments({{"A", Shape::Matrix}, {"d", Shape::ScalarOrVector}});
    if (!args) return Value{};
    const Value &a = (*args)[0], &d = (*args)[1];
    const uint32_t n = fb.types()[a.type].count;
    if (fb.types().is_array(d.type) && fb.types()[d.type].count != n) {
      fb.error(e.args[1]->loc, fmt::format("argument 2 of 'add_diag' (d) must have the matrix's "
                                           "{} elements, found '{}'",
                                           n, fb.type_name(d.type)));
      return Value{};
    }
    std::vector<uint32_t> identity(size_t{n} * n, 0u);
    for (uint32_t i = 0; i < n; ++i)
      identity[size_t{i} * n + i] = float_bits(1.0f);
    const Value eye = c.constant(a.type, std::move(identity));
    const Value spread = fb.types().is_array(d.type)
                             ? fb.matrix_op(OpCode::Outer, d, filled(d.type, 1.0f), e.loc)
                             : d;
    return c.op(OpCode::Add, {a, c.op(OpCode::Mul, {eye, spread})});
  }

  // log_determinant(L): log |det L| = sum(log(|diag(L)|)) for a lower-triangular L, what Stan's
  // models take it of (a Cholesky factor). Anything above the diagonal that is not 0 faults the
  // lane: a general matrix's determinant needs an LU factorisation, which is not there.
  Value log_determinant() {
    const auto args = arguments({{"A", Shape::Matrix}});
    if (!args) return Value{};
    const Value& a = (*args)[0];
    const uint32_t n = fb.types()[a.type].count;
    if (n > 1) {
      std::vector<uint32_t> on_or_below(size_t{n} * n, 0u);
      for (uint32_t i = 0; i < n; ++i)
        for (uint32_t j = 0; j <= i; ++j)
          on_or_below[size_t{i} * n + j] = 1u;
      const Value lower = c.constant(fb.with_leaf(a.type, Types::kBool), std::move(on_or_below));
      c.check(c.op(OpCode::Or, {lower, c.op(OpCode::Eq, {a, c.constant(0.0f)}, Types::kBool)},
                   Types::kBool),
              "log_determinant: A must be lower triangular (a Cholesky factor; a general "
              "matrix's determinant is not there yet)");
    }
    return c.reduce(OpCode::Sum, c.op(OpCode::Log, {c.op(OpCode::Abs, {diagonal(a)})}));
  }

  // log_determinant_spd(A): log det A of a symmetric positive definite A, twice the log
  // determinant of its Cholesky factor (cholesky_decompose's checks and faults).
  Value log_determinant_spd() {
    const Value l = cholesky();
    if (!l.ok()) return l;
    const Value half = c.reduce(OpCode::Sum, c.op(OpCode::Log, {diagonal(l)}));
    return c.op(OpCode::Mul, {c.constant(2.0f), half});
  }

  // multi_normal_cholesky_lpdf(y | mu, L): y and mu a float[N] each, or rows float[M][N] (the
  // other may be one float[N] for every row); the sum over rows of
  // -0.5 |L \ (y - mu)|^2 - sum(log(diag(L))) - N log(sqrt(2 pi)).
  Value multi_normal_cholesky() {
    const auto args = arguments(
        {{"y", Shape::VectorOrMatrix}, {"mu", Shape::VectorOrMatrix}, {"L", Shape::Matrix}});
    if (!args) return Value{};
    Value y = (*args)[0], mu = (*args)[1];
    const Value& l = (*args)[2];
    check_not_nan(y, "y");
    c.check(c.op(OpCode::Lt, {c.op(OpCode::Abs, {mu}), infinity()}, Types::kBool),
            "multi_normal_cholesky_lpdf: mu must be finite");
    const uint32_t n = fb.types()[l.type].count;
    const bool by_rows = is_matrix(y.type) || is_matrix(mu.type);
    const uint32_t rows = is_matrix(y.type) ? fb.types()[y.type].count
                          : by_rows         ? fb.types()[mu.type].count
                                            : 1;
    if (!rows_agree(y, mu, n, rows)) return Value{};
    if (by_rows && !is_matrix(y.type)) y = repeated(y, rows);
    if (by_rows && !is_matrix(mu.type)) mu = repeated(mu, rows);
    Value diff = c.op(OpCode::Sub, {y, mu});
    if (by_rows) diff = fb.matrix_op(OpCode::Transpose, diff, Value{}, e.loc);
    const Value z = fb.matrix_op(OpCode::TriSolve, l, diff, e.loc);
    const Value squares = fb.op_value(OpCode::Dot, Types::kFloat, {z.var, z.var}, e.loc);
    Value log_det = c.reduce(OpCode::Sum, c.op(OpCode::Log, {diagonal(l)}));
    if (rows > 1) log_det = c.op(OpCode::Mul, {log_det, c.constant(static_cast<float>(rows))});
    const auto constant = static_cast<float>(0.918938533204672742 * n * rows);  // log sqrt(2 pi)
    const Value half = c.op(OpCode::Mul, {c.constant(-0.5f), squares});
    return c.op(OpCode::Sub, {c.op(OpCode::Sub, {half, log_det}), c.constant(constant)});
  }

  // lkj_corr_cholesky_lpdf(L | eta), Stan's: log C(eta, K) + sum over i = 1 .. K - 1 of
  // (K - i - 1 + 2 eta - 2) log L[i][i], with Lewandowski, Kurowicka and Joe's (2009) constant
  // log C = (K - 1) lgamma(eta + (K - 1)/2) - sum over k = 1 .. K - 1 of
  // lgamma(eta + (K - 1 - k)/2), less K (K - 1)/4 log pi (Stan's do_lkj_constant, whose case
  // eta = 1 is this formula's value there).
  Value lkj_corr_cholesky() {
    const auto args = arguments({{"L", Shape::Matrix}, {"eta", Shape::Scalar}});
    if (!args) return Value{};
    const Value &l = (*args)[0], &eta = (*args)[1];
    const uint32_t k = fb.types()[l.type].count;
    if (k < 2) {
      fb.error(e.args[0]->loc,
               "'lkj_corr_cholesky_lpdf' needs K >= 2: a 1 x 1 correlation "
               "matrix is the constant 1");
      return Value{};
    }
    c.check(positive_finite(eta), "lkj_corr_cholesky_lpdf: eta must be finite and > 0");
    std::vector<Value> diagonal_logs;
    std::vector<uint32_t> powers, halves;
    for (uint32_t i = 1; i < k; ++i) {
      diagonal_logs.push_back(c.op(OpCode::Log, {c.word(l, i * (k + 1))}));
      powers.push_back(float_bits(static_cast<float>(k - i - 1)));
      halves.push_back(float_bits(0.5f * static_cast<float>(k - 1 - i)));
    }
    const TypeId row = fb.types().array(Types::kFloat, k - 1);
    const Value shape_power =
        c.op(OpCode::Sub, {c.op(OpCode::Mul, {c.constant(2.0f), eta}), c.constant(2.0f)});
    const Value weights = c.op(OpCode::Add, {c.constant(row, powers), shape_power});
    const Value kernel =
        fb.op_value(OpCode::Dot, Types::kFloat,
                    {weights.var, c.make_array(diagonal_logs, Types::kFloat).var}, e.loc);
    const auto km1 = static_cast<float>(k - 1);
    const Value lead = c.op(
        OpCode::Mul, {c.constant(km1),
                      c.op(OpCode::Lgamma, {c.op(OpCode::Add, {eta, c.constant(0.5f * km1)})})});
    const Value rest = c.reduce(
        OpCode::Sum, c.op(OpCode::Lgamma, {c.op(OpCode::Add, {c.constant(row, halves), eta})}));
    const auto log_pi = static_cast<float>(0.25 * k * (k - 1) * 1.14472988584940017);
    const Value constant = c.op(OpCode::Sub, {c.op(OpCode::Sub, {lead, rest}), c.constant(log_pi)});
    return c.op(OpCode::Add, {constant, kernel});
  }

  struct Param {
    const char* name;
    Shape shape;
  };

  // The arguments, each a float of its shape, or nullopt after an error naming the first that
  // is not.
  std::optional<std::vector<Value>> arguments(const std::vector<Param>& params) {
    if (e.args.size() != params.size()) {
      fb.error(e.loc, fmt::format("'{}' takes {} argument{}, found {}", e.name, params.size(),
                                  params.size() == 1 ? "" : "s", e.args.size()));
      return std::nullopt;
    }
    std::vector<Value> values;
    for (size_t i = 0; i < params.size(); ++i) {
      const Value v = fb.expr(*e.args[i], Types::kFloat);
      if (!v.ok()) return std::nullopt;
      if (!fits(v.type, params[i].shape)) {
        fb.error(e.args[i]->loc,
                 fmt::format("argument {} of '{}' ({}) must be {}, found '{}'", i + 1, e.name,
                             params[i].name, spelling(params[i].shape), fb.type_name(v.type)));
        return std::nullopt;
      }
      values.push_back(v);
    }
    return values;
  }

  // The float dimensions of t (none for a float), or {0} when t is not a float or float array.
  std::vector<uint32_t> dims(TypeId t) {
    std::vector<uint32_t> out;
    while (fb.types().is_array(t)) {
      out.push_back(fb.types()[t].count);
      t = fb.types()[t].elem;
    }
    return t == Types::kFloat ? out : std::vector<uint32_t>{0};
  }

  bool fits(TypeId t, Shape shape) {
    const std::vector<uint32_t> d = dims(t);
    const bool scalar = d.empty(), vector = d.size() == 1 && d[0] > 0;
    const bool matrix = d.size() == 2;
    switch (shape) {
      case Shape::Scalar:
        return scalar;
      case Shape::Vector:
        return vector;
      case Shape::Matrix:
        return matrix && d[0] == d[1];
      case Shape::VectorOrMatrix:
        return vector || matrix;
      case Shape::ScalarOrVector:
        return scalar || vector;
    }
    return false;
  }

  static const char* spelling(Shape shape) {
    switch (shape) {
      case Shape::Scalar:
        return "a 'float'";
      case Shape::Vector:
        return "a float array 'float[N]'";
      case Shape::Matrix:
        return "a square float matrix 'float[N][N]'";
      case Shape::VectorOrMatrix:
        return "a float vector 'float[N]' or matrix 'float[M][N]'";
      case Shape::ScalarOrVector:
        return "a 'float' or a float array 'float[N]'";
    }
    return "";
  }

  bool is_matrix(TypeId t) { return dims(t).size() == 2; }

  // Whether y's and mu's rows have L's N elements and agree in number (an error if not).
  bool rows_agree(const Value& y, const Value& mu, uint32_t n, uint32_t rows) {
    for (const Value* v : {&y, &mu}) {
      if (dims(v->type).back() == n && (!is_matrix(v->type) || fb.types()[v->type].count == rows))
        continue;
      fb.error(e.loc, fmt::format("'multi_normal_cholesky_lpdf' needs y and mu of L's {} "
                                  "elements (a row each, as many rows), found '{}' and '{}'",
                                  n, fb.type_name(y.type), fb.type_name(mu.type)));
      return false;
    }
    return true;
  }

  // A float array of type t holding `value` everywhere.
  Value filled(TypeId t, float value) {
    return c.constant(t, std::vector<uint32_t>(fb.types().words(t), float_bits(value)));
  }

  // float[rows][N] whose every row is the vector v (outer with ones: exact copies).
  Value repeated(const Value& v, uint32_t rows) {
    const Value ones = filled(fb.types().array(Types::kFloat, rows), 1.0f);
    return fb.matrix_op(OpCode::Outer, ones, v, e.loc);
  }

  // The diagonal of a square matrix, a float[N].
  Value diagonal(const Value& m) {
    const uint32_t n = fb.types()[m.type].count;
    std::vector<Value> parts;
    for (uint32_t i = 0; i < n; ++i)
      parts.push_back(c.word(m, i * (n + 1)));
    return c.make_array(parts, Types::kFloat);
  }

  void check_not_nan(const Value& v, const char* name) {
    c.check(c.op(OpCode::Eq, {v, v}, Types::kBool),
            fmt::format("{}: {} must not be NaN", e.name, name));
  }
  // 0 < v < inf, elementwise.
  Value positive_finite(const Value& v) {
    return c.op(OpCode::And,
                {c.op(OpCode::Gt, {v, c.constant(0.0f)}, Types::kBool),
                 c.op(OpCode::Lt, {v, infinity()}, Types::kBool)},
                Types::kBool);
  }
  Value infinity() { return c.constant(std::numeric_limits<float>::infinity()); }

  FunctionBuilder& fb;
  const ast::Expr& e;
  Composer c;
};

std::optional<Value> FunctionBuilder::linear_algebra(const ast::Expr& e) {
  return LinearAlgebraCall{*this, e}.call();
}

}  // namespace ab::frontend
