// autobatch: compile, inspect and run .ab programs for many lanes at once.
//   autobatch check FILE
//   autobatch ir FILE [--lowered] [--entry NAME]
//   autobatch devices
//   autobatch bench [options]                               (docs/performance.md)
//   autobatch run FILE [options] [--trace out.abtrace]
//   autobatch sample MODEL.ab [options]                     (batched NUTS, docs/nuts.md)
//   autobatch debug FILE.ab [run options] | TRACE.abtrace   (the visual debugger)
// Exit codes: 0 success (lane faults included), 1 bad program or input, 2 bad usage.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <limits>
#include <new>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "autobatch/engine.h"
#include "autobatch/user_input.h"
#include "bench/bench.h"
#include "bench/option_checks.h"
#include "tools/backends.h"
#include "tools/commands.h"
#include "tools/mpi_ranks.h"
#include "tools/sample/nuts_bench.h"
#include "tools/sample/sample_command.h"

namespace {

using ab::cli::non_empty_path;
using ab::cli::RunCommand;
using ab::cli::whole_number_in;

// The Vulkan engine counts a lane's steps in 32 bits, so a larger budget could not mean the same
// on every backend.
constexpr uint64_t kMaxStepBudget = UINT32_MAX;

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

// The vm's worker threads: shared by `run`, `debug` and `sample`.
void add_threads_option(CLI::App& app, uint32_t& threads) {
  app.add_option("--threads", threads,
                 "vm: threads that run a big step's lanes side by side (default: one per core; "
                 "more than the cores run as many as the cores); results do not depend on it")
      ->transform(whole_number_in(1, 1024));
}

// FILE and the options that say what to run and on which batch: shared by `run` and `debug`.
constexpr const char* kDataHelp =
    "FILE.json: binds the uniforms it names, by name (CmdStan's JSON data: numbers, nested lists "
    "for arrays and matrices; a number also gives a `const N: int = data;` its value, and keys "
    "naming no uniform, such as sizes, are checked against the shapes and otherwise ignored), "
    "repeatable; --uniform takes precedence";

void add_program_options(CLI::App& app, RunCommand& command, std::optional<uint32_t>& batch_value) {
  app.add_option("--entry", command.entry, "entry function: called once per lane")
      ->capture_default_str();
  app.add_option("--batch", batch_value,
                 "number of lanes (default: the length of the per-lane inputs, else 1)")
      ->transform(whole_number_in(1, UINT32_MAX));
  app.add_option("--input,-i", command.inputs,
                 "NAME=SPEC for entry parameter NAME, repeatable. SPEC: 5 (every lane), 1,2,3 "
                 "(one per lane), range:A:B, randint:A:B (needs --batch), @file.npy, @file.csv")
      ->allow_extra_args(false);
  app.add_option("--uniform,-u", command.uniforms,
                 "NAME=@file.npy or NAME=@file.csv (NAME=VALUE for a scalar), repeatable; every "
                 "uniform must be bound")
      ->allow_extra_args(false);
  app.add_option("--data", command.data_files, kDataHelp)->allow_extra_args(false);
  app.add_option("--seed", command.options.seed,
                 "seed of the per-lane random streams and of randint: inputs")
      ->capture_default_str()
      ->transform(whole_number_in(0, UINT64_MAX));
  app.add_option("--stack-depth", command.options.stack_depth,
                 "max call frames per lane (deeper calls fault with stack_overflow)")
      ->capture_default_str()
      ->transform(whole_number_in(1, UINT32_MAX));
  app.add_option("--max-steps", command.options.max_steps,
                 "max blocks one lane may run before it faults with step_budget")
      ->capture_default_str()
      ->transform(whole_number_in(1, kMaxStepBudget));
  app.add_option("--heuristic", command.heuristic,
                 "block choice of the vm: min-pc (smallest waiting block) or most-lanes")
      ->capture_default_str()
      ->check(CLI::IsMember({"min-pc", "most-lanes"}));
  add_threads_option(app, command.options.threads);
}

// A schedule option (--schedule, --global-mode, --local-scope) read by the engine's parser into
// `given`; its names, for the help and CLI11's check, are the engine's spellings of `values`.
template <class Enum>
CLI::Option* add_schedule_option(CLI::App& app, const char* flag, std::optional<Enum>& given,
                                 std::initializer_list<Enum> values, const char* (*name)(Enum),
                                 ab::Expected<Enum> (*parse)(std::string_view),
                                 const std::string& help) {
  std::vector<std::string> names;
  for (Enum v : values)
    names.emplace_back(name(v));
  return app
      .add_option_function<std::string>(
          flag, [&given, parse](const std::string& text) { given = *parse(text); }, help)
      ->check(CLI::IsMember(names));
}

// The Vulkan engine's options: shared by `run`, `debug` and `sample`; each default is the
// engine's (VulkanOptions).
void add_device_options(CLI::App& app, ab::cli::DeviceOptions& device) {
  using ab::GlobalMode, ab::LocalScope, ab::Schedule;
  ab::VulkanOptions& engine = device.vulkan;
  add_schedule_option(
      app, "--schedule", device.schedule, {Schedule::Global, Schedule::Local}, ab::schedule_name,
      ab::parse_schedule,
      fmt::format("vulkan: global (Algorithm 2 for the whole batch, scheduler on the "
                  "GPU) or local (PC loops per lane, subgroup or workgroup: --local-scope); "
                  "default: {} (run), global with --trace-steps and for debug",
                  ab::schedule_name(engine.schedule)));
  add_schedule_option(app, "--global-mode", device.global_mode,
                      {GlobalMode::Masked, GlobalMode::Compacted}, ab::global_mode_name,
                      ab::parse_global_mode,
                      fmt::format("vulkan global: masked (every lane tests its PC) or compacted "
                                  "(only the active lanes run); default: {}",
                                  ab::global_mode_name(engine.global_mode)));
  add_schedule_option(app, "--local-scope", device.local_scope,
                      {LocalScope::Subgroup, LocalScope::Workgroup, LocalScope::Lane},
                      ab::local_scope_name, ab::parse_local_scope,
                      fmt::format("vulkan local: who runs a PC loop: each subgroup or workgroup "
                                  "(min PC), or each lane (it sweeps the blocks in a fixed order, "
                                  "looping over cycles); default: {} (run), subgroup for debug",
                                  ab::local_scope_name(engine.local_scope)));
  app.add_option("--max-part-cost", engine.max_part_cost,
                 "vulkan: split a program whose estimated code exceeds 4x this into kernels of "
                 "at most this much each, so compile time grows linearly (0: never split)")
      ->capture_default_str();
  app.add_option("--device", engine.context.device_index,
                 "vulkan: device index from 'autobatch devices' (default: discrete GPU, else "
                 "integrated, else the CPU)")
      ->transform(whole_number_in(0, INT32_MAX));
  app.add_option("--compile-threads", engine.compile_threads,
                 "vulkan: host threads that build kernels at once (0: 1 on a CPU device, else one "
                 "per core)")
      ->capture_default_str();
  app.add_flag("--validation", engine.context.validation,
               "vulkan: enable the Khronos validation layer");
}

// --devices, for `run` and `sample` (not `debug`, which follows one device's scheduler).
void add_devices_option(CLI::App& app, ab::cli::DeviceOptions& device) {
  app.add_option("--devices", device.devices,
                 "vulkan: 'all' or device indices from 'autobatch devices' (0,1): the lanes are "
                 "cut into contiguous shards, one per device, each on its own thread and queue; "
                 "results as from one device, bit for bit. A repeated index opens the device "
                 "again as another logical device (for testing)")
      ->transform(non_empty_path("a device list"));
}

void add_run_options(CLI::App& run, RunCommand& command, std::optional<uint32_t>& batch_value) {
  run.add_option("FILE", command.file, "the .ab program")->required();
  run.add_option("--backend", command.backend, backend_help())
      ->capture_default_str()
      ->check(CLI::IsMember(backend_names()));
  add_program_options(run, command, batch_value);
  run.add_option("--format", command.format, "stdout format: table or json")
      ->capture_default_str()
      ->check(CLI::IsMember({"table", "json"}));
  run.add_option("--out", command.out_dir,
                 "directory to write one .npy per output, plus faulted-lanes.npy (created if "
                 "needed)")
      ->transform(non_empty_path("a directory"));
  run.add_flag("--trace-steps", command.options.record_trace,
               "record the step trace (block, active lanes) and report it "
               "(vm, or vulkan with the global schedule, which it then selects by default)");
  run.add_option("--trace", command.trace_out,
                 "after the run, also record it to this .abtrace file for `autobatch debug` "
                 "(recorded on the CPU VM whatever the backend; the run's output is unchanged)")
      ->transform(non_empty_path("a trace file name"));
  add_device_options(run, command.device);
  add_devices_option(run, command.device);
}

// The numbers are only read here (whole_number_in refuses what is no number of the option's
// type); their ranges are the sampler library's one check (sample::check_options), so the CLI,
// Python and an embedding app refuse the same values with the same message. The help shows the
// library's range of `name` (sample::option_range).
CLI::Validator sampler_whole(const char* name, uint64_t type_max = UINT32_MAX) {
  return whole_number_in(0, type_max).description(ab::sample::option_range(name));
}
CLI::Validator sampler_real(const char* name) {
  return ab::cli::validator([](std::string&) -> ab::Status { return ab::Ok{}; },
                            ab::sample::option_range(name));
}

void add_sample_options(CLI::App& app, ab::cli::SampleCommand& c) {
  app.add_option("MODEL", c.model,
                 "the model .ab file: fn log_density(q: float[D]) or (p: Params) (docs/nuts.md)")
      ->required();
  std::vector<std::string> names = backend_names();
  names.insert(names.begin(), "auto");
  app.add_option("--backend", c.backend,
                 "backend to run on:\n  auto: vulkan on a GPU (or when a Vulkan option is "
                 "given), else vm, which outruns Vulkan on a CPU device (lavapipe)" +
                     backend_help().substr(std::string_view("backend to run on:").size()))
      ->capture_default_str()
      ->check(CLI::IsMember(names));
  app.add_option("--chains", c.options.chains, "chains, one per lane")
      ->capture_default_str()
      ->transform(sampler_whole("chains"));
  app.add_option("--draws", c.options.draws, "draws per chain after warm-up")
      ->capture_default_str()
      ->transform(sampler_whole("draws"));
  app.add_option("--warmup", c.options.warmup, "warm-up iterations per chain (not in draws.npy)")
      ->capture_default_str()
      ->transform(sampler_whole("warmup"));
  app.add_option(
         "--leaf-steps", c.options.leaf_steps,
         "leapfrog steps per tree leaf (1 as Stan; the paper used 4, which costs ESS per gradient)")
      ->capture_default_str()
      ->transform(sampler_whole("leaf_steps"));
  app.add_option("--max-depth", c.options.max_depth, "maximum tree depth")
      ->capture_default_str()
      ->transform(sampler_whole("max_depth"));
  app.add_option("--target-accept", c.options.target_accept,
                 "warm-up's target acceptance statistic")
      ->capture_default_str()
      ->check(sampler_real("target_accept"));
  app.add_option("--step-size", c.options.step_size, "the first step size before adaptation")
      ->capture_default_str()
      ->check(sampler_real("step_size"));
  app.add_flag("!--no-step-search", c.options.search_step,
               "start from --step-size as given instead of searching for one (Hoffman & Gelman "
               "Algorithm 4); with --warmup 0 every chain keeps it");
  app.add_option("--step-jitter", c.options.step_jitter,
                 "each transition's step size times a uniform factor in [1 - J, 1 + J] (Stan's "
                 "stepsize_jitter; 0 as Stan's default)")
      ->capture_default_str()
      ->check(sampler_real("step_jitter"));
  app.add_flag("!--no-metric", c.options.adapt_metric,
               "keep the unit metric: adapt only the step size in warm-up");
  app.add_option("--init", c.init_file,
                 "initial points in the model's space: a [chains, D] .npy, or a .json object of "
                 "parameters by name (a list of one per chain) as CmdStan's; a bound that "
                 "depends on earlier parameters is computed from their init values (default: "
                 "uniform in [-2, 2] on the unconstrained scale, up to 100 tries for a finite "
                 "density)")
      ->transform(non_empty_path("an .npy or .json file"));
  app.add_option("--uniform,-u", c.uniforms, "NAME=@file.npy|csv for the model's uniforms")
      ->allow_extra_args(false);
  app.add_option("--data", c.data_files, kDataHelp)->allow_extra_args(false);
  app.add_option("--seed", c.options.seed, "seed of the chains' random streams")
      ->capture_default_str()
      ->transform(whole_number_in(0, UINT64_MAX));
  app.add_option("--out", c.out_dir,
                 "directory for draws.npy, the per-draw statistics and summary.json (default: "
                 ".); written as one set when the run ends, one run at a time")
      ->transform(non_empty_path("a directory"));
  app.add_flag("--csv", c.csv,
               "also write one CmdStan CSV per chain into --out, MODEL-CHAIN.csv (chain from 1), "
               "as cmdstanpy, ArviZ and R's posterior read them");
  app.add_option("--stack-depth", c.options.stack_depth,
                 "call frames and gradient tape entries a chain may hold (default: measured, "
                 "--max-depth + 8 or, when the model's gradient needs more, twice its need plus "
                 "8; a derived gradient's loop that is not a sum takes one per iteration)")
      ->transform(sampler_whole("stack_depth"));
  app.add_option("--max-steps", c.options.max_steps,
                 "most blocks one chain may run; past that it faults with step_budget")
      ->capture_default_str()
      ->transform(sampler_whole("max_steps", UINT64_MAX));
  app.add_option("--format", c.format, "stdout: table or json")
      ->capture_default_str()
      ->check(CLI::IsMember({"table", "json"}));
  add_threads_option(app, c.options.threads);
  add_device_options(app, c.device);
  add_devices_option(app, c.device);
}

void add_debug_options(CLI::App& debug, ab::cli::DebugCommand& command,
                       std::optional<uint32_t>& batch_value) {
  debug.add_option("FILE", command.run.file, "a .ab program, or an .abtrace trace to replay")
      ->required();
  debug
      .add_option("--backend", command.run.backend,
                  "where the live run steps: vm (the batched CPU VM) or vulkan (the Vulkan "
                  "engine, global schedule unless --schedule local, which shows each group's "
                  "state between dispatches)")
      ->capture_default_str()
      ->check(CLI::IsMember({"vm", "vulkan"}));
  add_program_options(debug, command.run, batch_value);
  add_device_options(debug, command.run.device);
  debug
      .add_option("--script", command.script,
                  "run these debugger commands (docs/debugger.md); headless unless a command "
                  "needs the window (screenshot, frames)")
      ->transform(non_empty_path("a script file"));
  debug.add_flag("--window", command.window, "with --script: open the window anyway");
  debug
      .add_option("--checkpoint-interval", command.checkpoint_interval,
                  "steps between the timeline's checkpoints (going back replays at most this "
                  "many steps)")
      ->capture_default_str()
      ->transform(whole_number_in(1, UINT64_MAX));
  debug
      .add_option("--source", command.source,
                  "with a trace: the .ab program it was recorded from (default: the path "
                  "stored in the trace)")
      ->transform(non_empty_path("a program file"));
}

// CLI11 answers both a misspelt subcommand and none at all with "A subcommand is required";
// say which it is, and what the subcommands are.
std::string missing_subcommand_message(CLI::App& app, int argc, char** argv) {
  std::vector<std::string> names;
  for (const CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; }))
    names.push_back(sub->get_name());
  const std::string known = fmt::format("{}", fmt::join(names, ", "));
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg.starts_with("-")) continue;
    return fmt::format("unknown subcommand '{}'; the subcommands are {}", ab::excerpt(arg), known);
  }
  return fmt::format("a subcommand is required: one of {}", known);
}

