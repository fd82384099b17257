// run_bench and its CLI11 options: the `autobatch bench` command.
#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <algorithm>

#include "autobatch/user_input.h"
#include "bench/bench.h"
#include "bench/harness.h"
#include "bench/inline_bench.h"
#include "bench/option_checks.h"
#include "bench/product_bench.h"

namespace ab::bench {
namespace {

// A day: any longer budget would mean "repeat forever" in practice, which is no budget.
constexpr double kMaxRepeatBudgetSeconds = 86400;

}  // namespace

void add_bench_options(CLI::App& app, BenchOptions& options) {
  using cli::non_empty_path;
  using cli::seconds_in;
  using cli::whole_number_in;
  app.add_flag("--quick", options.quick,
               "light inputs only (smaller still) and batches 1, 64, 1024 (about a minute on 2 "
               "cores)");
  app.add_option("--inputs", options.inputs,
                 "input sizes: light (short programs, where fixed costs show), heavy (enough "
                 "work per lane for steady-state throughput; batches 1024,16384, or 1024 with "
                 "--quick, unless --batches is given) or both (default: both; light with --quick)");
  app.add_option(
         "--programs", options.programs,
         "programs to run: fib, ackermann, collatz, tak, nuts_tree (default: all of these); "
         "nuts_logreg, nuts_gaussian: batched NUTS rows, --batches as chains, the models' "
         "data pass a matrix product and their gradient derived; nuts_logreg_loop, "
         "nuts_gaussian_loop: the same targets as scalar loops with the gradient by hand; "
         "nuts_logreg_loop_ad, nuts_gaussian_loop_ad: the loops with the gradient derived "
         "(docs/nuts.md); matmul: the vm's matrix products against OpenBLAS sgemm on the "
         "regression's shapes, --batches as lanes (docs/performance.md); inline: a row loop "
         "calling a helper, its call kept against inlined, --batches as lanes "
         "(docs/language.md)")
      ->delimiter(',');
  app.add_option("--batches", options.batches,
                 "batch sizes for both input sizes (default: light 1,64,1024,16384, heavy "
                 "1024,16384; 131072 too on a GPU)")
      ->delimiter(',')
      ->transform(whole_number_in(1, UINT32_MAX));
  app.add_option("--systems", options.systems,
                 "systems: vm, native, glsl, global-masked, global-compacted, local-subgroup, "
                 "local-workgroup, local-lane (the engine's default), vulkan (the engine's five), "
                 "all (default: all); the NUTS rows also take stan (real Stan through rstan, an "
                 "optional install: docs/nuts.md) and vm-tiles (the vm with loop tiles, "
                 "RunOptions::loop_tiles)")
      ->delimiter(',');
  app.add_option(
         "--repeats", options.repeats,
         "timed runs per row after one warm-up (default: 3 quick, 5 full); the NUTS rows: runs "
         "per row, without warm-up, reported as their medians (default: 1)")
      ->transform(whole_number_in(0, INT32_MAX));
  app.add_option("--repeat-budget", options.repeat_budget_seconds,
                 "stop repeating a row once its timed runs add up to this many seconds "
                 "(default: 1 quick, 4 full; a longer warm-up is the only measurement)")
      ->transform(seconds_in(kMaxRepeatBudgetSeconds));
  app.add_option("--json", options.json_path, "write the report as JSON to this file")
      ->transform(non_empty_path("a JSON file name"));
  app.add_option("--chart", options.chart_path,
                 "draw throughput vs batch size (log-log, gnuplot) into this PNG")
      ->transform(non_empty_path("a PNG file name"));
  app.add_option("--device", options.device,
                 "Vulkan device index as `autobatch devices` lists them (default: best)")
      ->transform(whole_number_in(0, INT32_MAX));
  app.add_option("--threads", options.threads,
                 "the vm's threads in the NUTS rows (default: one per core)")
      ->transform(whole_number_in(1, 1024));
  app.add_option("--transitions", options.transitions,
                 "transitions per chain in the NUTS rows, for every system (Stan's too), so the "
                 "rates measure the steady state rather than the tail where few chains still "
                 "run (default: 2 on nuts_logreg, 10 on nuts_gaussian; --quick: 1 and 10)")
      ->transform(whole_number_in(1, 1000000));
}

int run_bench(const BenchOptions& given) {
  BenchOptions options = given;
  // `matmul` and `inline`: each its own table (product_bench.h, inline_bench.h), before the
  // suite's.
  int products = 0;
  const std::pair<const char*, int (*)(const BenchOptions&)> own_tables[] = {
      {kProductBenchProgram, run_product_bench}, {kInlineBenchProgram, run_inline_bench}};
  for (const auto& [name, run_table] : own_tables)
    if (auto m = std::find(options.programs.begin(), options.programs.end(), name);
        m != options.programs.end()) {
      options.programs.erase(m);
      products = std::max(products, run_table(options));
      if (options.programs.empty()) return products;
    }
  BenchReport report;
  if (auto planned = run_suite(options, report); !planned) {
    fmt::print(stderr, "error: {}\n", planned.error());
    return 2;
  }
  if (options.print_table) fmt::print("{}", format_table(report));
  int rc = report.all_ok() ? 0 : 1;
  if (!options.json_path.empty()) {
    const std::string error = write_whole_file(options.json_path, {to_json(report).dump(2), "\n"});
    if (!error.empty()) {
      fmt::print(stderr, "error: cannot write '{}': {}\n", options.json_path, error);
      rc = 1;
    }
  }
  if (!options.chart_path.empty()) {
    if (auto drawn = write_chart(report, options.chart_path); !drawn) {
      fmt::print(stderr, "error: chart: {}\n", drawn.error());
      rc = 1;
    }
  }
  if (!report.all_ok()) fmt::print(stderr, "error: some rows FAILED or errored (see the table)\n");
  return std::max(rc, products);
}

}  // namespace ab::bench
