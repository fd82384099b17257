#include "bench/harness.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <chrono>
#include <cmath>
#include <memory>
#include <optional>
#include <thread>

#include "autobatch/engine.h"
#include "autobatch/module.h"
#include "bench/ceiling.h"
#include "bench/systems.h"
#include "bench/workloads.h"

namespace ab::bench {
namespace {

using Clock = std::chrono::steady_clock;

// Whether every scalar of `type` is a float (a float, or an array of them).
bool floats_only(const ValueType& type) {
  const ValueType* leaf = &type;
  while (leaf->is_array())
    leaf = &leaf->elem();
  return leaf->is_scalar() && leaf->scalar == Scalar::Float;
}

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// One run of one system: its result, wall time, the Vulkan counters and (engine) where the time
// went.
struct Measured {
  RunResult result;
  double seconds = 0;
  std::optional<uint64_t> dispatches, submissions;
  std::optional<double> upload_seconds, loop_seconds, readback_seconds;
};

// What a row needs that is the same for every system: the program, the batch, the reference.
struct RowContext {
  const Workload* workload = nullptr;
  InputSize size = InputSize::Light;
  const Module* module = nullptr;
  const Batch* batch = nullptr;
  RunOptions run_options;
  const RunResult* reference = nullptr;
  uint32_t out_words = 1;
  bool float_output = false;
  const CeilingKernel* ceiling = nullptr;  // the program's glsl kernel; null when not compiled
};

Expected<Measured> run_once(const System& system, const RowContext& row,
                            const std::shared_ptr<VulkanProgram>& vulkan_program) {
  Measured m;
  const Clock::time_point start = Clock::now();
  switch (system.kind) {
    case SystemKind::Vm: {
      auto ran = row.module->run_cpu(*row.batch, row.run_options, CpuBackend::Vm);
      if (!ran) return Error{ran.error()};
      m.result = std::move(*ran);
      break;
    }
    case SystemKind::Native:
      m.result = run_native(row.workload->native, *row.batch, row.out_words, row.run_options.seed);
      break;
    case SystemKind::Glsl: {
      // Upload, run and read back, as for the engine rows; compilation excluded.
      auto ran = run_ceiling(*row.ceiling, *row.batch, row.out_words, row.run_options.seed);
      if (!ran) return Error{ran.error()};
      m.result = std::move(ran->result);
      m.dispatches = ran->dispatches;
      break;
    }
    case SystemKind::Vulkan: {
      VulkanOptions options;
      options.schedule = system.schedule;
      options.global_mode = system.global_mode;
      options.local_scope = system.local_scope;
      options.disk_cache = false;
      // Upload, run and read back: everything a caller waits for, compilation excluded (the
      // program's kernels are compiled by the warm-up run and reported apart).
      auto run = VulkanRun::create(vulkan_program, *row.batch, row.run_options, options);
      if (!run) return Error{run.error()};
      Status status = (*run)->run();
      if (!status) return Error{status.error()};
      auto result = (*run)->result();
      if (!result) return Error{result.error()};
      m.result = std::move(*result);
      const VulkanStats& stats = (*run)->stats();
      m.dispatches = stats.dispatches;
      m.submissions = stats.submissions;
      m.upload_seconds = stats.upload_seconds;
      m.loop_seconds = stats.loop_seconds;
      m.readback_seconds = stats.readback_seconds;
      break;
    }
  }
  m.seconds = seconds_since(start);
  return m;
}

double median(std::vector<double> xs) {
  std::sort(xs.begin(), xs.end());
  const size_t n = xs.size();
  return n % 2 ? xs[n / 2] : 0.5 * (xs[n / 2 - 1] + xs[n / 2]);
}

BenchRow measure_row(const System& system, const RowContext& row,
                     const std::shared_ptr<VulkanProgram>& vulkan_program, int repeats,
                     double budget_seconds, const BenchOptions& options) {
  BenchRow out;
  out.program = row.workload->name;
  out.inputs = input_size_name(row.size);
  out.system = system.name;
  out.lanes = row.batch->lanes;
  out.lane_calls = row.reference->stats.calls + row.batch->lanes;
  out.lane_steps = row.reference->stats.lane_steps;
  // Every run, the warm-up included, is checked: a system that is right only sometimes fails.
  auto checked_run = [&]() -> std::optional<Measured> {
    Expected<Measured> m = run_once(system, row, vulkan_program);
    if (!m) {
      out.status = "ERROR";
      out.message = m.error();
      return std::nullopt;
    }
    if (options.tamper_for_test) options.tamper_for_test(system.name, m->result);
    // Device rows may differ from the CPU in the last bits of transcendental functions.
    const bool on_device = system.kind == SystemKind::Vulkan || system.kind == SystemKind::Glsl;
    const std::string diff = compare_with_reference(*row.reference, m->result, row.out_words,
                                                    row.float_output, on_device);
    if (!diff.empty()) {
      out.status = "FAILED";
      out.message = diff;
      return std::nullopt;
    }
    return std::move(*m);
  };
  std::optional<Measured> last = checked_run();  // the warm-up
  if (!last) return out;
  std::vector<double> times, uploads, loops, readbacks;
  auto keep_breakdown = [&](const Measured& m) {
    if (!m.upload_seconds) return;
    uploads.push_back(*m.upload_seconds);
    loops.push_back(*m.loop_seconds);
    readbacks.push_back(*m.readback_seconds);
  };
  // A warm-up that alone exceeds the budget is the row's only measurement (repeats = 0): the
  // slowest schedules at the largest batches would otherwise dominate the suite's run time.
  const bool warm_up_only = last->seconds > budget_seconds;
  if (warm_up_only) {
    times.push_back(last->seconds);
    keep_breakdown(*last);
  }
  double spent = 0;
  for (int i = 0; !warm_up_only && i < repeats && (i == 0 || spent < budget_seconds); ++i) {
    last = checked_run();
    if (!last) return out;
    times.push_back(last->seconds);
    keep_breakdown(*last);
    spent += last->seconds;
  }
  out.checked = true;
  out.repeats = warm_up_only ? 0 : static_cast<int>(times.size());
  out.median_seconds = median(times);
  out.min_seconds = *std::min_element(times.begin(), times.end());
  const double t = std::max(out.median_seconds, 1e-9);
  out.calls_per_second = static_cast<double>(out.lane_calls) / t;
  out.steps_per_second = static_cast<double>(out.lane_steps) / t;
  if (system.kind == SystemKind::Vm || system.kind == SystemKind::Vulkan) {
    const RunStats& stats = last->result.stats;
    out.steps = stats.steps;
    out.utilization = stats.utilization;
    if (stats.steps > 0)
      out.seconds_per_step = out.median_seconds / static_cast<double>(stats.steps);
  }
  out.dispatches = last->dispatches;
  out.submissions = last->submissions;
  if (!uploads.empty()) {
    out.upload_seconds = median(uploads);
    out.loop_seconds = median(loops);
    out.readback_seconds = median(readbacks);
  }
  return out;
}

// Fills vs_native and vs_vm for the rows of one (program, batch) cell, and vs_glsl for its
// engine rows.
void add_ratios(std::vector<BenchRow>& rows, size_t first) {
  auto baseline = [&](const char* name) -> std::optional<double> {
    for (size_t i = first; i < rows.size(); ++i)
      if (rows[i].system == name && rows[i].checked) return rows[i].median_seconds;
    return std::nullopt;
  };
  const std::optional<double> native = baseline("native"), vm = baseline("vm"),
                              glsl = baseline("glsl");
  for (size_t i = first; i < rows.size(); ++i) {
    BenchRow& row = rows[i];
    if (!row.checked || row.median_seconds <= 0) continue;
    if (native) row.vs_native = *native / row.median_seconds;
    if (vm) row.vs_vm = *vm / row.median_seconds;
    if (glsl && row.system != "glsl" && row.system != "native" && row.system != "vm")
      row.vs_glsl = *glsl / row.median_seconds;
  }
}

std::string lane_word(const RunResult& r, uint32_t lane, uint32_t word, uint32_t words,
                      bool float_words) {
  const uint32_t bits = r.outputs[size_t{lane} * words + word];
  return float_words ? fmt::format("{}", std::bit_cast<float>(bits))
                     : fmt::format("{}", static_cast<int32_t>(bits));
}

}  // namespace

bool within_float_tolerance(float x, float y) {
  return std::fabs(x - y) <= 1e-4f * std::max(1.0f, std::max(std::fabs(x), std::fabs(y)));
}

std::string compare_with_reference(const RunResult& expected, const RunResult& actual,
                                   uint32_t words_per_lane, bool float_words,
                                   bool float_tolerance) {
  if (actual.outputs.size() != expected.outputs.size() ||
      actual.faulted.size() != expected.faulted.size())
    return fmt::format("result has {} words for {} lanes, expected {} words for {} lanes",
                       actual.outputs.size(), actual.faulted.size(), expected.outputs.size(),
                       expected.faulted.size());
  const uint32_t lanes = static_cast<uint32_t>(expected.faulted.size());
  for (uint32_t lane = 0; lane < lanes; ++lane) {
    if ((expected.faulted[lane] != 0) != (actual.faulted[lane] != 0))
      return fmt::format("lane {}: expected {}, got {}", lane,
                         expected.faulted[lane] ? "a fault" : "no fault",
                         actual.faulted[lane] ? "a fault" : "no fault");
    if (expected.faulted[lane]) continue;
    for (uint32_t w = 0; w < words_per_lane; ++w) {
      const size_t i = size_t{lane} * words_per_lane + w;
      const uint32_t a = expected.outputs[i], b = actual.outputs[i];
      if (a == b) continue;
      if (float_words && float_tolerance) {
        if (within_float_tolerance(std::bit_cast<float>(a), std::bit_cast<float>(b))) continue;
      }
      return fmt::format("lane {} word {}: expected {}, got {}", lane, w,
                         lane_word(expected, lane, w, words_per_lane, float_words),
                         lane_word(actual, lane, w, words_per_lane, float_words));
    }
  }
  return "";
}

std::string run_suite(const BenchOptions& options, BenchReport& report) {
  report = BenchReport{};
  report.quick = options.quick;
  report.cpu_threads = std::max(1u, std::thread::hardware_concurrency());

  std::vector<const Workload*> programs;
  if (options.programs.empty()) {
    for (const Workload& w : workloads())
      programs.push_back(&w);
  } else {
    for (const std::string& name : options.programs) {
      const Workload* w = find_workload(name);
      if (!w) {
        std::string known;
        for (const Workload& k : workloads())
          known += (known.empty() ? "" : ", ") + k.name;
        return fmt::format("unknown program '{}' (known: {})", name, known);
      }
      programs.push_back(w);
    }
  }
  std::vector<System> systems;
  std::string unknown;
  if (!select_systems(options.systems, systems, unknown)) {
    std::string known = "vulkan, all";
    for (const System& s : all_systems())
      known += ", " + s.name;
    return fmt::format("unknown system '{}' (known: {})", unknown, known);
  }
  for (uint32_t b : options.batches)
    if (b == 0) return "batch sizes must be at least 1";
  std::vector<InputSize> sizes;
  const std::string inputs =
      options.inputs.empty() ? (options.quick ? "light" : "both") : options.inputs;
  if (inputs == "light" || inputs == "both") sizes.push_back(InputSize::Light);
  if (inputs == "heavy" || inputs == "both") sizes.push_back(InputSize::Heavy);
  if (sizes.empty())
    return fmt::format("--inputs must be light, heavy or both, not '{}'", options.inputs);
  for (InputSize size : sizes)
    report.inputs.push_back(input_size_name(size));

  std::shared_ptr<VulkanContext> context;
  auto on_device = [](const System& s) {
    return s.kind == SystemKind::Vulkan || s.kind == SystemKind::Glsl;
  };
  const bool wants_vulkan = std::any_of(systems.begin(), systems.end(), on_device);
  const bool wants_glsl = std::any_of(systems.begin(), systems.end(),
                                      [](const System& s) { return s.kind == SystemKind::Glsl; });
  const bool wants_engine = std::any_of(
      systems.begin(), systems.end(), [](const System& s) { return s.kind == SystemKind::Vulkan; });
  bool gpu = false;
  if (wants_vulkan) {
    ContextOptions context_options;
    context_options.device_index = options.device;
    auto created = VulkanContext::create(context_options);
    if (created) {
      context = *created;
      const DeviceInfo& device = context->device();
      report.device = fmt::format("{} ({}), subgroup size {}", device.name, device.driver,
                                  device.subgroup_size);
      gpu = device.type == "discrete" || device.type == "integrated";
    } else {
      report.vulkan_note = "Vulkan systems skipped: " + created.error();
      std::erase_if(systems, on_device);
    }
  }
  for (const System& s : systems)
    report.systems.push_back(s.name);

  report.batches = options.batches;
  if (report.batches.empty()) {
    report.batches = options.quick ? std::vector<uint32_t>{1, 64, 1024}
                                   : std::vector<uint32_t>{1, 64, 1024, 16384};
    if (gpu && !options.quick) report.batches.push_back(131072);
  }
  // Heavy inputs measure steady-state throughput: the large batches only, unless asked.
  std::vector<uint32_t> heavy_batches = options.batches;
  if (heavy_batches.empty()) {
    heavy_batches =
        options.quick ? std::vector<uint32_t>{1024} : std::vector<uint32_t>{1024, 16384};
    if (gpu && !options.quick) heavy_batches.push_back(131072);
  }
  report.heavy_batches = heavy_batches;
  // The slowest schedules would take minutes per heavy row at large batches (global-masked:
  // ~0.005x the ceiling): left out there unless named on their own.
  auto named = [&](const std::string& name) {
    return std::find(options.systems.begin(), options.systems.end(), name) != options.systems.end();
  };
  auto left_out = [&](const System& system, InputSize size, uint32_t lanes) {
    return size == InputSize::Heavy && lanes > kHeavyFullLanes &&
           (system.name == "global-masked" || system.name == "local-workgroup") &&
           !named(system.name);
  };
  const bool any_left_out = std::any_of(systems.begin(), systems.end(), [&](const System& s) {
    return std::any_of(heavy_batches.begin(), heavy_batches.end(),
                       [&](uint32_t lanes) { return left_out(s, InputSize::Heavy, lanes); });
  });
  if (any_left_out && std::find(sizes.begin(), sizes.end(), InputSize::Heavy) != sizes.end())
    report.notes.push_back(fmt::format(
        "heavy inputs above {} lanes leave out global-masked and local-workgroup (minutes per "
        "row); name them in --systems to run them",
        kHeavyFullLanes));
  const int repeats = options.repeats > 0 ? options.repeats : (options.quick ? 3 : 5);
  const double budget = options.repeat_budget_seconds > 0 ? options.repeat_budget_seconds
                                                          : (options.quick ? 1.0 : 4.0);

  for (const Workload* workload : programs) {
    const std::string file = workload->name + ".ab";
    const std::string* source = samples::sample_source(file);
    if (!source) return fmt::format("no embedded source for '{}'", workload->name);
    auto module = Module::compile(*source, {file, workload->entry});
    if (!module) return fmt::format("{} does not compile:\n{}", file, module.error());

    std::shared_ptr<VulkanProgram> vulkan_program;
    std::string vulkan_error;
    if (context && wants_engine) {
      VulkanOptions compile_options;
      compile_options.disk_cache = false;
      auto compiled = VulkanProgram::compile(context, *module, compile_options);
      if (compiled)
        vulkan_program = *compiled;
      else
        vulkan_error = compiled.error();
    }
    RowContext row;
    row.workload = workload;
    row.module = module->get();
    row.run_options.seed = workload->seed;
    row.out_words = workload->out_words;
    row.float_output = floats_only((*module)->output().value_type);

    CompileRow compile;
    compile.program = workload->name;
    for (InputSize size : sizes) {
      row.size = size;
      row.run_options.stack_depth = workload->depth(size);
      // The ceiling kernel's stack has the input size's depth.
      std::optional<CeilingKernel> ceiling;
      std::string ceiling_error;
      if (context && wants_glsl) {
        auto compiled = compile_ceiling(context, workload->name,
                                        static_cast<uint32_t>((*module)->inputs().size()),
                                        workload->depth(size));
        if (compiled) {
          ceiling = std::move(*compiled);
          if (!compile.glsl_seconds) compile.glsl_seconds = ceiling->kernel->compile_seconds();
        } else {
          ceiling_error = compiled.error();
        }
      }
      row.ceiling = ceiling ? &*ceiling : nullptr;

      // Each Vulkan variant compiles its kernels on first use (and lavapipe finishes compiling a
      // pipeline at its first dispatch). Untimed runs per variant do that here, so no row's
      // warm-up (which can be its only measurement) includes compilation; the time shows in the
      // compile figures instead. One lane, and for the global schedule also more lanes than a
      // subgroup holds: a batch that fits one subgroup runs the fused kernel, a larger one the
      // others. Light inputs: the primers are cheap at either size.
      if (vulkan_program || ceiling) {
        for (uint32_t lanes : {1u, 65u}) {
          const Batch primer = workload->make_batch(lanes, InputSize::Light, options.quick);
          auto primer_reference =
              (*module)->run_cpu(primer, row.run_options, CpuBackend::Interpreter);
          if (!primer_reference) return fmt::format("{}: {}", file, primer_reference.error());
          row.batch = &primer;
          row.reference = &*primer_reference;
          for (const System& system : systems)
            if ((system.kind == SystemKind::Vulkan && vulkan_program &&
                 (lanes == 1 || system.schedule == Schedule::Global)) ||
                (system.kind == SystemKind::Glsl && ceiling && lanes == 1))
              (void)run_once(system, row, vulkan_program);
        }
      }

      for (uint32_t lanes : size == InputSize::Heavy ? heavy_batches : report.batches) {
        const Batch batch = workload->make_batch(lanes, size, options.quick);
        auto reference = (*module)->run_cpu(batch, row.run_options, CpuBackend::Interpreter);
        if (!reference) return fmt::format("{}: {}", file, reference.error());
        row.batch = &batch;
        row.reference = &*reference;
        const size_t first = report.rows.size();
        for (const System& system : systems) {
          if (left_out(system, size, lanes)) continue;
          BenchRow out;
          const bool not_compiled = (system.kind == SystemKind::Vulkan && !vulkan_program) ||
                                    (system.kind == SystemKind::Glsl && !ceiling);
          if (not_compiled) {
            out.program = workload->name;
            out.inputs = input_size_name(size);
            out.system = system.name;
            out.lanes = lanes;
            out.status = "ERROR";
            out.message = "compile failed: " +
                          (system.kind == SystemKind::Glsl ? ceiling_error : vulkan_error);
          } else {
            out = measure_row(system, row, vulkan_program, repeats, budget, options);
          }
          if (options.print_table)
            fmt::print(stderr, "  {:<10} {:<5} {:>6} lanes  {:<17} {}\n", out.program, out.inputs,
                       out.lanes, out.system,
                       out.status == "ok" ? fmt::format("{:.4f} s", out.median_seconds)
                                          : out.status + ": " + out.message);
          report.rows.push_back(std::move(out));
        }
        add_ratios(report.rows, first);
      }
    }
    if (vulkan_program || compile.glsl_seconds) {
      if (vulkan_program) compile.seconds = vulkan_program->compile_seconds();
      report.compiles.push_back(compile);
    }
  }
  return "";
}

}  // namespace ab::bench
