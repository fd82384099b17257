// Reverse-mode automatic differentiation as a pass on the Figure 2 IR (docs/language.md,
// "Gradients").
//
// For `value_and_grad(f, x, ...)` the front end asks for a derived function of f; this pass
// builds it as an ordinary Function, which is then lowered, batched and compiled like any other
// code on every backend. The derived function has f's parameters and returns
// `value_and_grad<T> { value: float, grad: T }`, T the first parameter's type: the gradient with
// respect to the first parameter, the others held fixed.
//
// The derived function is f's own blocks (the forward sweep) followed by their reverse (the
// reverse sweep), which runs f's blocks backwards in the order they ran and each block's ops in
// reverse, accumulating adjoints (one adjoint variable per float-carrying variable of f that
// depends on x). What the reverse sweep needs it finds in f's variables, restored as it goes:
// - a variable that is written again after an adjoint needs its old value is saved before the
//   write, and restored when the reverse sweep passes the write: in a plain variable when the
//   write runs at most once, on a tape (a Push before the write, a Pop after its adjoint: the
//   per-variable stacks the lowering already batches) when it sits in a loop; an integer `+=` of
//   a constant (a loop counter) is undone by subtracting instead;
// - a uniform read (a data row) or a constant is read again rather than saved;
// - which way control came into a block with several predecessors is a counter for a loop
//   header (iterations, saved per loop entry), a variable set on each incoming edge otherwise
//   (on a tape inside a loop).
// A call of a user function g is differentiated through g's derived vector-Jacobian product
// `g.vjp(params..., seed) -> { adjoint of each float-carrying param }`, which recomputes g's
// forward sweep and runs its reverse; recursion is therefore supported.
//
// Integers, comparisons, bools, floor/ceil and conversions carry no derivative. Random draws
// (`uniform()`, `normal()`), `emit` and `trigamma` (whose derivative is not defined here) in f
// or in anything it calls are compile errors at their line.
//
// Requires: a well-formed Figure 2 program (the front end's), every requested function's result
// a float. Produces: program.functions[first + k] for request k, then any vjp functions.
#pragma once

#include <vector>

#include "ir/diagnostics.h"
#include "ir/ir.h"

namespace ab {

struct DerivativeRequest {
  int function = -1;  // f
  SourceLoc loc;      // the first value_and_grad/grad that asked for it
};

// The struct a derived function returns for a first parameter of type `x`:
// `value_and_grad<x> { value: float, grad: x }`, made once per type.
TypeId value_and_grad_type(Types& types, TypeId x);

// Appends the derived functions of `requests` (request k at index first + k; program.functions
// must have exactly `first` functions) and the vjp functions they need. Reports what cannot be
// differentiated to `diags` at its source line and returns false.
bool differentiate(Program& program, int first, const std::vector<DerivativeRequest>& requests,
                   Diagnostics& diags);

}  // namespace ab