// `autobatch bench`: the NUTS rows (tools/sample/nuts_bench.h) for nuts_* programs, the sample
// programs' suite (bench/bench.h) for the others. With both, the NUTS rows' JSON goes to
// NAME.nuts.json beside --json NAME.
int bench_command(ab::bench::BenchOptions options) {
  ab::cli::NutsBenchOptions nuts;
  nuts.bench = options;
  nuts.bench.programs.clear();
  std::vector<std::string> others;
  for (const std::string& p : options.programs)
    (ab::cli::is_nuts_bench_program(p) ? nuts.bench.programs : others).push_back(p);
  if (nuts.bench.programs.empty()) return ab::bench::run_bench(options);
  // Chain counts the user named are run however long they take.
  if (!options.batches.empty()) nuts.row_budget_seconds = std::numeric_limits<double>::infinity();
  if (!options.json_path.empty() && !others.empty())
    nuts.bench.json_path =
        std::filesystem::path(options.json_path).replace_extension(".nuts.json").string();
  const int status = ab::cli::run_nuts_bench(nuts);
  if (others.empty() || status == 2) return status;
  options.programs = others;
  return std::max(status, ab::bench::run_bench(options));
}

// Each subcommand's --help ends with its own exit codes and example: CLI11 would otherwise
// repeat the app's footer, whose codes and examples are `run`'s.
std::string footer(std::string_view exit_codes, std::string_view example) {
  return fmt::format("Exit codes: {}\nExample: {}\nDocs: docs/cli.md", exit_codes, example);
}

