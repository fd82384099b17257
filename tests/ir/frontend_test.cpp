// The front end: exact diagnostics for bad programs, robustness on garbage, the shape of the IR
// it produces, and end-to-end values through the interpreter.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "cpu/interp.h"
#include "ir/verify.h"
#include "lang/frontend.h"

namespace ab {
namespace {

struct Compiled {
  std::optional<Program> program;
  std::vector<std::string> errors;  // "line:col: message"
};

Compiled compile(const std::string& source, const FrontendOptions& options = {}) {
  Diagnostics diags("test.ab", source);
  Compiled c;
  c.program = compile_source(source, "test.ab", diags, options);
  for (const Diagnostic& d : diags.errors())
    c.errors.push_back(fmt::format("{}:{}: {}", d.loc.line, d.loc.col, d.message));
  return c;
}

Program compile_ok(const std::string& source) {
  Compiled c = compile(source);
  std::string all;
  for (const std::string& e : c.errors)
    all += e + "\n";
  REQUIRE_MESSAGE(c.program.has_value(), all);
  const Status verified = verify(*c.program);
  CHECK_MESSAGE(verified.ok(), verified.error());
  return std::move(*c.program);
}

// The source with its one '$' removed, and "line:col" of the character after the '$'.
std::pair<std::string, std::string> take_marker(const std::string& marked) {
  const size_t at = marked.find('$');
  REQUIRE(at != std::string::npos);
  int line = 1, col = 1;
  for (size_t i = 0; i < at; ++i) {
    if (marked[i] == '\n') {
      ++line;
      col = 1;
    } else {
      ++col;
    }
  }
  std::string source = marked;
  source.erase(at, 1);
  return {source, fmt::format("{}:{}", line, col)};
}

struct ErrorCase {
  const char* source;  // '$' marks where the one error must be reported
  const char* message;
};

const ErrorCase kErrorCases[] = {
    // names
    {"fn main() -> int { return $x; }", "unknown variable 'x'"},
    {"fn main() -> int { return $g(1); }", "unknown function 'g'"},
    {"fn main(a: int) -> int { return $a(1); }", "'a' is not a function"},
    {"fn main(a: $Foo) { }", "unknown type 'Foo'"},
    {"fn main() { let x = 1; let $x = 2; }", "'x' is already declared in this scope"},
    {"fn f() { }\nfn $f() { }", "function 'f' is already declared at 1:4"},
    // a name of two kinds: both named, and why they clash
    {"uniform log_density: float[3];\nfn $log_density(q: float[1]) -> float { return q[0]; }",
     "function 'log_density' has the name of the uniform declared at 1:9 (structs, constants, "
     "uniforms and functions share one name space)"},
    {"struct N { a: int }\nconst $N: int = 2;",
     "constant 'N' has the name of the struct declared at 1:8 (structs, constants, uniforms and "
     "functions share one name space)"},
    {"fn $min(a: int) -> int { return a; }", "cannot redefine builtin function 'min'"},
    {"struct P { a: int }\nfn main(p: P) -> int { return p.$b; }", "struct 'P' has no field 'b'"},
    // calls
    {"fn f(a: int) -> int { return a; }\nfn main() -> int { return $f(1, 2); }",
     "'f' takes 1 argument, found 2"},
    {"fn f(a: int) -> int { return a; }\nfn main() -> int { return f($1.5); }",
     "argument 1 of 'f' must be 'int', found 'float'"},
    {"fn f() { }\nfn main() -> int { let x = $f(); return 1; }",
     "function 'f' returns nothing and cannot be used as a value"},
    {"fn main(x: int) -> float { return sqrt($x); }",
     "'sqrt' needs a 'float' argument, found 'int'"},
    {"fn main(x: float) -> float { return $min(x, x, x); }", "'min' takes 2 arguments, found 3"},
    {"fn main(x: float) -> float { return min($x); }",
     "'min' of one argument needs a numeric array, found 'float'"},
    {"fn main(n: int[3]) -> float { return log_sum_exp($n); }",
     "'log_sum_exp' of one argument needs a float array, found 'int[3]'"},
    {"fn main(x: float) -> float { return mean($x); }",
     "'mean' of one argument needs a float array, found 'float'"},
    // matrix products: the message names both shapes
    {"fn main(a: float[2][3], v: float[2]) -> float[2] { return a $@ v; }",
     "'@' needs the left operand's column count (3) to equal the right one's length (2): "
     "'float[2][3]' @ 'float[2]'"},
    {"fn main(a: float[2][3], b: float[2][3]) -> float[2][3] { return a $@ b; }",
     "'@' needs the left operand's column count (3) to equal the right one's row count (2): "
     "'float[2][3]' @ 'float[2][3]'"},
    {"fn main(v: float[4], a: float[3][4]) -> float[4] { return v $@ a; }",
     "'@' needs the left operand's length (4) to equal the right one's row count (3): "
     "'float[4]' @ 'float[3][4]'"},
    {"fn main(u: float[3], v: float[3]) -> float { return u $@ v; }",
     "'@' multiplies a float matrix by a float vector or matrix ('float[M][K] @ float[K]', "
     "'float[M] @ float[M][K]', 'float[M][K] @ float[K][P]'), found 'float[3]' @ 'float[3]': for "
     "two vectors use 'dot'"},
    {"fn main(a: int[2][2], v: int[2]) -> int[2] { return a $@ v; }",
     "'@' multiplies a float matrix by a float vector or matrix ('float[M][K] @ float[K]', "
     "'float[M] @ float[M][K]', 'float[M][K] @ float[K][P]'), found 'int[2][2]' @ 'int[2]'"},
    {"fn main(v: float[3]) -> float[3] { return $transpose(v); }",
     "'transpose' needs a float matrix ('float[M][K]'), found 'float[3]'"},
    {"const C: float = 1.0 $@ 2.0;",
     "'@' multiplies a float matrix by a float vector or matrix ('float[M][K] @ float[K]', "
     "'float[M] @ float[M][K]', 'float[M][K] @ float[K][P]'), found 'float' @ 'float'"},
    // types of operators
    {"fn main(a: int, b: float) -> float { return a $+ b; }", "cannot add 'int' and 'float'"},
    {"fn main(a: int, b: uint) -> bool { return a $== b; }", "cannot compare 'int' and 'uint'"},
    {"fn main(x: float) -> float { return x $<< 1; }", "cannot apply '<<' to 'float' and 'float'"},
    {"fn main(a: int) -> bool { return $a && true; }", "'&&' needs 'bool' operands, found 'int'"},
    {"fn main(b: bool) -> bool { return $-b; }", "cannot negate 'bool'"},
    {"fn main(x: float) { let a = [x, $true]; }",
     "array elements must have the same type, found 'float' and 'bool'"},
    // indexing and literals
    {"fn main(a: int) -> int { return a$[0]; }", "cannot index 'int'"},
    {"fn main() -> int { var a: int[4]; return a[$4]; }", "index 4 out of range for 'int[4]'"},
    {"struct P { a: int, b: int }\nfn main() -> P { return $P { a: 1 }; }",
     "missing field 'b' in 'P' literal"},
    {"struct P { a: int, b: int }\nfn main() -> P { return P { a: 1, $a: 2, b: 3 }; }",
     "field 'a' is given twice"},
    {"fn main() { var a: int[$0]; }", "array length must be positive, found 0"},
    {"fn main() -> int { return $99999999999; }", "integer literal out of range"},
    {"fn main() -> int { return $3000000000; }",
     "integer literal 3000000000 out of range for 'int'"},
    // statements
    {"fn main(a: int) { if $a { } }", "condition must be 'bool', found 'int'"},
    {"fn main(a: int) { while $a + 1 { } }", "condition must be 'bool', found 'int'"},
    {"fn main() { for i in $0.5..2.0 { } }", "range bounds must be 'int' or 'uint', found 'float'"},
    {"fn main() { $break; }", "'break' outside of a loop"},
    {"fn main() { $continue; }", "'continue' outside of a loop"},
    {"fn main() -> int { return $1.5; }", "function 'main' returns 'int', found 'float'"},
    {"fn main() -> int { $return; }", "'return' needs a value: function 'main' returns 'int'"},
    {"fn main() { return $1; }", "function 'main' returns nothing, but 'return' has a value"},
    {"fn main(a: int) -> int {\n  if a > 0 { return 1; }\n$}",
     "function 'main' can reach its end without returning a value"},
    {"fn main(a: int) { $a + 1; }", "only calls can be used as statements"},
    {"fn main() { var x = 1; x = $1.5; }", "cannot assign 'float' to 'int'"},
    {"fn main() { let x: int = $true; }", "expected 'int', found 'bool'"},
    // read-only places
    {"fn main() { let x = 1; $x = 2; }", "cannot assign to 'x': it is declared with 'let'"},
    {"fn main() { for i in 0..3 { $i += 1; } }", "cannot assign to loop variable 'i'"},
    {"uniform u: int[4];\nfn main() { $u[0] = 1; }",
     "cannot assign to uniform 'u': uniforms are read-only"},
    {"const C: int = 1;\nfn main() { $C = 2; }", "cannot assign to constant 'C'"},
    // top-level declarations
    {"struct A { x: int, next: $A }", "struct 'A' contains itself"},
    {"struct A { b: B }\nstruct B { a: $A }", "struct 'A' contains itself through 'B'"},
    {"const Z: int = 1 $/ 0;", "division by zero in constant expression"},
    {"const A: int = B + 1;\nconst B: int = $A;", "constant 'A' depends on itself"},
    // syntax
    {"fn main() -> int { let x = 1 $return x; }",
     "expected ';' after the declaration, found 'return'"},
    {"fn main() { let x = 1 $}", "expected ';' after the declaration, found '}'"},
    {"fn main() -> int { return 1; } $}",
     "expected 'fn', 'struct', 'const' or 'uniform', found '}'"},
    {"fn main(a: bool) { if a { } else $return; }", "expected '{', found 'return'"},
    {"fn main(a: int) -> bool { return 1 < a $< 3; }",
     "comparison operators cannot be chained; use parentheses"},
    {"fn main() { var x$; }", "'var x' needs a type or an initial value"},
    {"fn main() { } $/* never closed", "unterminated comment"},
    {"fn main() { $# }", "unexpected character '#'"},
    {"fn main() -> int { return $12abc; }", "invalid suffix 'abc' on number"},
    {"fn main() -> float { return $1e999; }", "float literal out of range"},
    {"fn main() -> float { return $1.e5; }",
     "a float literal needs a digit after the '.': write '1.0e5'"},
    {"fn main() -> float { return 2.0 * $10.E-3; }",
     "a float literal needs a digit after the '.': write '10.0E-3'"},
    {"fn main() { let caf$\xC3\xA9 = 1; }",
     "non-ASCII character '\xC3\xA9' (U+00E9): identifiers are ASCII letters, digits and '_'"},
    {"fn main() { let $\xE2\x88\x91 = 1; }",
     "non-ASCII character '\xE2\x88\x91' (U+2211): identifiers are ASCII letters, digits and '_'"},
    {"fn main() { $\xff }", "unexpected byte 0xff"},
    // Only a minus directly before it makes 2147483648 an int; a parenthesized one is a literal
    // of its own, out of range like any other.
    {"fn main() -> int { return -($2147483648); }",
     "integer literal 2147483648 out of range for 'int'"},
    {"const C: int = -($2147483648);\nfn main() -> int { return C; }",
     "integer literal 2147483648 out of range for 'int'"},
    {"fn main(a: int) -> int { return a - -($2147483648); }",
     "integer literal 2147483648 out of range for 'int'"},
    // bounds: struct fields of floats only, constants, lower before upper and below it
    {"fn main(x: float$<lower=0>) -> float { return x; }",
     "bounds ('<lower=..., upper=...>') belong on a struct field's float type, the sampler's "
     "parameters (docs/nuts.md)"},
    {"struct P { n: int$<lower=0> }\nfn main(p: P) -> int { return p.n; }",
     "bounds are for floats; 'int' is not a float"},
    // dependent bounds: the fields declared before, a float (issue 45)
    {"struct P { a: float<upper=$b>, b: float }\nfn main(p: P) -> float { return p.a; }",
     "the bound of 'a' uses 'b', declared after it: a bound may use the fields declared before "
     "it, which are constrained first"},
    {"struct P { a: float<lower=0, upper=2.0 * $a> }\nfn main(p: P) -> float { return p.a; }",
     "the bound of 'a' uses 'a', the field itself: a bound may use the fields declared before "
     "it, which are constrained first"},
    {"struct P { a: float, b: float<lower=$int(a)> }\nfn main(p: P) -> float { return p.a; }",
     "the lower bound of 'b' must be a float, found 'int'"},
    {"struct P { a: float, b: float<lower=a + $c> }\nfn main(p: P) -> float { return p.a; }",
     "unknown variable 'c'"},
    // constrained vector types: struct fields only, with a length and no bounds
    {"fn main(x: $simplex[3]) -> float { return x[0]; }",
     "'simplex' is a constrained parameter type: it belongs on a field of the struct of "
     "parameters (docs/nuts.md); elsewhere use float[..]"},
    {"struct P { s: $ordered }\nfn main(p: P) -> float { return 0.0; }",
     "'ordered' needs a length: ordered[K]"},
    {"struct P { s: $positive_ordered<lower=0>[3] }\nfn main(p: P) -> float { return 0.0; }",
     "'positive_ordered' takes no bounds: the type is its own constraint"},
    {"struct P { s: $simplex[2][1] }\nfn main(p: P) -> float { return 0.0; }",
     "a simplex needs at least 2 elements: simplex[1] is the constant 1"},
    {"struct P { x: float<$low=0> }\nfn main(p: P) -> float { return p.x; }",
     "expected 'lower' or 'upper', found 'low'"},
    {"struct P { x: float<upper=1, $lower=0> }\nfn main(p: P) -> float { return p.x; }",
     "'lower' goes before 'upper'"},
    {"struct P { x: float$<lower=2, upper=1> }\nfn main(p: P) -> float { return p.x; }",
     "the lower bound 2 is not below the upper bound 1"},
    {"struct P { x: float<lower=0 $}\nfn main(p: P) -> float { return p.x; }",
     "expected '>' to close the bounds, found '}'"},
};

TEST_CASE("frontend: each bad program reports its one error at the exact place") {
  int checked = 0;
  for (const ErrorCase& c : kErrorCases) {
    const auto [source, where] = take_marker(c.source);
    CAPTURE(source);
    const Compiled result = compile(source);
    CHECK_FALSE(result.program.has_value());
    REQUIRE(result.errors.size() == 1);
    CHECK(result.errors[0] == fmt::format("{}: {}", where, c.message));
    ++checked;
  }
  CHECK(checked >= 50);
}

TEST_CASE("frontend: several errors in one file are all reported") {
  const std::string type_errors =
      "fn f(a: int) -> int {\n"
      "  let b = a + 1.0;\n"  // 2:13 cannot add
      "  return c;\n"         // 3:10 unknown variable
      "}\n"
      "fn main() -> bool {\n"
      "  while 1 { break; }\n"   // 6:9 condition
      "  return f(true) > 0;\n"  // 7:12 argument
      "}\n";
  const Compiled t = compile(type_errors);
  CHECK_FALSE(t.program.has_value());
  CHECK(t.errors == std::vector<std::string>{
                        "2:13: cannot add 'int' and 'float'",
                        "3:10: unknown variable 'c'",
                        "6:9: condition must be 'bool', found 'int'",
                        "7:12: argument 1 of 'f' must be 'int', found 'bool'",
                    });

  const std::string syntax_errors =
      "fn f() -> int { let = 3; return 1; }\n"  // 1:21 expected a variable name
      "fn g() { var x: int = ; }\n"             // 2:23 expected an expression
      "fn h() -> int { return 1 }\n";           // 3:26 expected ';'
  const Compiled s = compile(syntax_errors);
  CHECK(s.errors == std::vector<std::string>{
                        "1:21: expected a variable name, found '='",
                        "2:23: expected an expression, found ';'",
                        "3:26: expected ';' after the return statement, found '}'",
                    });
}

TEST_CASE("frontend: the constant-expression and uniform errors name the culprit") {
  const Compiled c = compile("uniform table: float[4];\nconst M: float = table[0];\n");
  REQUIRE(c.errors.size() == 1);
  CHECK(c.errors[0] == "2:18: not a constant expression");
  const Compiled u = compile("uniform t: int;\nconst M: int = t + 1;\n");
  REQUIRE(u.errors.size() == 1);
  CHECK(u.errors[0] == "2:16: uniform 't' cannot be used in a constant expression");
}

// Stan's sizes read from the data (`int N;` in its data block): the program is compiled for the
// value given; a value missing or of the wrong kind is one error at the initializer.
TEST_CASE(
    "frontend: a constant read from the data takes the value given, or says what is missing") {
  const std::string source =
      "const N: int = data;\nconst H: float = data;\nuniform y: float[N];\n"
      "fn main() -> float { return float(len(y)) + H; }\n";
  FrontendOptions options;
  options.data_constants = {{"N", 5}, {"H", 0.5}, {"other", 1.5}};
  const Compiled c = compile(source, options);
  REQUIRE(c.errors.empty());
  REQUIRE(c.program.has_value());
  CHECK(c.program->types.to_string(c.program->uniforms.at(0).type) == "float[5]");
  const RunResult r = run_interp(*c.program, c.program->find_function("main"),
                                 Batch{1, {}, {std::vector<uint32_t>(5, 0)}}, RunOptions{});
  CHECK(bits_float(r.outputs.at(0)) == 5.5f);

  options.data_constants = {{"H", 0.5}};
  const Compiled missing = compile(source, options);
  REQUIRE(missing.errors.size() == 1);
  CHECK(missing.errors[0] ==
        "1:16: constant 'N' is read from the data, which hold no 'N': give the data (--data "
        "FILE.json) with \"N\" in them");
  options.data_constants = {{"N", 2.5}, {"H", 0.5}};
  const Compiled fraction = compile(source, options);
  REQUIRE(fraction.errors.size() == 1);
  CHECK(fraction.errors[0] ==
        "1:16: constant 'N' is read from the data, whose 'N' is 2.5: not an int");
  options.data_constants = {{"N", 0}, {"H", 0.5}};
  CHECK(compile(source, options).errors.size() == 1);  // an array of no elements
}

TEST_CASE("frontend: nesting too deep is an error, not a stack overflow") {
  for (const std::string& source : {
           "fn main() -> int { return " + std::string(5000, '(') + "1" + std::string(5000, ')') +
               "; }",
           "fn main() -> int { return " + std::string(100000, '-') + "1; }",
           "fn main() { " + std::string(3000, '{') + std::string(3000, '}') + " }",
       }) {
    const Compiled c = compile(source);
    CHECK_FALSE(c.program.has_value());
    REQUIRE(c.errors.size() == 1);
    CHECK(c.errors[0].starts_with("1:"));
    CHECK(c.errors[0].ends_with("nesting too deep (more than 256 levels)"));
  }
  std::string chain = "fn main(a: int) -> int { return a";
  for (int i = 0; i < 3000; ++i)
    chain += " + a";
  const Compiled c = compile(chain + "; }");
  REQUIRE(c.errors.size() == 1);
  CHECK(c.errors[0].ends_with("expression nested too deeply (more than 256 levels)"));
  // Ifs inside ifs are nesting; a chain of `else if`s is not (see below).
  std::string nested = "fn main(a: int) -> int { ";
  for (int i = 0; i < 300; ++i)
    nested += "if a > 0 { ";
  const Compiled d = compile(nested + std::string(300, '}') + " return 1; }");
  REQUIRE(d.errors.size() == 1);
  CHECK(d.errors[0].ends_with("nesting too deep (more than 256 levels)"));
}

TEST_CASE("frontend: a flat chain of 2000 else-ifs is no nesting: it compiles and runs") {
  std::string ifs = "fn main(a: int) -> int { if a == 0 { return 0; }";
  for (int i = 1; i < 2000; ++i)
    ifs += fmt::format(" else if a == {} {{ return {}; }}", i, 3 * i);
  const Program p = compile_ok(ifs + " else { return -1; } }");
  Batch batch;
  batch.lanes = 5;
  batch.inputs = {{0, 1, 1234, 1999, 2000}};
  const RunResult r = run_interp(p, 0, batch, RunOptions{});
  CHECK(r.errors.empty());
  CHECK(r.outputs == std::vector<uint32_t>{0, 3, 3702, 5997, 0xffffffffu});
}

TEST_CASE("frontend: a UTF-8 byte order mark is skipped; other non-ASCII text is one error each") {
  const std::string bom = "\xEF\xBB\xBF";
  compile_ok(bom + "fn main(n: int) -> int { return n; }\n");
  // Columns on the first line count from after the mark, as an editor shows them.
  const Compiled after_bom = compile(bom + "fn main() -> int { return x; }\n");
  CHECK(after_bom.errors == std::vector<std::string>{"1:27: unknown variable 'x'"});
  // Only at the very start: elsewhere it is a non-ASCII character like any other.
  const Compiled late_bom = compile("fn main() { }\n" + bom);
  REQUIRE_FALSE(late_bom.errors.empty());
  CHECK(late_bom.errors[0] == "2:1: non-ASCII character '" + bom +
                                  "' (U+FEFF): identifiers are ASCII letters, digits and '_'");

  // One error per character, not per byte, and the name still parses: nothing else is reported.
  const Compiled names = compile(
      "fn main() -> int { let na\xC3\xAFve_\xF0\x9F\x98\x80 = 1; return "
      "na\xC3\xAFve_\xF0\x9F\x98\x80; }");
  CHECK(names.errors == std::vector<std::string>{
                            "1:26: non-ASCII character '\xC3\xAF' (U+00EF): identifiers are ASCII "
                            "letters, digits and '_'",
                            "1:31: non-ASCII character '\xF0\x9F\x98\x80' (U+1F600): identifiers "
                            "are ASCII letters, digits and '_'",
                            "1:50: non-ASCII character '\xC3\xAF' (U+00EF): identifiers are ASCII "
                            "letters, digits and '_'",
                            "1:55: non-ASCII character '\xF0\x9F\x98\x80' (U+1F600): identifiers "
                            "are ASCII letters, digits and '_'",
                        });
  // Non-ASCII text in comments is fine.
  compile_ok("// caf\xC3\xA9 \xE2\x88\x91\nfn main() { /* \xF0\x9F\x98\x80 */ }\n");
}

TEST_CASE("frontend: -2147483648 is an int only as a minus directly before the literal") {
  const Program p = compile_ok(
      "const A: int = -2147483648;\n"
      "fn main(a: int) -> int {\n"
      "  let b = - 2147483648;\n"          // a space is still directly before it
      "  let c = -(-2147483648);\n"        // wraps, like any negation of int's minimum
      "  let f: float = -(2147483648);\n"  // in a float context the literal is a float
      "  return A + b + c + int(f) + a;\n"
      "}\n");
  Batch batch;
  batch.lanes = 1;
  batch.inputs = {{5}};
  const RunResult r = run_interp(p, 0, batch, RunOptions{});
  // Four times -2^31 wraps to 0.
  CHECK(r.outputs == std::vector<uint32_t>{5});
}

// ---- never crash ----------------------------------------------------------------------------

struct Lcg {
  uint64_t state;
  uint32_t next() {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<uint32_t>(state >> 33);
  }
};

void check_survives(const std::string& source) {
  Diagnostics diags("fuzz.ab", source);
  std::optional<Program> program;
  CHECK_NOTHROW(program = compile_source(source, "fuzz.ab", diags));
  if (program) {
    CHECK_FALSE(diags.has_errors());
    CHECK(verify(*program).ok());
  } else {
    CHECK(diags.has_errors());
  }
  for (const Diagnostic& d : diags.errors()) {
    CHECK(d.loc.line >= 1);
    CHECK(d.message.find("internal error") == std::string::npos);
  }
  (void)diags.format();
}

const char* const kValidProgram = R"(// a valid program that uses most of the language
struct Pair { a: int, b: float[2] }
const N: int = 4;
const HALF: float = 1.0 / 2.0;
uniform table: float[N];

fn helper(p: Pair, i: int) -> float {
  var s = 0.0;
  for k in 0..len(p.b) { s += p.b[k] * HALF; }
  if i >= 0 && i < N { s = s + table[i]; } else if i < 0 { s = -s; } else { s *= 2; }
  return s;
}

fn count(n: int) -> int {
  var c = 0;
  var m = n;
  while m > 1 {
    if m % 2 == 0 { m /= 2; } else { m = 3 * m + 1; }
    c += 1;
    if c > 100 { break; }
  }
  return c;
}

fn main(x: int, y: float) -> float {
  let p = Pair { b: [y, y * 2.0], a: x };
  var acc: float[2];
  acc = acc + [1.0; 2];
  assert(x < 1000000);
  return helper(p, x) + float(count(x)) + sum(acc) + uniform() * 0.0 + dot(acc, acc) / 4;
}
)";

TEST_CASE("frontend: pseudo-random bytes never crash it") {
  Lcg rng{12345};
  for (int i = 0; i < 3000; ++i) {
    std::string s(rng.next() % 120, '\0');
    for (char& c : s)
      c = static_cast<char>(rng.next() & 0xFF);
    check_survives(s);
  }
}

TEST_CASE("frontend: token soups never crash it") {
  const char* const vocab[] = {
      "fn",     "main", "(",          ")",          "{",        "}",         "[",      "]",
      "->",     "int",  "uint",       "float",      "bool",     "let",       "var",    "=",
      ";",      ":",    ",",          ".",          "..",       "if",        "else",   "while",
      "for",    "in",   "return",     "break",      "continue", "struct",    "const",  "uniform",
      "assert", "x",    "y",          "P",          "1",        "0x1F",      "2u",     "1.5",
      "1e3",    "true", "+",          "-",          "*",        "/",         "%",      "&&",
      "||",     "!",    "~",          "<<",         ">>",       "==",        "<",      ">=",
      "+=",     "<<=",  "len",        "min",        "sqrt",     "uniform()", "normal", "/* c */",
      "// c\n", "\n",   "4294967296", "2147483648",
  };
  const size_t n = sizeof(vocab) / sizeof(vocab[0]);
  Lcg rng{777};
  for (int i = 0; i < 3000; ++i) {
    std::string s;
    const uint32_t len = rng.next() % 60;
    for (uint32_t k = 0; k < len; ++k)
      (s += vocab[rng.next() % n]) += ' ';
    check_survives(s);
  }
  // A well-formed prefix followed by soup exercises recovery inside bodies.
  for (int i = 0; i < 1000; ++i) {
    std::string s = "fn main(x: int, y: float) -> int { ";
    const uint32_t len = rng.next() % 30;
    for (uint32_t k = 0; k < len; ++k)
      (s += vocab[rng.next() % n]) += ' ';
    check_survives(s + " return 0; }");
  }
}

TEST_CASE("frontend: every prefix of a valid program is handled") {
  const std::string full = kValidProgram;
  compile_ok(full);
  for (size_t len = 0; len <= full.size(); ++len)
    check_survives(full.substr(0, len));
  // And with one character replaced by each of a few troublemakers.
  Lcg rng{99};
  for (int i = 0; i < 500; ++i) {
    std::string s = full;
    s[rng.next() % s.size()] = "{}();$\"\0x9"[rng.next() % 10];
    check_survives(s);
  }
}

// ---- the IR ---------------------------------------------------------------------------------

int count_ops(const Function& f, OpCode code) {
  int n = 0;
  for (const Block& b : f.blocks)
    for (const Op& op : b.ops)
      n += op.code == code;
  return n;
}

const Op* find_op(const Function& f, OpCode code) {
  for (const Block& b : f.blocks)
    for (const Op& op : b.ops)
      if (op.code == code) return &op;
  return nullptr;
}

TEST_CASE("frontend: functions, params, result and calls follow the IR conventions") {
  const Program p = compile_ok(
      "fn main(n: int) -> int { return fib(n); }\n"
      "fn fib(n: int) -> int {\n"
      "    if n <= 1 { return 1; }\n"
      "    return fib(n - 1) + fib(n - 2);\n"
      "}\n"
      "fn unused(a: float, b: bool) { }\n");
  CHECK(p.file == "test.ab");
  REQUIRE(p.functions.size() == 3);
  CHECK(p.functions[0].name == "main");
  CHECK(p.functions[1].name == "fib");
  CHECK(p.functions[2].name == "unused");
  const Function& fib = p.functions[1];
  REQUIRE(fib.params.size() == 1);
  CHECK(fib.params[0] == 0);
  CHECK(fib.vars[0].name == "n");
  CHECK(fib.vars[0].type == Types::kInt);
  REQUIRE(fib.result >= 0);
  CHECK(fib.vars[fib.result].name == "result");
  CHECK(fib.result_type() == Types::kInt);
  CHECK(fib.loc.line == 2);
  CHECK(fib.blocks[0].loc.line == 2);
  CHECK(count_ops(fib, OpCode::Call) == 2);
  for (const Block& b : fib.blocks)
    for (const Op& op : b.ops)
      if (op.code == OpCode::Call) CHECK(op.index == 1);
  // main's call goes to fib, which is declared after it.
  const Op* call = find_op(p.functions[0], OpCode::Call);
  REQUIRE(call);
  CHECK(call->index == 1);
  CHECK(call->dst == p.functions[0].result);  // computed straight into result
  const Function& unused = p.functions[2];
  CHECK(unused.result == -1);
  CHECK(unused.vars[0].type == Types::kFloat);
  CHECK(unused.vars[1].type == Types::kBool);
  // Every other variable is a named temporary t0, t1, ...
  int temps = 0;
  for (size_t v = 2; v < fib.vars.size(); ++v) {
    if (fib.vars[v].name == "result") continue;
    CHECK(fib.vars[v].name == fmt::format("t{}", temps++));
  }
  CHECK(temps > 0);
}

TEST_CASE("frontend: && with a call short-circuits, && of plain comparisons does not") {
  const Program with_call = compile_ok(
      "fn f(x: int) -> bool { return x > 2; }\n"
      "fn main(a: bool, x: int) -> bool { return a && f(x); }\n");
  const Function& m = with_call.functions[1];
  CHECK(m.blocks.size() >= 3);
  CHECK(m.blocks[0].term.kind == Terminator::Kind::Branch);
  CHECK(m.blocks[0].term.cond == 0);  // branches on `a` itself
  CHECK(count_ops(m, OpCode::And) == 0);

  const Program plain = compile_ok("fn main(a: bool, x: int) -> bool { return a && x < 3; }");
  const Function& p = plain.functions[0];
  CHECK(p.blocks.size() == 1);
  CHECK(count_ops(p, OpCode::And) == 1);

  // Integer division and dynamic indexing can fault, so they are not evaluated eagerly either;
  // float division cannot.
  for (const char* rhs : {"x / 2 > 1", "arr[x] > 0", "uniform() < 0.5"}) {
    const Program q = compile_ok(
        fmt::format("fn main(a: bool, x: int, arr: int[4]) -> bool {{ return a || {}; }}", rhs));
    CAPTURE(rhs);
    CHECK(q.functions[0].blocks[0].term.kind == Terminator::Kind::Branch);
  }
  const Program fdiv =
      compile_ok("fn main(a: bool, y: float) -> bool { return a || y / 2.0 > 1.0; }");
  CHECK(fdiv.functions[0].blocks.size() == 1);
  CHECK(count_ops(fdiv.functions[0], OpCode::Or) == 1);
}

TEST_CASE("frontend: constants fold with run-time semantics") {
  const Program p = compile_ok(
      "const N: int = 2 * 3 + 1;\n"
      "const WRAP: int = 2147483647 + 1;\n"
      "const SAT: int = int(1e10);\n"
      "const Q: int = -7 / 2;\n"
      "const R: int = -7 % 2;\n"
      "const SH: uint = 1u << 33;\n"
      "const MIN: int = -2147483648;\n"
      "const F: float = 3;\n"
      "fn main() -> int[8] { return [N * 2, WRAP, SAT, Q, R, int(SH), MIN, int(F)]; }\n");
  const Function& m = p.functions[0];
  REQUIRE(m.blocks.size() == 1);
  std::vector<uint32_t> consts;
  for (const Op& op : m.blocks[0].ops) {
    if (op.code != OpCode::Const) continue;
    REQUIRE(op.imm.size() == 1);
    consts.push_back(op.imm[0]);
  }
  CHECK(consts == std::vector<uint32_t>{14, 0x80000000u, 0x7FFFFFFFu, static_cast<uint32_t>(-3),
                                        static_cast<uint32_t>(-1), 2, 0x80000000u, 3});
  CHECK(count_ops(m, OpCode::Make) == 1);
  CHECK(count_ops(m, OpCode::Mul) == 0);  // N * 2 was folded
}

TEST_CASE("frontend: structs are laid out in declaration order, nested types first") {
  const Program p = compile_ok(
      "struct Outer { id: int, inner: Inner[2], flag: bool }\n"
      "struct Inner { x: float, v: float[3] }\n"
      "fn main(o: Outer, i: int) -> float { return o.inner[1].v[i]; }\n");
  const TypeId inner = p.types.find_struct("Inner");
  const TypeId outer = p.types.find_struct("Outer");
  REQUIRE(inner >= 0);
  REQUIRE(outer >= 0);
  CHECK(p.types.words(inner) == 4);
  CHECK(p.types.words(outer) == 1 + 8 + 1);
  const StructDef& o = p.types.struct_def(outer);
  REQUIRE(o.fields.size() == 3);
  CHECK(o.fields[1].offset == 1);
  CHECK(o.fields[2].offset == 9);
  CHECK(p.types.to_string(o.fields[1].type) == "Inner[2]");
  // o.inner[1].v[i]: one Get, the static steps folded to 1 + 4 + 1 = 6, then a dynamic step.
  const Op* get = find_op(p.functions[0], OpCode::Get);
  REQUIRE(get);
  REQUIRE(get->path.size() == 2);
  CHECK_FALSE(get->path[0].dynamic);
  CHECK(get->path[0].offset == 6);
  CHECK(get->path[1].dynamic);
  CHECK(get->path[1].stride == 1);
  CHECK(get->path[1].count == 3);
  CHECK(get->args == std::vector<VarId>{0, 1});
  // T[A][B] is A arrays of T[B].
  const Program q = compile_ok("fn main(a: int[2][3], i: int, j: int) -> int { return a[i][j]; }");
  CHECK(q.types.to_string(q.functions[0].vars[0].type) == "int[2][3]");
  const Op* g = find_op(q.functions[0], OpCode::Get);
  REQUIRE(g);
  REQUIRE(g->path.size() == 2);
  CHECK(g->path[0].count == 2);
  CHECK(g->path[0].stride == 3);
  CHECK(g->path[1].count == 3);
  CHECK(g->path[1].stride == 1);
}

TEST_CASE("frontend: a struct field's bounds are metadata on the field, constants folded") {
  const Program p = compile_ok(
      "const L: float = -1.5;\n"
      "struct P { a: float, b: float<lower=0>, c: float<upper=2 * 3>[2], d: float<lower=L, "
      "upper=1.0> }\n"
      "fn main(p: P) -> float { return p.a + p.b + p.c[1] + p.d; }\n");
  const StructDef& def = p.types.struct_def(p.types.find_struct("P"));
  REQUIRE(def.fields.size() == 4);
  CHECK_FALSE(def.fields[0].bounds.any());
  CHECK(def.fields[1].bounds == FloatBounds{0.0f, std::nullopt});
  CHECK(def.fields[2].bounds == FloatBounds{std::nullopt, 6.0f});
  CHECK(p.types.to_string(def.fields[2].type) == "float[2]");
  CHECK(def.fields[3].bounds == FloatBounds{-1.5f, 1.0f});
  // The layout is the same as without bounds: they take no words.
  CHECK(p.types.words(p.types.find_struct("P")) == 5);
}

TEST_CASE("frontend: a constrained vector type is float[..] with its constraint on the field") {
  const Program p = compile_ok(
      "const K: int = 3;\n"
      "struct P { s: simplex[K], m: simplex[2][4], o: ordered[2], q: positive_ordered[5] }\n"
      "fn main(p: P) -> float { return p.s[2] + p.m[1][3] + p.o[1] + p.q[4]; }\n");
  const StructDef& def = p.types.struct_def(p.types.find_struct("P"));
  REQUIRE(def.fields.size() == 4);
  CHECK(p.types.to_string(def.fields[0].type) == "float[3]");
  CHECK(p.types.to_string(def.fields[1].type) == "float[2][4]");
  CHECK(def.fields[0].bounds.vector == VectorConstraint::Simplex);
  CHECK(def.fields[1].bounds.vector == VectorConstraint::Simplex);
  CHECK(def.fields[2].bounds.vector == VectorConstraint::Ordered);
  CHECK(def.fields[3].bounds.vector == VectorConstraint::PositiveOrdered);
  CHECK(def.fields[3].bounds.any());
  CHECK_FALSE(def.fields[3].bounds.lower);
}

TEST_CASE("frontend: uniforms are read in place, element by element") {
  const Program p = compile_ok(
      "uniform big: float[1000];\nuniform k: int;\n"
      "fn main(i: int) -> float { return big[i] + float(k); }\n");
  REQUIRE(p.uniforms.size() == 2);
  CHECK(p.uniforms[0].name == "big");
  const Function& m = p.functions[0];
  REQUIRE(count_ops(m, OpCode::UniformGet) == 2);
  for (const Block& b : m.blocks)
    for (const Op& op : b.ops) {
      if (op.code != OpCode::UniformGet) continue;
      if (op.index == 0) {
        CHECK(m.vars[op.dst].type == Types::kFloat);  // never the whole array
        REQUIRE(op.path.size() == 1);
        CHECK(op.path[0].dynamic);
        CHECK(op.args == std::vector<VarId>{0});
      } else {
        CHECK(op.index == 1);
        CHECK(op.path.empty());
      }
    }
}

TEST_CASE("frontend: literals take the type their context expects") {
  const Program p = compile_ok(
      "fn main(x: float, u: uint) -> float {\n"
      "  var v: uint = 3;\n"
      "  let w = u * 2 + v;\n"
      "  return x * 2 + 1 + float(w);\n"
      "}\n");
  const Function& m = p.functions[0];
  auto var_type = [&](const std::string& name) {
    for (const Var& v : m.vars)
      if (v.name == name) return p.types.to_string(v.type);
    return std::string("missing");
  };
  CHECK(var_type("v") == "uint");
  CHECK(var_type("w") == "uint");
  // x * 2: the 2 is a float constant.
  bool saw_float_two = false;
  for (const Op& op : m.blocks[0].ops)
    if (op.code == OpCode::Const && op.imm == std::vector<uint32_t>{float_bits(2.0f)})
      saw_float_two = true;
  CHECK(saw_float_two);
}

TEST_CASE("frontend: `[1, 2] * 2.0` is an error, not a silent conversion") {
  const Compiled c = compile("fn main() -> float { let z = [1, 2] * 2.0; return 0.0; }");
  REQUIRE(c.errors.size() == 1);
  CHECK(c.errors[0] == "1:37: cannot multiply 'int[2]' by 'float'");
}

TEST_CASE("frontend: locals, shadowing, zero initialization and unreachable code") {
  const Program p = compile_ok(
      "fn main(x: int) -> int {\n"
      "  var a: float[2];\n"
      "  let y = x;\n"
      "  { let y = 2; a[0] = float(y); }\n"
      "  return y;\n"
      "  let dead = 5;\n"
      "}\n");
  const Function& m = p.functions[0];
  std::vector<std::string> names;
  for (const Var& v : m.vars)
    names.push_back(v.name);
  CHECK(std::count(names.begin(), names.end(), "y") == 1);
  CHECK(std::count(names.begin(), names.end(), "y.1") == 1);
  CHECK(std::count(names.begin(), names.end(), "dead") == 0);  // only in removed code
  REQUIRE(m.blocks.size() == 1);
  const Op& zero = m.blocks[0].ops[0];
  CHECK(zero.code == OpCode::Const);
  CHECK(zero.imm == std::vector<uint32_t>{0, 0});
  const Op* set = find_op(m, OpCode::Set);
  REQUIRE(set);
  CHECK(set->dst == set->args[0]);
  CHECK(m.vars[set->dst].name == "a");
}

TEST_CASE("frontend: loops lower to a body that ends in the loop's test (rotated)") {
  const Program p = compile_ok(
      "fn main(n: int) -> int {\n"
      "  var s = 0;\n"
      "  for i in 0..n { if i == 2 { continue; } s += i; }\n"
      "  while true { if s > 100 { break; } s *= 2; }\n"
      "  return s;\n"
      "}\n");
  const Function& m = p.functions[0];
  int branches = 0, lt = 0;
  for (const Block& b : m.blocks) {
    branches += b.term.kind == Terminator::Kind::Branch;
    for (const Op& op : b.ops)
      lt += op.code == OpCode::Lt;
    if (b.term.kind == Terminator::Kind::Jump) {
      REQUIRE(b.term.target >= 0);
      REQUIRE(b.term.target < static_cast<int>(m.blocks.size()));
    }
  }
  // rotate_loops copies the for test into the preheader and both paths back (the `continue`
  // and the end of the body), and the `if s > 100` of the `while true` into its entry and the end
  // of its body; `while true` itself does not branch.
  CHECK(lt == 3);
  CHECK(branches == 6);  // 3 for tests, `if i == 2`, 2 `if s > 100`
  // The loop variable and the hidden bound both exist; i is named after the source.
  bool has_i = false;
  for (const Var& v : m.vars)
    has_i = has_i || v.name == "i";
  CHECK(has_i);
}

// ---- end to end -----------------------------------------------------------------------------

RunResult run(const Program& p, std::vector<std::vector<uint32_t>> inputs, uint32_t lanes,
              UniformData uniforms = {}) {
  Batch batch;
  batch.lanes = lanes;
  batch.inputs = std::move(inputs);
  batch.uniforms = std::move(uniforms);
  const int entry = p.find_function("main");
  REQUIRE(entry >= 0);
  REQUIRE(check_batch(p, entry, batch).ok());
  return run_interp(p, entry, batch, RunOptions{});
}

TEST_CASE("frontend: compiled programs compute the right values") {
  const Program fib = compile_ok(
      "fn fib(n: int) -> int { if n <= 1 { return 1; } return fib(n - 1) + fib(n - 2); }\n"
      "fn main(n: int) -> int { return fib(n); }\n");
  const RunResult r = run(fib, {{0, 1, 2, 5, 10}}, 5);
  CHECK(r.outputs == std::vector<uint32_t>{1, 1, 2, 8, 89});

  // Short-circuit: the division never runs for b == 0, so no lane faults.
  const Program sc =
      compile_ok("fn main(a: int, b: int) -> bool { return b != 0 && a / b > 1; }\n");
  const RunResult s = run(sc, {{10, 10, 1}, {0, 3, 1}}, 3);
  CHECK(s.errors.empty());
  CHECK(s.outputs == std::vector<uint32_t>{0, 1, 0});

  // Structs, arrays, loops, compound assignment and wrapping uint arithmetic.
  const Program mix = compile_ok(
      "struct Acc { total: uint, seen: int[4] }\n"
      "fn step(a: Acc, i: int) -> Acc { var b = a; b.total *= 3u; b.total += uint(i); "
      "b.seen[i % 4] += 1; return b; }\n"
      "fn main(n: int) -> uint {\n"
      "  var acc = Acc { seen: [0; 4], total: 4294967295 };\n"
      "  for i in 0..n { if i == 5 { continue; } if i > 20 { break; } acc = step(acc, i); }\n"
      "  return acc.total + uint(acc.seen[1]);\n"
      "}\n");
  // Reference computed directly with the same wrapping rules.
  std::vector<uint32_t> expected;
  for (uint32_t n : {0u, 3u, 8u, 30u}) {
    uint32_t total = 4294967295u;
    int seen1 = 0;
    for (uint32_t i = 0; i < n; ++i) {
      if (i == 5) continue;
      if (i > 20) break;
      total = total * 3u + i;
      if (i % 4 == 1) ++seen1;
    }
    expected.push_back(total + static_cast<uint32_t>(seen1));
  }
  const RunResult m = run(mix, {{0, 3, 8, 30}}, 4);
  CHECK(m.errors.empty());
  CHECK(m.outputs == expected);

  // Uniform tables and float elementwise arithmetic.
  const Program u = compile_ok(
      "uniform table: float[3];\n"
      "fn main(i: int) -> float { let v = [table[0], table[1], table[2]] * 2.0; "
      "return v[i] + sum(v) + max(table[i], 1.5); }\n");
  const UniformData data = {{float_bits(1.0f), float_bits(2.0f), float_bits(4.0f)}};
  const RunResult t = run(u, {{0, 2, 3}}, 3, data);
  REQUIRE(t.outputs.size() == 3);
  CHECK(bits_float(t.outputs[0]) == 2.0f + 14.0f + 1.5f);
  CHECK(bits_float(t.outputs[1]) == 8.0f + 14.0f + 4.0f);
  REQUIRE(t.errors.size() == 1);  // i = 3 is out of range: a run-time fault, not a crash
  CHECK(t.errors[0].lane == 2);
  CHECK(t.errors[0].code == Fault::IndexOutOfRange);
}

}  // namespace
}  // namespace ab
