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
    const Status same = compare_with_reference(*row.reference, m->result, row.out_words,
                                               row.float_output, on_device);
    if (!same) {
      out.status = "FAILED";
      out.message = same.error();
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

Status compare_with_reference(const RunResult& expected, const RunResult& actual,
                              uint32_t words_per_lane, bool float_words, bool float_tolerance) {
  if (actual.outputs.size() != expected.outputs.size() ||
      actual.faulted.size() != expected.faulted.size())
    return Error{fmt::format("result has {} words for {} lanes, expected {} words for {} lanes",
                             actual.outputs.size(), actual.faulted.size(), expected.outputs.size(),
                             expected.faulted.size())};
  const uint32_t lanes = static_cast<uint32_t>(expected.faulted.size());
  for (uint32_t lane = 0; lane < lanes; ++lane) {
    if ((expected.faulted[lane] != 0) != (actual.faulted[lane] != 0))
      return Error{fmt::format("lane {}: expected {}, got {}", lane,
                               expected.faulted[lane] ? "a fault" : "no fault",
                               actual.faulted[lane] ? "a fault" : "no fault")};
    if (expected.faulted[lane]) continue;
    for (uint32_t w = 0; w < words_per_lane; ++w) {
      const size_t i = size_t{lane} * words_per_lane + w;
      const uint32_t a = expected.outputs[i], b = actual.outputs[i];
      if (a == b) continue;
      if (float_words && float_tolerance) {
        if (within_float_tolerance(std::bit_cast<float>(a), std::bit_cast<float>(b))) continue;
      }
      return Error{fmt::format("lane {} word {}: expected {}, got {}", lane, w,
                               lane_word(expected, lane, w, words_per_lane, float_words),
                               lane_word(actual, lane, w, words_per_lane, float_words))};
    }
  }
  return Ok{};
}

namespace {

// The suite's matrix as the options ask for it, checked before anything runs.
struct SuitePlan {
  std::vector<const Workload*> programs;
  std::vector<System> systems;
  std::vector<InputSize> sizes;
  std::vector<uint32_t> heavy_batches;
  std::shared_ptr<VulkanContext> context;  // null: no Vulkan system (or none could be set up)
  bool wants_glsl = false, wants_engine = false;
  int repeats = 0;
  double budget = 0;
  std::vector<std::string> named_systems;  // --systems as given

  // The slowest schedules would take minutes per heavy row at large batches (global-masked:
  // ~0.005x the ceiling): left out there unless named on their own.
  bool left_out(const System& system, InputSize size, uint32_t lanes) const {
    return size == InputSize::Heavy && lanes > kHeavyFullLanes &&
           (system.name == "global-masked" || system.name == "local-workgroup") &&
           std::find(named_systems.begin(), named_systems.end(), system.name) ==
               named_systems.end();
  }
};

Expected<std::vector<const Workload*>> select_programs(const std::vector<std::string>& names) {
  std::vector<const Workload*> programs;
  if (names.empty()) {
    for (const Workload& w : workloads())
      programs.push_back(&w);
    return programs;
  }
  for (const std::string& name : names) {
    const Workload* w = find_workload(name);
    if (!w) {
      std::string known;
      for (const Workload& k : workloads())
        known += (known.empty() ? "" : ", ") + k.name;
      return Error{fmt::format("unknown program '{}' (known: {})", name, known)};
    }
    programs.push_back(w);
  }
  return programs;
}

Expected<std::vector<InputSize>> select_sizes(const BenchOptions& options) {
  std::vector<InputSize> sizes;
  const std::string inputs =
      options.inputs.empty() ? (options.quick ? "light" : "both") : options.inputs;
  if (inputs == "light" || inputs == "both") sizes.push_back(InputSize::Light);
  if (inputs == "heavy" || inputs == "both") sizes.push_back(InputSize::Heavy);
  if (sizes.empty())
    return Error{fmt::format("--inputs must be light, heavy or both, not '{}'", options.inputs)};
  return sizes;
}

// The Vulkan context the device systems share; without one they are left out and the report
// says why. Returns whether the device is a GPU.
bool open_device(const BenchOptions& options, SuitePlan& plan, BenchReport& report) {
  auto on_device = [](const System& s) {
    return s.kind == SystemKind::Vulkan || s.kind == SystemKind::Glsl;
  };
  plan.wants_glsl = std::any_of(plan.systems.begin(), plan.systems.end(),
                                [](const System& s) { return s.kind == SystemKind::Glsl; });
  plan.wants_engine = std::any_of(plan.systems.begin(), plan.systems.end(),
                                  [](const System& s) { return s.kind == SystemKind::Vulkan; });
  if (!std::any_of(plan.systems.begin(), plan.systems.end(), on_device)) return false;
  ContextOptions context_options;
  context_options.device_index = options.device;
  auto created = VulkanContext::create(context_options);
  if (!created) {
    report.vulkan_note = "Vulkan systems skipped: " + created.error();
    std::erase_if(plan.systems, on_device);
    return false;
  }
  plan.context = *created;
  const DeviceInfo& device = plan.context->device();
  report.device =
      fmt::format("{} ({}), subgroup size {}", device.name, device.driver, device.subgroup_size);
  return device.type == "discrete" || device.type == "integrated";
}

// The batch sizes of the light and heavy rows, and the note on the systems heavy rows leave out.
void plan_batches(const BenchOptions& options, bool gpu, SuitePlan& plan, BenchReport& report) {
  report.batches = options.batches;
  if (report.batches.empty()) {
    report.batches = options.quick ? std::vector<uint32_t>{1, 64, 1024}
                                   : std::vector<uint32_t>{1, 64, 1024, 16384};
    if (gpu && !options.quick) report.batches.push_back(131072);
  }
  // Heavy inputs measure steady-state throughput: the large batches only, unless asked.
  plan.heavy_batches = options.batches;
  if (plan.heavy_batches.empty()) {
    plan.heavy_batches =
        options.quick ? std::vector<uint32_t>{1024} : std::vector<uint32_t>{1024, 16384};
    if (gpu && !options.quick) plan.heavy_batches.push_back(131072);
  }
  report.heavy_batches = plan.heavy_batches;
  const bool any_left_out =
      std::any_of(plan.systems.begin(), plan.systems.end(), [&](const System& s) {
        return std::any_of(
            plan.heavy_batches.begin(), plan.heavy_batches.end(),
            [&](uint32_t lanes) { return plan.left_out(s, InputSize::Heavy, lanes); });
      });
  if (any_left_out &&
      std::find(plan.sizes.begin(), plan.sizes.end(), InputSize::Heavy) != plan.sizes.end())
    report.notes.push_back(fmt::format(
        "heavy inputs above {} lanes leave out global-masked and local-workgroup (minutes per "
        "row); name them in --systems to run them",
        kHeavyFullLanes));
}

Expected<SuitePlan> plan_suite(const BenchOptions& options, BenchReport& report) {
  SuitePlan plan;
  auto programs = select_programs(options.programs);
  if (!programs) return programs.failure();
  plan.programs = std::move(*programs);
  auto systems = select_systems(options.systems);
  if (!systems) return systems.failure();
  plan.systems = std::move(*systems);
  plan.named_systems = options.systems;
  for (uint32_t b : options.batches)
    if (b == 0) return Error{"batch sizes must be at least 1"};
  auto sizes = select_sizes(options);
  if (!sizes) return sizes.failure();
  plan.sizes = std::move(*sizes);
  for (InputSize size : plan.sizes)
    report.inputs.push_back(input_size_name(size));
  const bool gpu = open_device(options, plan, report);
  for (const System& s : plan.systems)
    report.systems.push_back(s.name);
  plan_batches(options, gpu, plan, report);
  plan.repeats = options.repeats > 0 ? options.repeats : (options.quick ? 3 : 5);
  plan.budget = options.repeat_budget_seconds > 0 ? options.repeat_budget_seconds
                                                  : (options.quick ? 1.0 : 4.0);
  return plan;
}

// Each Vulkan variant compiles its kernels on first use (and lavapipe finishes compiling a
// pipeline at its first dispatch). Untimed runs per variant do that here, so no row's warm-up
// (which can be its only measurement) includes compilation; the time shows in the compile figures
// instead. One lane, and for the global schedule also more lanes than a subgroup holds: a batch
// that fits one subgroup runs the fused kernel, a larger one the others. Light inputs: the primers
// are cheap at either size.
Status prime_variants(const SuitePlan& plan, RowContext row,
                      const std::shared_ptr<VulkanProgram>& vulkan_program, bool quick) {
  const std::string file = row.workload->name + ".ab";
  for (uint32_t lanes : {1u, 65u}) {
    const Batch primer = row.workload->make_batch(lanes, InputSize::Light, quick);
    auto primer_reference = row.module->run_cpu(primer, row.run_options, CpuBackend::Interpreter);
    if (!primer_reference) return Error{fmt::format("{}: {}", file, primer_reference.error())};
    row.batch = &primer;
    row.reference = &*primer_reference;
    for (const System& system : plan.systems)
      if ((system.kind == SystemKind::Vulkan && vulkan_program &&
           (lanes == 1 || system.schedule == Schedule::Global)) ||
          (system.kind == SystemKind::Glsl && row.ceiling && lanes == 1))
        (void)run_once(system, row, vulkan_program);
  }
  return Ok{};
}

// One (program, input size, batch) cell: every system's row, checked, then their ratios.
// `errors` say why a system's program did not compile (its row is an ERROR).
Status run_cell(const SuitePlan& plan, RowContext row, uint32_t lanes,
                const std::shared_ptr<VulkanProgram>& vulkan_program,
                const std::string& vulkan_error, const std::string& ceiling_error,
                const BenchOptions& options, BenchReport& report) {
  const Batch batch = row.workload->make_batch(lanes, row.size, options.quick);
  auto reference = row.module->run_cpu(batch, row.run_options, CpuBackend::Interpreter);
  if (!reference) return Error{fmt::format("{}.ab: {}", row.workload->name, reference.error())};
  row.batch = &batch;
  row.reference = &*reference;
  const size_t first = report.rows.size();
  for (const System& system : plan.systems) {
    if (plan.left_out(system, row.size, lanes)) continue;
    BenchRow out;
    const bool not_compiled = (system.kind == SystemKind::Vulkan && !vulkan_program) ||
                              (system.kind == SystemKind::Glsl && !row.ceiling);
    if (not_compiled) {
      out.program = row.workload->name;
      out.inputs = input_size_name(row.size);
      out.system = system.name;
      out.lanes = lanes;
      out.status = "ERROR";
      out.message =
          "compile failed: " + (system.kind == SystemKind::Glsl ? ceiling_error : vulkan_error);
    } else {
      out = measure_row(system, row, vulkan_program, plan.repeats, plan.budget, options);
    }
    if (options.print_table)
      fmt::print(stderr, "  {:<10} {:<5} {:>6} lanes  {:<17} {}\n", out.program, out.inputs,
                 out.lanes, out.system,
                 out.status == "ok" ? fmt::format("{:.4f} s", out.median_seconds)
                                    : out.status + ": " + out.message);
    report.rows.push_back(std::move(out));
  }
  add_ratios(report.rows, first);
  return Ok{};
}

// One program's rows at every input size and batch, and its compile figures.
Status run_workload(const SuitePlan& plan, const Workload& workload, const BenchOptions& options,
                    BenchReport& report) {
  const std::string file = workload.name + ".ab";
  const std::string* source = samples::sample_source(file);
  if (!source) return Error{fmt::format("no embedded source for '{}'", workload.name)};
  auto module = Module::compile(*source, {file, workload.entry});
  if (!module) return Error{fmt::format("{} does not compile:\n{}", file, module.error())};

  std::shared_ptr<VulkanProgram> vulkan_program;
  std::string vulkan_error;
  if (plan.context && plan.wants_engine) {
    VulkanOptions compile_options;
    compile_options.disk_cache = false;
    auto compiled = VulkanProgram::compile(plan.context, *module, compile_options);
    if (compiled)
      vulkan_program = *compiled;
    else
      vulkan_error = compiled.error();
  }
  RowContext row;
  row.workload = &workload;
  row.module = module->get();
  row.run_options.seed = workload.seed;
  row.out_words = workload.out_words;
  row.float_output = floats_only((*module)->output().value_type);

  CompileRow compile;
  compile.program = workload.name;
  for (InputSize size : plan.sizes) {
    row.size = size;
    row.run_options.stack_depth = workload.depth(size);
    // The ceiling kernel's stack has the input size's depth.
    std::optional<CeilingKernel> ceiling;
    std::string ceiling_error;
    if (plan.context && plan.wants_glsl) {
      auto compiled =
          compile_ceiling(plan.context, workload.name,
                          static_cast<uint32_t>((*module)->inputs().size()), workload.depth(size));
      if (compiled) {
        ceiling = std::move(*compiled);
        if (!compile.glsl_seconds) compile.glsl_seconds = ceiling->kernel->compile_seconds();
      } else {
        ceiling_error = compiled.error();
      }
    }
    row.ceiling = ceiling ? &*ceiling : nullptr;
    if (vulkan_program || ceiling)
      if (auto s = prime_variants(plan, row, vulkan_program, options.quick); !s) return s;
    for (uint32_t lanes : size == InputSize::Heavy ? plan.heavy_batches : report.batches)
      if (auto s = run_cell(plan, row, lanes, vulkan_program, vulkan_error, ceiling_error, options,
                            report);
          !s)
        return s;
  }
  if (vulkan_program || compile.glsl_seconds) {
    if (vulkan_program) compile.seconds = vulkan_program->compile_seconds();
    report.compiles.push_back(compile);
  }
  return Ok{};
}

}  // namespace

Status run_suite(const BenchOptions& options, BenchReport& report) {
  report = BenchReport{};
  report.quick = options.quick;
  report.cpu_threads = std::max(1u, std::thread::hardware_concurrency());
  auto plan = plan_suite(options, report);
  if (!plan) return plan.failure();
  for (const Workload* workload : plan->programs)
    if (auto s = run_workload(*plan, *workload, options, report); !s) return s;
  return Ok{};
}

double median(std::vector<double> xs) {
  std::sort(xs.begin(), xs.end());
  const size_t n = xs.size();
  return n % 2 ? xs[n / 2] : 0.5 * (xs[n / 2 - 1] + xs[n / 2]);
}

}  // namespace ab::bench