// Every subcommand's options and its CLI11 subcommand, filled by the parse.
struct Subcommands {
  std::string check_file;
  bool check_explain = false;
  std::vector<std::string> check_data;
  ab::cli::IrCommand ir;
  bool devices_validation = false;
  ab::bench::BenchOptions bench;
  RunCommand run;
  std::optional<uint32_t> batch;
  ab::cli::SampleCommand sample;
  ab::cli::DebugCommand debug;
  std::optional<uint32_t> debug_batch;
  CLI::App *check_app = nullptr, *ir_app = nullptr, *devices_app = nullptr, *bench_app = nullptr,
           *run_app = nullptr, *sample_app = nullptr, *debug_app = nullptr;
};

// check, ir and devices: the program and the machine, nothing run.
void add_inspection_commands(CLI::App& app, Subcommands& c) {
  c.check_app = app.add_subcommand("check", "compile a program and report its errors");
  c.check_app->add_option("FILE", c.check_file, "the .ab program")->required();
  c.check_app->add_flag(
      "--explain", c.check_explain,
      "also list each loop: vectorised (runs as array code) or why not; each transformed "
      "data uniform; then each call: inlined (no step of its own) or why not");
  c.check_app
      ->add_option("--data", c.check_data,
                   "FILE.json: gives each `const N: int = data;` its value, as for run and "
                   "sample (a model's sizes read from the data), and computes the transformed "
                   "data from it, reporting a fault; repeatable")
      ->allow_extra_args(false);
  c.check_app->footer(
      footer("0 the program compiles, 1 it does not (diagnostics on stderr) or cannot be read, "
             "2 bad usage.",
             "autobatch check --explain samples/models/poisson_regression.ab"));

  c.ir_app = app.add_subcommand("ir", "print a program's IR");
  c.ir_app->add_option("FILE", c.ir.file, "the .ab program")->required();
  c.ir_app->add_flag("--lowered", c.ir.lowered, "print the lowered (program-counter) form instead");
  c.ir_app->add_option("--entry", c.ir.entry, "entry function of the lowered form")
      ->capture_default_str();
  c.ir_app->footer(footer("0 success, 1 a bad program or --entry, 2 bad usage.",
                          "autobatch ir samples/fib.ab --lowered"));

  c.devices_app = app.add_subcommand("devices", "list the Vulkan devices");
  c.devices_app->add_flag("--validation", c.devices_validation,
                          "enable the Khronos validation layer while listing");
  c.devices_app->footer(
      footer("0 success, 1 no Vulkan loader or device, 2 bad usage.", "autobatch devices"));
}

