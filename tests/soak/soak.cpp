// autobatch_soak: differential soak testing beyond what the test suite has time for. Generates N
// random programs (tests/support/program_gen.h: recursion, loops, tail calls, faults, floats with
// NaN/inf/-0/denormals and transcendentals of any argument), runs each on interp (the oracle),
// vm and every Vulkan schedule, and reports every divergence, saving the program and its inputs
// so it can be replayed with `autobatch run`. Exit status 1 if anything diverged.
//
//   build/tests/autobatch_soak --programs 10000 --first-seed 1 --lanes 64 --out soak-failures
#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <string_view>
#include <utility>

#include "autobatch/engine.h"
#include "autobatch/user_input.h"
#include "cpu/interp.h"
#include "cpu/vm.h"
#include "lang/frontend.h"
#include "passes/lower.h"
#include "support/program_gen.h"
#include "support/result_compare.h"
#include "support/samples.h"

namespace {

using namespace ab;

struct NamedSchedule {
  const char* name;
  VulkanOptions options;
};

std::vector<NamedSchedule> schedules() {
  std::vector<NamedSchedule> all;
  auto add = [&](const char* name, ab::Schedule s, GlobalMode m, LocalScope scope) {
    VulkanOptions o;
    o.schedule = s;
    o.global_mode = m;
    o.local_scope = scope;
    all.push_back({name, o});
  };
  add("global/masked", ab::Schedule::Global, GlobalMode::Masked, LocalScope::Subgroup);
  add("global/compacted", ab::Schedule::Global, GlobalMode::Compacted, LocalScope::Subgroup);
  add("local/subgroup", ab::Schedule::Local, GlobalMode::Compacted, LocalScope::Subgroup);
  add("local/workgroup", ab::Schedule::Local, GlobalMode::Compacted, LocalScope::Workgroup);
  add("local/lane", ab::Schedule::Local, GlobalMode::Compacted, LocalScope::Lane);
  return all;
}

// Inputs x, y per lane: x & 3 is main's recursion depth, so every depth appears.
Batch batch_for(uint64_t seed, uint32_t lanes) {
  Batch batch;
  batch.lanes = lanes;
  batch.inputs.resize(2);
  for (uint32_t lane = 0; lane < lanes; ++lane) {
    const auto x = static_cast<uint32_t>(testing::lane_hash(seed, lane));
    batch.inputs[0].push_back((x & ~3u) | (lane & 3u));
    batch.inputs[1].push_back(static_cast<uint32_t>(testing::lane_hash(seed + 1000, lane) % 201) -
                              100);
  }
  return batch;
}

// Writes the program and a shell line that replays lane inputs with the CLI; "" or why it could
// not (the report printed to stdout still has the divergence).
std::string save_failure(const std::filesystem::path& dir, uint64_t seed, const std::string& source,
                         const Batch& batch, const RunOptions& options, const std::string& report) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return fmt::format("cannot create '{}': {}", dir.string(), ec.message());
  const std::string stem = fmt::format("seed{}", seed);
  std::string xs, ys;
  for (uint32_t lane = 0; lane < batch.lanes; ++lane) {
    xs += fmt::format("{}{}", lane ? "," : "", static_cast<int32_t>(batch.inputs[0][lane]));
    ys += fmt::format("{}{}", lane ? "," : "", static_cast<int32_t>(batch.inputs[1][lane]));
  }
  const std::string replay = fmt::format(
      "{}\nreplay: autobatch run {}.ab --input x={} --input y={} --seed {} --max-steps {} "
      "--stack-depth {}\n",
      report, stem, xs, ys, options.seed, options.max_steps, options.stack_depth);
  for (const auto& [name, text] : {std::pair{stem + ".ab", std::string_view(source)},
                                   std::pair{stem + ".txt", std::string_view(replay)}}) {
    const std::string path = (dir / name).string();
    if (std::string failure = write_whole_file(path, {text}); !failure.empty())
      return fmt::format("cannot write '{}': {}", path, failure);
  }
  return "";
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Differential soak: random programs on interp, vm and every Vulkan schedule"};
  uint64_t programs = 1000, first_seed = 1;
  uint32_t lanes = 64;
  std::string out = "soak-failures";
  bool vulkan = true;
  app.add_option("--programs", programs, "how many generated programs")
      ->check(CLI::Range(1, 10000000));
  app.add_option("--first-seed", first_seed, "seed of the first program");
  app.add_option("--lanes", lanes, "lanes per run")->check(CLI::Range(1, 1 << 20));
  app.add_option("--out", out, "where diverging programs are saved");
  app.add_flag("!--no-vulkan", vulkan, "compare interp and vm only");
  CLI11_PARSE(app, argc, argv);
  // Line by line, so that a soak stopped by a timeout or a crash keeps every line it printed.
  std::setvbuf(stdout, nullptr, _IOLBF, 0);

  std::shared_ptr<VulkanContext> context;
  if (vulkan) {
    auto created = VulkanContext::create();
    if (!created) {
      fmt::print(stderr, "autobatch_soak: {} (use --no-vulkan for the CPU backends only)\n",
                 created.error());
      return 2;
    }
    context = *created;
  }
  const auto start = std::chrono::steady_clock::now();
  uint64_t diverged = 0, runs = 0, faults = 0;
  for (uint64_t seed = first_seed; seed < first_seed + programs; ++seed) {
    const std::string source = testing::generate_program(seed);
    Diagnostics diags("generated.ab", source);
    std::optional<Program> program = compile_source(source, "generated.ab", diags);
    RunOptions options;
    options.seed = seed;
    options.max_steps = 20000;
    options.stack_depth = seed % 5 == 3 ? 3 : 64;
    const Batch batch = batch_for(seed, lanes);
    if (!program) {
      ++diverged;
      const std::string report = "does not compile:\n" + diags.format();
      const std::string unsaved = save_failure(out, seed, source, batch, options, report);
      fmt::print("seed {}: DOES NOT COMPILE ({})\n{}", seed,
                 unsaved.empty() ? "saved in " + out : unsaved, report);
      continue;
    }
    const int entry = program->find_function("main");
    const LoweredProgram lowered = lower(*program, entry);
    const RunResult expected = run_interp(*program, entry, batch, options);
    faults += expected.errors.size();
    std::string report;
    auto check = [&](const std::string& backend, const RunResult& got) {
      ++runs;
      const std::string difference = testing::compare_results(lowered, expected, got);
      if (!difference.empty()) report += backend + " differs from interp:\n" + difference;
    };
    check("vm", run_vm(lowered, batch, options));
    if (vulkan)
      for (const NamedSchedule& s : schedules()) {
        auto got = run_vulkan(lowered, batch, options, s.options, nullptr, context);
        if (!got)
          report += fmt::format("{} failed: {}\n", s.name, got.error());
        else
          check(s.name, *got);
      }
    if (!report.empty()) {
      ++diverged;
      const std::string unsaved = save_failure(out, seed, source, batch, options, report);
      fmt::print("seed {}: DIVERGED ({})\n{}", seed, unsaved.empty() ? "saved in " + out : unsaved,
                 report);
    }
    // Progress is part of the report: a soak cut short still says how far it got.
    if ((seed - first_seed + 1) % 100 == 0)
      fmt::print("{} programs (seeds {} to {}), {} diverged\n", seed - first_seed + 1, first_seed,
                 seed, diverged);
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  fmt::print("{} programs ({} backend runs, {} lane faults compared): {} diverged, {:.1f} s\n",
             programs, runs, faults, diverged, seconds);
  return diverged ? 1 : 0;
}
