// Pass: inline_calls (Figure 2 -> Figure 2): a call of a small non-recursive function becomes a
// copy of the callee's blocks, so it costs no scheduler step of its own (a call and its return
// are each a step, with pushes and pops of the live variables, in the program-counter form).
//
// A call `dst = g(args...)` in block B is replaced by: B's ops before the call; each parameter's
// fresh copy bound to its argument (`p' = arg`); a zero constant for each of g's other variables
// that g may read before writing it (a frame starts zeroed, so the copy does too, on every
// call); a Jump to the copy of g's entry. The copy's Returns jump to a new continuation block that
// assigns `dst = result'` and holds the ops after the call, with B's terminator. The copied ops
// keep their source locations and g's variables keep their names, so every value, fault (code,
// detail and file:line:col) and random draw (drawn in the same order) is the same bit for bit;
// a fault names the callee (SourceLoc::function). What changes: a lane takes fewer steps
// (`--max-steps` counts the inlined program's steps, LaneError::step is the inlined program's)
// and makes fewer calls (`stack_depth` counts the calls that remain).
//
// Which calls: only where inlining pays, since it changes what a lane counts and copies code.
// Never a recursive callee (on a call cycle: the method's point is batching recursion, which
// stays calls). Otherwise a call is inlined when
// - the callee has a single call site in the source (no code is copied), or
// - the callee is tiny: at most kInlineTinyOps ops and no loop (a copy costs less than the
//   call's two steps and the pushes and pops of its frame), or
// - the call sits in a loop that vectorize_loops then turns into array code (the loop runs as a
//   few whole-array ops instead of a step per iteration) and the callee is at most
//   kInlineMaxOps ops and kInlineMaxBlocks blocks. Which loops those are is found by a trial:
//   a copy of the program with every such call inlined, vectorised; the calls whose loop then
//   ran as array code are inlined in the program, the others stay calls.
// Sizes are counted after the callee's own calls were decided (leaf functions are done first).
// A call copied with its callee stays as it was decided there. Functions that value_and_grad
// derives, and everything they call, keep their calls: differentiate derives a call through its
// callee's vjp and the gradient must not change (their calls into other functions are still
// inlined elsewhere). A call of a function not yet in the program (a derived function
// differentiate appends later) stays a call.
//
// Requires: the front end's program, before vectorize_loops (a loop calling a small function
// then has a straight-line body) and differentiate. Preserves: function, uniform and existing
// variable and block indices (new blocks and variables are appended to the caller).
#pragma once

#include <string>
#include <vector>

#include "ir/ir.h"

namespace ab {

inline constexpr size_t kInlineTinyOps = 8;
inline constexpr size_t kInlineMaxOps = 120;
inline constexpr size_t kInlineMaxBlocks = 24;

// What the pass decided for one call of the source.
struct CallVerdict {
  int caller = -1;  // index in program.functions
  int callee = -1;
  SourceLoc loc;  // the call
  bool inlined = false;
  std::string reason;  // why not, when not
};

// Inlines the qualifying calls of program.functions; `derived` lists the functions value_and_grad
// asks for (DerivativeRequest::function); `loops_vectorise`: vectorize_loops runs next (else no
// call is inlined for its loop's sake). Returns a verdict for every call of the source, ordered
// by caller and source position.
std::vector<CallVerdict> inline_calls(Program& program, const std::vector<int>& derived,
                                      bool loops_vectorise);

}  // namespace ab