// bench, run, sample and debug: the subcommands that run programs.
void add_running_commands(CLI::App& app, Subcommands& c) {
  c.bench_app = app.add_subcommand(
      "bench", "benchmark every system against the native and VM baselines (docs/performance.md)");
  ab::bench::add_bench_options(*c.bench_app, c.bench);
  c.bench_app->footer(footer(
      "0 every row ran and matched the interpreter, 1 a row failed or errored, or a file could "
      "not be written, 2 bad usage.",
      "autobatch bench --quick --programs fib --systems vm,native"));

  c.run.backend = std::string(ab::cli::default_backend());
  c.run_app = app.add_subcommand(
      "run",
      "run a program's entry function for a batch of lanes (--devices or mpirun cut the lanes "
      "over devices or ranks: docs/cli.md, \"Sharding\")");
  add_run_options(*c.run_app, c.run, c.batch);
  c.run_app->footer(footer(
      "0 success (lane faults are reported, not failures), 1 bad program or input, 2 bad usage.",
      "autobatch run samples/fib.ab --input n=range:0:10 --format json"));

  c.sample_app = app.add_subcommand(
      "sample",
      "batched NUTS on a model: one chain per lane, draws streamed to --out (docs/nuts.md); "
      "--devices or mpirun cut the chains over devices or ranks, rank 0 writes the fit");
  add_sample_options(*c.sample_app, c.sample);
  c.sample_app->footer(footer(
      "0 at least one chain finished, 1 every chain faulted or was refused (the previous fit is "
      "kept), 2 refused before the chains start (a bad model, data or option; no file is "
      "touched), 128+N stopped by signal N (130: Ctrl-C).",
      "autobatch sample samples/models/banana.ab --chains 8 --out fit"));

  c.debug.run.backend = "vm";
  c.debug_app = app.add_subcommand(
      "debug",
      "open the visual debugger on a program's batched run (vm by default) or on a trace; "
      "needs a display unless --script runs headless");
  add_debug_options(*c.debug_app, c.debug, c.debug_batch);
  c.debug_app->footer(footer(
      "0 success, 1 a bad program, trace or script, or no display for the window, 2 bad usage.",
      "autobatch debug samples/fib.ab --input n=randint:0:15 --batch 1000"));
}

