// `autobatch bench --programs matmul`: the vm's matrix products on the logistic regression's
// shapes against OpenBLAS's sgemm in the same run (docs/performance.md, "Matrix products").
//
// For each lane count, two products: `X @ w` (X: a uniform 10,000 x 100, w: each lane's 100:
// Z = X W, 10,000 x 100 times 100 x lanes) and the gradient's `g @ X` (g: each lane's 10,000:
// Xᵀ G, lanes x 10,000 times 10,000 x 100). The vm runs a program that computes the product
// `reps` times for every lane (one vm step each, the product's lanes side by side); its time per
// product is (time of reps products - time of none) / reps, the same program with reps = 0
// giving the run's fixed costs (inputs, frames). OpenBLAS (libopenblas.so.0, loaded at run
// time when present: the engine never depends on it) multiplies the same matrices, laid out
// as the vm lays them out (lanes innermost), on one thread. Both in CPU seconds of this
// process (fairest on a shared machine) and as GFLOP/s (2 * M * K * lanes flops per product),
// their ratio, and the fraction of this core's peak. Every vm row's words are checked against
// the interpreter's on the first lanes.
#pragma once

#include "bench/bench.h"

namespace ab::bench {

// The name --programs takes.
constexpr const char* kProductBenchProgram = "matmul";

// Runs the rows for options.batches (default 64, 256, 1024 lanes) with options.threads vm
// threads (default 1) and OpenBLAS on as many; prints the table. Returns 0, or 1 when a row's
// words differ from the interpreter's or a run fails.
int run_product_bench(const BenchOptions& options);

}  // namespace ab::bench
