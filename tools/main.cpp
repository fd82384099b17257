// autobatch: compile, inspect and run .ab programs for many lanes at once.
//   autobatch check FILE
//   autobatch ir FILE [--lowered] [--entry NAME]
//   autobatch run FILE [options]
// Exit codes: 0 success (lane faults included), 1 bad program or input, 2 bad usage.
#include <cstdio>
#include <exception>
#include <new>
#include <string>

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "autobatch/engine.h"
#include "bench/bench.h"
#include "tools/backends.h"
#include "tools/commands.h"

namespace {

using ab::cli::RunCommand;

std::string backend_help() {
  std::string text = "backend to run on:";
  for (const ab::cli::Backend& backend : ab::cli::backends())
    text += fmt::format("\n  {}: {}", backend.name, backend.description);
  return text;
}

std::vector<std::string> backend_names() {
  std::vector<std::string> names;
  for (const ab::cli::Backend& backend : ab::cli::backends())
    names.emplace_back(backend.name);
  return names;
}

void add_run_options(CLI::App& run, RunCommand& command, std::optional<uint32_t>& batch_value) {
  run.add_option("FILE", command.file, "the .ab program")->required();
  run.add_option("--backend", command.backend, backend_help())
      ->capture_default_str()
      ->check(CLI::IsMember(backend_names()));
  run.add_option("--entry", command.entry, "entry function: called once per lane")
      ->capture_default_str();
  run.add_option("--batch", batch_value,
                 "number of lanes (default: the length of the per-lane inputs, else 1)")
      ->check(CLI::Range(1u, 0xffffffffu));
  run.add_option("--input,-i", command.inputs,
                 "NAME=SPEC for entry parameter NAME, repeatable. SPEC: 5 (every lane), 1,2,3 "
                 "(one per lane), range:A:B, randint:A:B (needs --batch), @file.npy, @file.csv")
      ->allow_extra_args(false);
  run.add_option("--uniform,-u", command.uniforms,
                 "NAME=@file.npy or NAME=@file.csv (NAME=VALUE for a scalar), repeatable; every "
                 "uniform must be bound")
      ->allow_extra_args(false);
  run.add_option("--seed", command.options.seed,
                 "seed of the per-lane random streams and of randint: inputs")
      ->capture_default_str();
  run.add_option("--stack-depth", command.options.stack_depth,
                 "max call frames per lane (deeper calls fault with stack_overflow)")
      ->capture_default_str()
      ->check(CLI::Range(1u, 0xffffffffu));
  run.add_option("--max-steps", command.options.max_steps,
                 "max blocks one lane may run before it faults with step_budget")
      ->capture_default_str();
  run.add_option("--heuristic", command.heuristic,
                 "block choice of the vm: min-pc (smallest waiting block) or most-lanes")
      ->capture_default_str()
      ->check(CLI::IsMember({"min-pc", "most-lanes"}));
  run.add_option("--format", command.format, "stdout format: table or json")
      ->capture_default_str()
      ->check(CLI::IsMember({"table", "json"}));
  run.add_option("--out", command.out_dir,
                 "directory to write one .npy per output, plus faulted.npy (created if needed)");
  run.add_flag("--trace-steps", command.options.record_trace,
               "record the step trace (block, active lanes) and report it "
               "(vm, or vulkan with --schedule global)");
  const ab::VulkanOptions engine_defaults;
  run.add_option("--schedule", command.device.schedule,
                 fmt::format("vulkan: global (Algorithm 2 for the whole batch, scheduler on the "
                             "GPU) or local (each subgroup/workgroup runs its own PC loop); "
                             "default: {}",
                             ab::schedule_name(engine_defaults.schedule)))
      ->check(CLI::IsMember({"global", "local"}));
  run.add_option("--global-mode", command.device.global_mode,
                 fmt::format("vulkan global: masked (every lane tests its PC) or compacted "
                             "(only the active lanes run); default: {}",
                             ab::global_mode_name(engine_defaults.global_mode)))
      ->check(CLI::IsMember({"masked", "compacted"}));
  run.add_option("--local-scope", command.device.local_scope,
                 fmt::format("vulkan local: subgroup or workgroup PC loops; default: {}",
                             ab::local_scope_name(engine_defaults.local_scope)))
      ->check(CLI::IsMember({"subgroup", "workgroup"}));
  run.add_option("--device", command.device.device,
                 "vulkan: device index from 'autobatch devices' (default: discrete GPU, else "
                 "integrated, else the CPU)");
  run.add_flag("--validation", command.device.validation,
               "vulkan: enable the Khronos validation layer");
}

int run_cli(int argc, char** argv) {
  CLI::App app{
      "autobatch: run a program written for one example on many lanes at once "
      "(program-counter autobatching)"};
  app.name("autobatch");
  app.require_subcommand(1);
  app.footer(
      "Exit codes: 0 success (lane faults are reported, not failures), 1 bad program or input, "
      "2 bad usage.\nExample: autobatch run fib.ab --input n=range:0:10 --format json\n"
      "Each subcommand has its own --help; docs/cli.md has the details.");

  std::string check_file;
  CLI::App* check = app.add_subcommand("check", "compile a program and report its errors");
  check->add_option("FILE", check_file, "the .ab program")->required();

  ab::cli::IrCommand ir;
  CLI::App* ir_app = app.add_subcommand("ir", "print a program's IR");
  ir_app->add_option("FILE", ir.file, "the .ab program")->required();
  ir_app->add_flag("--lowered", ir.lowered, "print the lowered (program-counter) form instead");
  ir_app->add_option("--entry", ir.entry, "entry function of the lowered form")
      ->capture_default_str();

  bool devices_validation = false;
  CLI::App* devices_app = app.add_subcommand("devices", "list the Vulkan devices");
  devices_app->add_flag("--validation", devices_validation,
                        "enable the Khronos validation layer while listing");

  ab::bench::BenchOptions bench_options;
  CLI::App* bench_app = app.add_subcommand(
      "bench", "benchmark every system against the native and VM baselines (docs/performance.md)");
  ab::bench::add_bench_options(*bench_app, bench_options);

  RunCommand run;
  run.backend = std::string(ab::cli::default_backend());
  std::optional<uint32_t> batch;
  CLI::App* run_app =
      app.add_subcommand("run", "run a program's entry function for a batch of lanes");
  add_run_options(*run_app, run, batch);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help
    fmt::print(stderr, "error: {}\nrun 'autobatch --help'\n", e.what());
    return 2;
  }

  if (check->parsed()) return ab::cli::check_command(check_file);
  if (ir_app->parsed()) return ab::cli::ir_command(ir);
  if (devices_app->parsed()) return ab::cli::list_devices_command(devices_validation);
  if (bench_app->parsed()) return ab::bench::run_bench(bench_options);
  run.batch = batch;
  return ab::cli::run_command(run);
}

}  // namespace

int main(int argc, char** argv) {
  // Nothing may crash on bad input: anything unexpected becomes one clear line.
  try {
    return run_cli(argc, argv);
  } catch (const std::bad_alloc&) {
    fmt::print(stderr, "error: out of memory\n");
  } catch (const std::exception& e) {
    fmt::print(stderr, "error: internal error: {}\n", e.what());
  } catch (...) {
    fmt::print(stderr, "error: internal error\n");
  }
  return 1;
}