// The parsed subcommand, run.
int run_subcommand(Subcommands& c) {
  if (c.check_app->parsed())
    return ab::cli::check_command(c.check_file, c.check_explain, c.check_data);
  if (c.ir_app->parsed()) {
    c.ir.entry_given = c.ir_app->count("--entry") > 0;
    return ab::cli::ir_command(c.ir);
  }
  if (c.devices_app->parsed()) return ab::cli::list_devices_command(c.devices_validation);
  if (c.bench_app->parsed()) return bench_command(c.bench);
  if (c.sample_app->parsed()) return ab::cli::sample_command(c.sample);
  if (c.debug_app->parsed()) {
    c.debug.run.batch = c.debug_batch;
    for (const char* name :
         {"--input", "--uniform", "--batch", "--entry", "--seed", "--stack-depth", "--max-steps",
          "--heuristic", "--threads", "--backend", "--schedule", "--global-mode", "--local-scope",
          "--device", "--max-part-cost"})
      c.debug.run_options_given |= c.debug_app->count(name) > 0;
    return ab::cli::debug_command(c.debug);
  }
  c.run.batch = c.batch;
  return ab::cli::run_command(c.run);
}

int run_cli(int argc, char** argv) {
  CLI::App app{
      "autobatch: run a program written for one example on many lanes at once "
      "(program-counter autobatching)"};
  app.name("autobatch");
  app.require_subcommand(1);
  app.footer(
      "Exit codes: 0 success (lane faults are reported, not failures), 1 bad program or input, "
      "2 bad usage ('sample' differs: see its --help).\nExample: autobatch run fib.ab --input "
      "n=range:0:10 --format json\n"
      "         autobatch debug fib.ab --input n=randint:0:15 --batch 1000\n"
      "Each subcommand has its own --help; docs/cli.md has the details.");
  Subcommands commands;
  add_inspection_commands(app, commands);
  add_running_commands(app, commands);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help
    const std::string message =
        app.get_subcommands().empty() ? missing_subcommand_message(app, argc, argv) : e.what();
    fmt::print(stderr, "error: {}\nrun 'autobatch --help'\n", message);
    return 2;
  }
  return run_subcommand(commands);
}

int guarded_main(int argc, char** argv) {
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

}  // namespace

int main(int argc, char** argv) {
  // Under mpirun every rank runs the same command on its block of lanes (tools/mpi_ranks.h).
  ab::cli::start_ranks(&argc, &argv);
  const int code = guarded_main(argc, argv);
  ab::cli::end_ranks();
  return code;
}
