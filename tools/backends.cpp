#include "tools/backends.h"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <thread>

#include <fmt/format.h>

#include "autobatch/engine.h"

namespace ab::cli {
bool stderr_is_terminal() {
  static const bool terminal = ::isatty(STDERR_FILENO) == 1;
  return terminal;
}

bool progress_due(double elapsed, double& last_shown) {
  if (!stderr_is_terminal() && elapsed - last_shown < 10.0) return false;
  last_shown = elapsed;
  return true;
}

const char* progress_start() {
  return stderr_is_terminal() ? "\r" : "";
}
const char* progress_end() {
  return stderr_is_terminal() ? "" : "\n";
}

namespace {

std::vector<std::string> block_names(const Module& module) {
  std::vector<std::string> names;
  for (const BlockInfo& block : module.blocks())
    names.push_back(block.name);
  return names;
}

Expected<BackendRun> run_on_cpu(const Module& module, const Batch& batch, const RunOptions& options,
                                CpuBackend cpu) {
  BackendRun run;
  auto result = module.run_cpu(batch, options, cpu);
  if (!result) return result.failure();
  run.result = std::move(*result);
  return run;
}

Expected<BackendRun> run_interpreter(const std::shared_ptr<const Module>& module,
                                     const Batch& batch, const RunOptions& options,
                                     const DeviceOptions&) {
  return run_on_cpu(*module, batch, options, CpuBackend::Interpreter);
}

Expected<BackendRun> run_batched_vm(const std::shared_ptr<const Module>& module, const Batch& batch,
                                    const RunOptions& options, const DeviceOptions&) {
  auto ran = run_on_cpu(*module, batch, options, CpuBackend::Vm);
  // Once per run, what the vm did with --threads (RunOptions::threads): more threads than cores
  // only wait for each other, and a system limit may refuse some.
  if (options.threads > usable_cores())
    fmt::print(stderr,
               "note: --threads {} is more than the {} cores this process may use: the vm "
               "runs at most {}\n",
               options.threads, usable_cores(), usable_cores());
  if (!ran) return ran;
  ran->block_names = block_names(*module);
  if (ran->result.stats.threads_refused > 0)
    fmt::print(stderr,
               "note: the system refused to start {} of the vm's worker threads (a thread or "
               "memory limit): the run went on with {}\n",
               ran->result.stats.threads_refused, ran->result.stats.threads);
  return ran;
}

// Compiles the run's kernels ahead of it. With `progress`, a line on stderr says so once it has
// taken a second ("compiling kernels (3 of 17)… 4.2 s"): the driver's compile of a large program
// can take a while, and it used to pass for a silent hang.
// After this long compiling for a CPU device (lavapipe: LLVM at run time, minutes for a large
// program such as the sampler over a 100-d model), the progress line says how to avoid it.
constexpr double kCpuCompileHintSeconds = 20;

ab::Status prepare_with_progress(VulkanRun& gpu, bool progress, bool cpu_device) {
  // Shards on several devices (--devices) build their kernels one after another: the first
  // compiles and fills the SPIR-V cache, which is keyed on the device, so the others of the same
  // kind only load it (one compile per device kind).
  static std::mutex one_compile_at_a_time;
  std::lock_guard compiling(one_compile_at_a_time);
  if (!progress) return gpu.prepare();
  std::atomic<size_t> done{0}, total{0};
  std::atomic<bool> finished{false};
  std::mutex mutex;
  std::condition_variable wake;
  const auto start = std::chrono::steady_clock::now();
  bool printed = false;
  double last_shown = -1e9;
  std::thread ticker([&] {
    std::unique_lock<std::mutex> lock(mutex);
    while (!wake.wait_for(lock, std::chrono::milliseconds(100), [&] { return finished.load(); })) {
      const double elapsed =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      if (elapsed < 1.0 || !progress_due(elapsed, last_shown)) continue;
      const size_t n = total.load();
      const std::string count =
          n > 1 ? fmt::format(" ({} of {})", std::min(done.load() + 1, n), n) : "";
      const char* hint = cpu_device && elapsed >= kCpuCompileHintSeconds
                             ? " (a CPU device compiles slowly; --backend vm needs no compile)"
                             : "";
      fmt::print(stderr, "{}  compiling kernels{}\u2026 {:.1f} s{}{}", progress_start(), count,
                 elapsed, hint, progress_end());
      std::fflush(stderr);
      printed = true;
    }
  });
  ab::Status status = gpu.prepare([&](size_t d, size_t t) {
    done = d;
    total = t;
  });
  {
    std::lock_guard<std::mutex> lock(mutex);
    finished = true;
  }
  wake.notify_all();
  ticker.join();
  if (printed && stderr_is_terminal()) fmt::print(stderr, "\r{:130}\r", "");
  return status;
}

Expected<BackendRun> run_on_vulkan(const std::shared_ptr<const Module>& module, const Batch& batch,
                                   const RunOptions& options, const DeviceOptions& device) {
  const auto start = std::chrono::steady_clock::now();
  BackendRun run;
  run.block_names = block_names(*module);
  VulkanOptions vulkan = vulkan_options(device);
  // Only the global schedule has a batch-wide step trace: asking for one picks it by default.
  if (options.record_trace && !device.schedule) vulkan.schedule = Schedule::Global;
  if (options.record_trace && vulkan.schedule != Schedule::Global)
    return Error{"--trace-steps needs --schedule global"};
  auto context = VulkanContext::create(vulkan.context);
  if (!context) return context.failure();
  auto compiled = VulkanProgram::compile(*context, module, vulkan);
  if (!compiled) return compiled.failure();
  const double compiled_before = (*compiled)->compile_seconds();
  const auto run_start = std::chrono::steady_clock::now();
  // create() checks every size against the device before any code is generated.
  auto created = VulkanRun::create(*compiled, batch, options, vulkan);
  if (!created) return created.failure();
  VulkanRun& gpu = **created;
  if (auto prepared =
          prepare_with_progress(gpu, device.progress, (*context)->device().type == "cpu");
      !prepared)
    return prepared.failure();

  // Step in slices so a long run can say how far it is.
  bool printed = false;
  double last_shown = -1e9;
  while (!gpu.done()) {
    auto stepped = gpu.step(vulkan.schedule == Schedule::Global ? 4096 : 65536);
    if (!stepped) return stepped.failure();
    // Stopped early: the records streamed so far are all the caller gets (no outputs).
    if (!gpu.done() && options.should_stop && options.should_stop()) {
      if (printed && stderr_is_terminal()) fmt::print(stderr, "\r{:130}\r", "");
      run.result.stopped = true;
      run.result.stats.lanes = batch.lanes;
      return run;
    }
    const double elapsed =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (device.progress && elapsed > 1.0 && !gpu.done() && progress_due(elapsed, last_shown)) {
      fmt::print(stderr, "{}  running on {}: {:.1f} s, {} dispatches{}", progress_start(),
                 gpu.stats().device, elapsed, gpu.stats().dispatches, progress_end());
      std::fflush(stderr);
      printed = true;
    }
  }
  if (printed && stderr_is_terminal()) fmt::print(stderr, "\r{:130}\r", "");
  auto result = gpu.result();
  if (!result) return result.failure();
  run.result = std::move(*result);
  const auto end = std::chrono::steady_clock::now();
  run.result.stats.wall_seconds = std::chrono::duration<double>(end - start).count();
  const VulkanStats& s = gpu.stats();
  // Kernels are compiled between run_start and the first step (prepare); that is compile time.
  const double run_seconds = std::chrono::duration<double>(end - run_start).count() -
                             ((*compiled)->compile_seconds() - compiled_before);
  run.extra_stats = {
      {"device", s.device, s.device},
      {"schedule", s.schedule, s.schedule},
      {"submissions", s.submissions, fmt::format("{}", s.submissions)},
      {"dispatches", s.dispatches, fmt::format("{}", s.dispatches)},
      {"compile_seconds", s.compile_seconds,
       fmt::format("{:.3f} ms{}", s.compile_seconds * 1000.0,
                   s.spirv_from_cache ? " (SPIR-V from cache)" : "")},
      {"run_seconds", run_seconds, fmt::format("{:.3f} ms", run_seconds * 1000.0)},
  };
  // Each kernel's build, the slowest named in the table.
  if (!s.kernels.empty()) {
    nlohmann::ordered_json kernels = nlohmann::ordered_json::array();
    const KernelCompile* slowest = &s.kernels.front();
    auto seconds = [](const KernelCompile& k) {
      return k.source_seconds + k.create_seconds + k.first_dispatch_seconds;
    };
    for (const KernelCompile& k : s.kernels) {
      kernels.push_back({{"kernel", k.kernel},
                         {"source_seconds", k.source_seconds},
                         {"create_seconds", k.create_seconds},
                         {"first_dispatch_seconds", k.first_dispatch_seconds},
                         {"spirv_from_cache", k.spirv_from_cache}});
      if (seconds(k) > seconds(*slowest)) slowest = &k;
    }
    run.extra_stats.push_back(
        {"kernels", kernels,
         fmt::format("{} built; slowest {}: {:.3f} s (source {:.3f}, pipeline {:.3f}, first "
                     "dispatch {:.3f})",
                     s.kernels.size(), slowest->kernel, seconds(*slowest), slowest->source_seconds,
                     slowest->create_seconds, slowest->first_dispatch_seconds)});
  }
  if (s.parts > 1)
    run.extra_stats.push_back(
        {"kernel_parts", static_cast<uint64_t>(s.parts),
         fmt::format("{} (the program was split to compile faster)", s.parts)});
  return run;
}

}  // namespace

double run_seconds(const BackendRun& run) {
  for (const ExtraStat& s : run.extra_stats)
    if (s.key == "run_seconds") return s.value.get<double>();
  return run.result.stats.wall_seconds;
}

VulkanOptions vulkan_options(const DeviceOptions& device) {
  VulkanOptions vulkan = device.vulkan;
  if (device.schedule) vulkan.schedule = *device.schedule;
  if (device.global_mode) vulkan.global_mode = *device.global_mode;
  if (device.local_scope) vulkan.local_scope = *device.local_scope;
  return vulkan;
}

bool vulkan_option_given(const DeviceOptions& device) {
  const VulkanOptions plain;
  const VulkanOptions& given = device.vulkan;
  return device.schedule || device.global_mode || device.local_scope || !device.devices.empty() ||
         given.context.device_index != plain.context.device_index ||
         given.context.validation != plain.context.validation ||
         given.max_part_cost != plain.max_part_cost ||
         given.compile_threads != plain.compile_threads;
}

const std::vector<Backend>& backends() {
  static const std::vector<Backend> table = {
      {"vulkan", "the Vulkan engine: SPIR-V compute shaders on a GPU (or lavapipe on the CPU)",
       true, run_on_vulkan},
      {"vm", "the batched CPU VM (Radul et al. Algorithm 2 on the lowered program)", true,
       run_batched_vm},
      {"interp", "the per-lane reference interpreter", false, run_interpreter},
  };
  return table;
}

const Backend* find_backend(std::string_view name) {
  for (const Backend& backend : backends())
    if (backend.name == name) return &backend;
  return nullptr;
}

std::string_view default_backend() {
  return "vulkan";
}

int list_devices_command(bool validation) {
  ContextOptions options;
  options.validation = validation;
  auto devices = list_devices(options);
  if (!devices) {
    fmt::print(stderr, "error: {}\n", devices.error());
    return 1;
  }
  if (devices->empty()) {
    fmt::print(stderr,
               "error: no Vulkan device found (install mesa-vulkan-drivers for the CPU "
               "device, or your GPU's Vulkan driver)\n");
    return 1;
  }
  for (const DeviceInfo& d : *devices) {
    fmt::print("{}  {}  ({}, Vulkan {}.{}, subgroup {}{}{})\n", d.index, d.name, d.type,
               d.api_version >> 22, (d.api_version >> 12) & 0x3ff, d.subgroup_size,
               d.driver.empty() ? "" : ", ", d.driver);
    // The language's float semantics need these; say where a device cannot promise them.
    if (!d.float_specials_preserved)
      fmt::print(
          "   warning: no SignedZeroInfNanPreserve for 32-bit floats: NaN, inf and -0 may "
          "be lost (x * 0.0, x / 0.0) and results may differ from the CPU backends\n");
    if (!d.denorms_preserved)
      fmt::print(
          "   note: no DenormPreserve for 32-bit floats: the driver may flush denormals "
          "to zero\n");
  }
  return 0;
}

}  // namespace ab::cli
