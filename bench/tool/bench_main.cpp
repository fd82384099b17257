// autobatch_bench: the benchmark suite as a standalone program, with the same options as
// `autobatch bench` (bench/bench.h). Handy when only the bench library is built.
#include <CLI/CLI.hpp>

#include "bench/bench.h"

int main(int argc, char** argv) {
  CLI::App app{"autobatch benchmark suite: every system against the native and VM baselines"};
  ab::bench::BenchOptions options;
  ab::bench::add_bench_options(app, options);
  CLI11_PARSE(app, argc, argv);
  return ab::bench::run_bench(options);
}
