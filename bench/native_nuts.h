// sampler/nuts.ab by hand: the same NUTS (tree building, multinomial proposals, dual
// averaging, windowed diagonal metric) over a C++ model, one chain at a time. Every float operation
// is written in the order nuts.ab states it (the project builds with -ffp-contract=off), with the
// language's exp/log/pow (ir/float_math.h) and products' summation order (autobatch/numerics.h),
// and chain c draws from Philox lane c in the same program order, so on the CPU backends its draws
// equal `autobatch sample`'s bit for bit. It is both that command's oracle and its performance
// baseline (a Stan-like sampler, a chain per core).
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

namespace ab::bench {

// A log density over float[dimension]: returns the value and writes the gradient to `grad`.
struct NutsModel {
  uint32_t dimension = 0;
  std::function<float(const float* q, float* grad)> value_and_grad;
};

// nuts_Settings, with `autobatch sample`'s defaults.
struct NutsSettings {
  uint32_t warmup = 1000, draws = 1000, leaf_steps = 4, max_depth = 10;
  float target_accept = 0.8f, step_size = 1.0f;
  bool adapt_metric = true;
  bool search_step = true;
  float step_jitter = 0.0f;
};

// nuts_Draw: one per draw after warm-up.
struct NutsDraw {
  std::vector<float> q;
  float accept = 0, step_size = 0, energy = 0;
  int32_t depth = 0, grads = 0;
  bool divergent = false;
};

// nuts_Chain plus the chain's draws.
struct NutsChainResult {
  std::vector<NutsDraw> draws;
  float step_size = 0;
  std::vector<float> inv_metric;
  int32_t grads = 0;        // every gradient evaluation, warm-up included (nuts.ab's count)
  int32_t divergences = 0;  // after warm-up
};

// One chain: Philox lane `chain` of `seed`. `init` holds model.dimension floats, or is null for
// nuts.ab's random start (uniform in [-2, 2] per coordinate).
NutsChainResult native_nuts_chain(const NutsModel& model, const NutsSettings& settings,
                                  uint64_t seed, uint32_t chain, const float* init);

struct NutsRunResult {
  std::vector<NutsChainResult> chains;
  uint64_t grads = 0;  // the chains' gradient evaluations together
  double seconds = 0;  // wall time
};

// Chains 0..chains-1, each run whole by one thread; chains are handed out to `threads` threads
// (0: std::thread::hardware_concurrency()). `inits` holds chains x dimension floats, or is null.
NutsRunResult native_nuts_chains(const NutsModel& model, const NutsSettings& settings,
                                 uint64_t seed, uint32_t chains, const float* inits,
                                 uint32_t threads = 0);

// The shipped models (samples/models, tests/data/models), op for op as their .ab source.
NutsModel nuts_banana_model();               // samples/models/banana.ab
NutsModel nuts_gaussian_iid_model();         // tests/data/models/gaussian_iid.ab
NutsModel nuts_gaussian_scaled_model();      // tests/data/models/gaussian_scaled.ab
NutsModel nuts_gaussian_correlated_model();  // tests/data/models/gaussian_correlated.ab
// samples/models/correlated_gaussian.ab, -0.5 * dot(q, precision @ q), with the gradient the
// compiler derives, op for op: `precision` is the uniform, dimension x dimension.
NutsModel nuts_correlated_gaussian_model(std::vector<float> precision, uint32_t dimension);
// samples/models/correlated_gaussian_loop.ab, a row dot product per coordinate, gradient by hand.
NutsModel nuts_correlated_gaussian_loop_model(std::vector<float> precision, uint32_t dimension);
// samples/models/logistic_regression.ab, z = X @ w, with the gradient the compiler derives, op for
// op: X is N x dimension, y has N entries.
NutsModel nuts_logistic_regression_model(std::vector<float> X, std::vector<float> y,
                                         uint32_t dimension);
// samples/models/logistic_regression_loop.ab and tests/data/models/logreg_small.ab, a loop over
// the rows with the gradient by hand: sums run in blocks of `block` rows (which must divide N).
NutsModel nuts_logistic_regression_loop_model(std::vector<float> X, std::vector<float> y,
                                              uint32_t dimension, uint32_t block);

}  // namespace ab::bench
