// A generator of random, well-typed .ab programs for differential testing (interp vs vm vs GPU).
//
// Each program has several functions with a depth parameter `d` and a guard that returns without
// calling when d reaches 0; every call passes d - 1, so recursion (self and mutual) always ends.
// Loops have small fixed trip counts. Bodies mix int/uint/float/bool arithmetic (floats with
// IEEE special values and transcendentals of any argument), arrays and a
// struct (with computed indices), if/else chains, while and for loops with break and continue,
// calls in expressions and on the right of && and ||, tail calls, random draws and asserts, matrix
// products and reductions of arrays. With
// `faults`, some indices may fall out of range, some divisors may be zero and some asserts may
// fail, so per-lane faults are exercised too.
//
// The entry is `fn main(x: int, y: int) -> Out` where `struct Out { v: int, f: float, u: uint,
// b: bool }`; main's own depth is x & 3, so lanes with different x recurse to different depths.
// The same seed and options always give the same text.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

namespace ab::testing {

struct GenOptions {
  int functions = 4;       // besides main
  int max_params = 3;      // per function, besides the depth parameter
  int max_statements = 6;  // in a function's top-level block (nested blocks get fewer)
  int max_nesting = 2;     // nested if/while/for levels
  int max_expr_depth = 3;
  int calls_per_function = 3;  // static call budget (a call in a loop costs its trip count)
  bool faults = true;          // allow out-of-range indices, zero divisors, failing asserts
  bool random_draws = true;    // uniform() and normal()
  // Float leaves include NaN, +-inf, -0, denormals and huge values, and the transcendental
  // functions get unclamped and huge arguments, so every backend must agree on special values.
  bool float_specials = true;
  // Matrix products (`@`, transpose) of random inner lengths, some past one 64-term block, and
  // the one-array reductions max, min, log_sum_exp and mean.
  bool products = true;
};

std::string generate_program(uint64_t seed, const GenOptions& options = {});

// Programs with many functions, for compile time (docs/performance.md, "Compile time"); the same
// text as scripts/gen_calls.py. A chain: main -> f0 -> f1 -> ... -> f(n-1), each calling the next
// once (no recursion). A ring: f(n-1) calls f0 again, one mutually recursive cycle of n functions;
// each call lowers the argument, so a lane recurses `x` deep (stack depth x + 2) before returning.
// Both take `main(n: int) -> int`.
std::string call_chain_program(int functions);
std::string call_ring_program(int functions);

// A random float function for the automatic differentiation tests: `fn f(x: float[3]) -> float`
// and two helpers, with if/else, for loops (some with trip counts computed from x), while loops,
// calls (also in loops) and the math and special functions, every update squashed through a
// bounded function so values stay moderate (finite differences in float32 stay meaningful).
std::string random_float_function(uint64_t seed);

// An array literal of n elements, each made by `element`: spelled out, `[a, b, c]`, up to four
// elements, and past four one element repeated, `[a; 66]`, so long products stay short to write.
std::string array_literal(int n, const std::function<std::string()>& element);

}  // namespace ab::testing
