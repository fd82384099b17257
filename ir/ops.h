// The one table of ops. Each op is defined here once — name, operand layout, and (in ops.cpp)
// its CPU semantics and GLSL spelling — and the interpreter, the VM, the IR printer/parser, the
// verifier and the GLSL code generator all read this table.
//
// Elementwise ops apply their scalar rule to every leaf of array operands; an operand may be a
// scalar broadcast against arrays of one shape. Integer arithmetic wraps (two's complement);
// integer division or remainder by zero faults; shift amounts are taken modulo 32; float -> int
// conversions saturate and map NaN to 0. See docs/language.md for the full table.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "autobatch/batch.h"  // Fault
#include "autobatch/expected.h"
#include "autobatch/numerics.h"  // kProductBlock, for_each_product_block: a product's order
#include "ir/types.h"
#include "shaders/ab_layout.h"

namespace ab {

// The opcodes in groups, several to a line: clang-format would put each on a line of its own.
// clang-format off
enum class OpCode : uint8_t {
  // structural
  Const,       // dst = imm words
  Copy,        // dst = a0
  Make,        // dst = concatenation of a0..an (struct fields in order, or array elements)
  Get,         // dst = a0[path], dynamic indices a1..
  Set,         // dst = a0 with [path] = a1, dynamic indices a2..
  UniformGet,  // dst = uniforms[index][path], dynamic indices a0..
  Select,      // dst = a0 ? a1 : a2 (a0 a bool scalar, or bool array picking per element)
  // elementwise unary
  Neg, Not, BitNot, Abs, Sqrt, Exp, Log, Sin, Cos, Tanh,
  Lgamma, Digamma, Trigamma, Log1p, Log1m, Expm1, Log1pExp, Erf, Erfc, InvLogit,  // special functions
  Floor, Ceil, ToInt, ToUInt, ToFloat,
  // elementwise binary
  Add, Sub, Mul, Div, Rem, BitAnd, BitOr, BitXor, Shl, Shr,
  Eq, Ne, Lt, Le, Gt, Ge, And, Or, Min, Max, LogSumExp, Pow,
  // elementwise ternary
  Clamp,
  // reductions over arrays
  Dot, Sum,
  ReduceMax, ReduceMin, ReduceLogSumExp,  // max(v), min(v), log_sum_exp(v) of one array
  // matrix ops (float arrays of one or two dimensions; shapes in MatrixShape)
  MatMul,     // dst = a0 @ a1: matrix-vector, vector-matrix or matrix-matrix product
  Outer,      // dst[m][p] = a0[m] * a1[p] (a matrix product's derivative)
  Transpose,  // dst[k][m] = a0[m][k]
  Cholesky,   // dst = the lower Cholesky factor of a0 (float[N][N]; its lower triangle is read)
  TriSolve,   // dst = L \ a1 by forward substitution, L = a0's lower triangle; a1 float[N] or [N][P]
  TriSolveT,  // dst = L^T \ a1 by back substitution (TriSolve's and Cholesky's derivatives)
  // per-lane random numbers (no operands)
  RandUniform, RandNormal,
  // checks
  Assert,  // faults the lane unless a0
  // output
  Emit,  // appends a0 to the lane's output stream (the first op of its block once lowered)
  // control (Figure 2 only)
  Call,  // dst = functions[index](a0..an); dst = -1 for a function returning nothing
  // stack ops (Figure 4 only): a0 is the variable
  Push,    // save the variable's value on its stack
  Pop,     // restore the variable's value from its stack (and shrink it)
  Update,  // restore the variable's value from the top of its stack, leaving the stack as is
  Count_
};
// clang-format on

enum class OpClass : uint8_t {
  Structural,
  Unary,
  Binary,
  Ternary,
  Reduction,
  Matrix,
  Random,
  Check,
  Output,
  Control,
  Stack
};

// The operand kinds an elementwise or reduction op accepts, and what its result's kind is.
enum class Accepts : uint8_t { None, Any, Numeric, Bool, Integer, Float };
enum class Yields : uint8_t { None, Same, Bool, Int, UInt, Float };

// What a device with a loop limit (lavapipe's) counts for the prelude helper behind an op, on
// float operands: `iterations` when lanes run it, at most, each loop's final test counted as one
// more and a switch as a loop of one pass; `statements` when the code is passed over with no lane
// active, as lavapipe does every branch it predicates (1 per loop statement).
struct LoopCost {
  uint32_t iterations = 0;
  uint32_t statements = 0;
};

// How the language spells a call of the op (lang/builtins.cpp), if it has a name there.
enum class Surface : uint8_t {
  None,         // no builtin of its own (operators, structural ops, or composed by the front end)
  FloatMath,    // f(x): one float, or a float array elementwise
  Numeric,      // f(x): one numeric value, or a numeric array elementwise
  Conversion,   // int(x), uint(x), float(x): any scalar or array of scalars
  Elementwise,  // f(a, b[, c]): matching types, or arrays with scalars of their leaf type
  FloatPair,    // as Elementwise, float only (pow, log_sum_exp)
  ArrayFold,    // max(v), min(v), log_sum_exp(v): one numeric (or float) array
  Random,       // f(): a per-lane draw
  Operator,     // an operator symbol: `a + b`, `-a` (the frontend's operators.cpp types them)
};

// An op's derivative: none (piecewise constant, or not a float function), a rule in
// passes/derivative_rules.cpp, or missing (differentiating it is an error).
enum class Derivative : uint8_t { Zero, Rule, Missing };

// One op's facts, one row each in ops.cpp: adding an op is a row there, its scalar rule
// (ir/scalar_rule.h), its GLSL helper when it has one and its derivative rule
// (passes/derivative_rules.cpp).
struct OpInfo {
  const char* name;  // textual IR spelling, e.g. "add"
  OpClass cls;
  int arity;         // operand count; -1 = variable
  bool has_dst;      // defines a variable
  const char* glsl;  // GLSL spelling over typed scalars {0} {1} {2}; helpers are prelude
                     // functions overloaded per scalar type; null for non-elementwise ops
  Accepts accepts = Accepts::None;  // operand kinds (the source kind for conversions)
  Yields yields = Yields::None;     // the result's kind
  LoopCost cost = {};               // lavapipe's count for the GLSL helper on float operands
  const char* builtin = nullptr;    // the language's function name or operator symbol, if any
  Surface surface = Surface::None;
  Derivative derivative = Derivative::Zero;
};

const OpInfo& op_info(OpCode code);
std::optional<OpCode> op_by_name(std::string_view name);
// The op the language's builtin `name` with `args` arguments stands for, if any.
std::optional<OpCode> op_by_builtin(std::string_view name, size_t args);
// The op the language's operator `symbol` with `arity` operands stands for ("-" and 1: Neg).
std::optional<OpCode> op_by_operator(std::string_view symbol, int arity);
// Whether any op is the language's builtin `name` (whatever its argument count).
bool is_op_builtin(std::string_view name);
// The lavapipe cost of the GLSL helper behind `code` on operands of kind `in`.
LoopCost helper_cost(OpCode code, Scalar in);

// Per-lane faults: `Fault` is public (autobatch/batch.h); its codes are the GPU's (AB_FAULT_* of
// shaders/ab_layout.h, which the generated GLSL uses by name), checked here.
static_assert(static_cast<uint32_t>(Fault::None) == AB_FAULT_NONE &&
                  static_cast<uint32_t>(Fault::StackOverflow) == AB_FAULT_STACK_OVERFLOW &&
                  static_cast<uint32_t>(Fault::DivisionByZero) == AB_FAULT_DIVISION_BY_ZERO &&
                  static_cast<uint32_t>(Fault::IndexOutOfRange) == AB_FAULT_INDEX_OUT_OF_RANGE &&
                  static_cast<uint32_t>(Fault::AssertFailed) == AB_FAULT_ASSERT_FAILED &&
                  static_cast<uint32_t>(Fault::StepBudget) == AB_FAULT_STEP_BUDGET &&
                  static_cast<uint32_t>(Fault::ShardFailed) == AB_FAULT_SHARD_FAILED,
              "autobatch/batch.h's Fault and shaders/ab_layout.h's AB_FAULT_* differ");
static_assert(static_cast<uint32_t>(Fault::ShardFailed) + 1 == AB_FAULT_CODES,
              "a new Fault needs its AB_FAULT_* code in shaders/ab_layout.h");

// The scalar rule of an elementwise or reduction op. `in` is the operands' scalar kind (for
// conversions, the source kind; for Select, the kind of a1/a2); the result's kind follows from it
// (elementwise_result). Operands and result are 32-bit words. Returns false and sets `fault` for
// faulting inputs.
bool eval_scalar(OpCode code, Scalar in, const uint32_t* x, uint32_t& result, Fault& fault);

// Result scalar kind of an elementwise op applied to operands of kind `in`, or nullopt if the
// op does not accept that kind (e.g. Sqrt on int, BitAnd on float).
std::optional<Scalar> elementwise_result(OpCode code, Scalar in);

// A matrix op as one product of an M x K matrix by a K x P matrix, both row-major: a vector on
// the left of `@` is 1 x K, one on the right K x 1. Outer is the product with K = 1 (written
// without a sum) and Transpose reads an M x K operand and writes it K x M (P unused). Cholesky
// reads an N x N matrix (M = K = N, P unused); TriSolve and TriSolveT an N x N factor and an
// N x P right-hand side (P = 1 for a vector), written N x P.
struct MatrixShape {
  uint32_t m = 0, k = 0, p = 0;
};
// The shape of `a @ b`, `outer(a, b)` or `transpose(a)` (b unused) on float arrays, or an error
// saying which shapes disagree.
Expected<MatrixShape> checked_matrix_shape(const Types& types, OpCode code, TypeId a, TypeId b);
// The same for a well-typed op.
MatrixShape matrix_shape(const Types& types, OpCode code, TypeId a, TypeId b);
// The result's dimensions, outermost first (its leaf is float).
std::vector<uint32_t> matrix_result_dims(const Types& types, OpCode code, TypeId a, TypeId b);

// out = a @ b (MatMul) in the language's summation order (kProductBlock and
// for_each_product_block, autobatch/numerics.h), outer(a, b), transpose(a), or the triangular
// ops (ir/linear_algebra.h), over words. `out` must not overlap the operands.
void matrix_words(OpCode code, const MatrixShape& s, const uint32_t* a, const uint32_t* b,
                  uint32_t* out);

// The word a sum's chain of adds starts from: `sum(a)` (Sum) starts at -0, the identity of `+`
// (-0 + x is x for every x, +0 and -0 included), so it is the chain a[0] + a[1] + ... from its
// first element, as a loop `acc += a[i]` from acc = a[0] is, and `sum([acc, t...])` is the loop
// `acc += t[i]` bit for bit (passes/vectorize_loops.h). `dot` starts at +0, as a product's block
// does (a row of `A @ v` is `dot`). 0 for integers.
constexpr uint32_t sum_start(OpCode code, Scalar s) {
  return code == OpCode::Sum && s == Scalar::Float ? 0x80000000u : 0u;
}

// Bit-casting helpers used across backends.
uint32_t float_bits(float f);
float bits_float(uint32_t w);

}  // namespace ab
