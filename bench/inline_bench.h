// `autobatch bench --programs inline`: what inlining a helper called in a row loop buys on the
// vm (passes/inline_calls.h, docs/language.md "Calls are inlined").
//
// The program is a regression's log-likelihood written as people write it: a helper
// `normal_lp` called for each of N = 1,000 data rows in a `for` loop, and twice more for the
// priors (three call sites, more than a few ops: only the loop's call pays). Compiled with
// CompileOptions::inline_calls off (every call a call: the loop runs a call, a return and a
// step per row) and on (the loop's call inlined, the loop then runs as array code), it runs on
// the vm for each lane count (default 16, 64, 256 lanes; one thread unless --threads): scheduler
// steps, lane steps and the median CPU seconds of this process per run, and their ratios. Both
// forms' outputs are checked against the interpreter's (calls kept) on every lane: the same bits.
#pragma once

#include "bench/bench.h"

namespace ab::bench {

// The name --programs takes.
constexpr const char* kInlineBenchProgram = "inline";

// Runs the rows for options.batches; prints the table. Returns 0, or 1 when a form's outputs
// differ from the interpreter's or a run fails.
int run_inline_bench(const BenchOptions& options);

}  // namespace ab::bench
