// Pass: vectorize_loops (Figure 2 -> Figure 2), issue 43: a loop over data rows runs as array code.
//
// Rewrites a `for i in lo..hi` loop into whole-array ops when every iteration is independent of
// the others apart from reductions (docs/language.md, "Loops that run as array code"):
// - the range is constant (both bounds folded constants, at least one iteration);
// - the body has no break, continue, return, inner loop that stays a loop, call, random draw,
//   assert or emit;
// - an `if` in the body (structured: each arm ends at one join) becomes selects on bool arrays:
//   both arms run for every iteration and each variable an arm sets and the body reads on is
//   select(c, then value, else value) per element; a sum updated in an arm adds -0 where it is
//   not taken (x + -0 is x for every x). An arm may hold no op that can fault (assert, integer
//   division, an index other than i), no max/min update, and each float an arm reads from
//   outside it is masked to 0 where the arm is not taken, so that its derivatives there (0
//   times an infinity the untaken arm made) never reach the arm's inputs;
// - each value the body computes from `i` (a "varying" value) is a scalar, which becomes an array
//   of one element per iteration: `y[i + c]` (y a uniform or a lane's array, c a constant, the
//   rows lo + c .. hi + c inside y) becomes those rows of y, `y` itself or a Get of a static
//   step reaching them (a Get copies its destination's words from where its path ends); an
//   elementwise op becomes the same op on arrays with the loop's invariant scalars broadcast,
//   `i` itself a constant array;
// - an element write `out[i + c] = v` (v a scalar; the only op touching out in the body, outside
//   any `if`) becomes one Set of those rows of out with v's array;
// - a row `X[i]` appears only in `dot(X[i], w)` or `dot(w, X[i])` with w invariant, and becomes
//   the row of `X @ w`, which is `dot` bit for bit (dot is a product's element: ir/ops.h);
// - every value carried from one iteration to the next is a reduction updated at most once on
//   each path through the body: `acc += t`, `acc -= t` (as `acc + (-t)`), `acc = max(acc, t)` or
//   `acc = min(acc, t)` on a scalar. It becomes `sum([acc, t...])` (or max/min of it): the same
//   chain of adds (or of the two-argument rule) from acc, in the loop's order, since `sum` is the
//   chain from its first element (docs/language.md). `log_sum_exp` carried pairwise is not (the
//   array form's rounding differs) and keeps its loop;
// - nothing else the body writes (an array written by element excepted) is read after the loop.
// The rewritten loop is one block (its header's, ending in a jump to the loop's exit); the body
// and latch are dropped. Every value, fault line and random draw is the loop's, bit for bit, on
// every backend; a lane takes fewer steps (the loop's blocks were one step per iteration).
//
// Why before `differentiate`: a converted loop is then derived as array code (the adjoints of
// whole arrays, a product's adjoint a product), with no tape and no per-iteration steps, which
// makes differentiate's preaccumulation unnecessary for it; loops this pass leaves alone are
// preaccumulated (or taped) as before, so the two compose.
//
// Requires: the front end's program (loops as it builds them: a header testing `i < bound`, the
// body's blocks, a latch adding 1 to i). Preserves: everything outside the converted loops; block
// ids of a changed function are renumbered.
#pragma once

#include <string>
#include <vector>

#include "ir/ir.h"

namespace ab {

// What the pass decided for one loop of the source.
struct LoopVerdict {
  int function = -1;  // index in program.functions
  SourceLoc loc;      // the `for` or `while` statement
  bool vectorised = false;
  std::string reason;  // why not, when not: the first reason found
};

// Converts every loop of program.functions that qualifies. Returns a verdict for every loop,
// ordered by function and source position.
std::vector<LoopVerdict> vectorize_loops(Program& program);

}  // namespace ab
