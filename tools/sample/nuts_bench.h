// The NUTS rows of `autobatch bench` (`--programs nuts_logreg,nuts_gaussian`): the paper's
// Figures 6 and 7 measured here (Radul et al. 2020, §4; docs/nuts.md).
//
// Figure 6: gradient evaluations per second, summed over chains, against the number of chains,
// for real Stan (rstan, when installed: bench/stan/), the native C++ NUTS (bench/native_nuts.h,
// one chain at a time per core), the VM and the Vulkan schedules, per wall second and per CPU
// second, on the shipped models with a fixed number of
// transitions and no warm-up (the step size from the sampler's first search). Every row's draws
// are checked: the VM's must equal the native sampler's bit for bit; the Vulkan schedules' must
// equal them within the tolerance `autobatch bench` already uses (a chain that leaves the CPU's
// path is a FAILED row). nuts_logreg and nuts_gaussian are the models written with matrix products
// and their gradient derived (the native models compute the derived operations); the `_loop` rows
// are the same targets as scalar loops with the gradient by hand, and the `_loop_ad` rows those
// loops with the gradient derived (docs/language.md "Gradients"): their draws round differently
// from native's and are not compared; the bench prints their cost per gradient against the
// hand-written loops' (derived / hand). A target's forms share one Stan model, sampled once.
//
// Figure 7: the utilization of the gradient evaluation against the number of chains, over 1 and
// over 10 trajectories per chain, for program-counter batching (the VM's scheduler: the gradients
// evaluated over chains x the runs of the log density's entry block) against local static
// batching (computed from the same per-transition gradient counts: what synchronising on
// trajectory boundaries would reach).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "bench/bench.h"

namespace ab::cli {

struct NutsBenchOptions {
  // `autobatch bench`'s options, of which these rows read: programs (nuts_logreg, nuts_gaussian,
  // their _loop and _loop_ad forms), batches (the chain counts; empty: 1, 4, 16, 64, 256, quick: 1,
  // 16, 64), systems (stan, native, vm, local-lane, local-subgroup, global-compacted, vulkan (the
  // three), all; empty: native and vm: the Vulkan rows only when asked, as lavapipe compiles the
  // sampler for minutes, and stan only when asked, as it needs R and rstan), quick, device,
  // threads (the vm's), transitions (per chain in Figure 6's rows; 0: the model's own) and
  // json_path.
  bench::BenchOptions bench;
  // A system skips a chain count whose row it predicts (from its last row, by chains) to take
  // longer than this, in seconds, and the table says so. `bench` lifts it when --batches names
  // the chain counts: rows asked for are run.
  double row_budget_seconds = 60;
  // Holding models/ and data/; empty: samples/ found from the cwd or the binary.
  std::string samples_dir;

  // Test hook: called with a system's name and the words of the first chains' draws before they
  // are checked, so a test can corrupt one and prove the check catches it. Empty in normal use.
  std::function<void(const std::string& system, std::vector<std::vector<uint32_t>>& draws)>
      tamper_for_test;
};

// True for the names this benchmark runs (nuts_logreg, nuts_gaussian).
bool is_nuts_bench_program(const std::string& name);

// Runs the rows, prints both figures' tables (and writes JSON when asked). Returns 0 when every
// row's draws were right, 1 when one FAILED, 2 on bad options.
int run_nuts_bench(const NutsBenchOptions& options);

}  // namespace ab::cli
