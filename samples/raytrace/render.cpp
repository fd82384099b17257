#include "render.h"

#include <chrono>

namespace ab::raytrace {

const std::vector<std::string>& backend_names() {
  static const std::vector<std::string> names = {"interp",           "vm",
                                                 "vulkan",           "global/masked",
                                                 "global/compacted", "local/subgroup",
                                                 "local/workgroup",  "local/lane"};
  return names;
}

Expected<Backend> parse_backend(const std::string& name) {
  Backend b;
  b.name = name;
  if (name == "interp") return b;
  if (name == "vm") {
    b.cpu = CpuBackend::Vm;
    return b;
  }
  b.vulkan = true;
  if (name == "vulkan") return b;
  const auto slash = name.find('/');
  if (slash == std::string::npos)
    return Error("unknown backend '" + name +
                 "': interp, vm, vulkan, global/masked, global/compacted, local/subgroup, "
                 "local/workgroup or local/lane");
  auto schedule = parse_schedule(name.substr(0, slash));
  if (!schedule) return schedule.failure();
  b.options.schedule = *schedule;
  const std::string variant = name.substr(slash + 1);
  if (*schedule == Schedule::Global) {
    auto mode = parse_global_mode(variant);
    if (!mode) return mode.failure();
    b.options.global_mode = *mode;
  } else {
    auto scope = parse_local_scope(variant);
    if (!scope) return scope.failure();
    b.options.local_scope = *scope;
  }
  return b;
}

Expected<std::shared_ptr<const Module>> load_program(const std::string& path) {
  return Module::load(path.empty() ? std::string(AB_RAYTRACE_PROGRAM) : path);
}

namespace {

Expected<RunResult> run_on_vulkan(const std::shared_ptr<const Module>& module, const Batch& batch,
                                  const RunOptions& options, const Backend& backend,
                                  std::shared_ptr<VulkanContext> context, double* seconds) {
  if (!context) {
    auto created = VulkanContext::create(backend.options.context);
    if (!created) return created.failure();
    context = *created;
  }
  auto program = VulkanProgram::compile(context, module, backend.options);
  if (!program) return program.failure();
  auto run = VulkanRun::create(*program, batch, options);
  if (!run) return run.failure();
  if (auto prepared = (*run)->prepare(); !prepared) return prepared.failure();
  const auto start = std::chrono::steady_clock::now();
  if (auto ran = (*run)->run(); !ran) return ran.failure();
  auto result = (*run)->result();
  *seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

}  // namespace

Expected<Picture> render(const std::shared_ptr<const Module>& module, const Scene& scene,
                         const View& view, const Backend& backend,
                         std::shared_ptr<VulkanContext> context) {
  if (view.width == 0 || view.height == 0) return Error("the image needs at least one pixel");
  const Batch batch = pixel_batch(scene, view);
  if (auto fits = module->check(batch); !fits) return fits.failure();
  RunOptions options;
  options.stack_depth = stack_depth(view);
  Picture picture;
  picture.width = view.width;
  picture.height = view.height;
  Expected<RunResult> result = Error("not run");
  if (backend.vulkan) {
    result = run_on_vulkan(module, batch, options, backend, std::move(context), &picture.seconds);
  } else {
    const auto start = std::chrono::steady_clock::now();
    result = module->run_cpu(batch, options, backend.cpu);
    picture.seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
  if (!result) return result.failure();
  picture.colours = std::move(result->outputs);
  picture.stats = result->stats;
  for (uint8_t f : result->faulted)
    picture.faulted += f;
  if (!result->errors.empty())
    picture.first_error = "lane " + std::to_string(result->errors.front().lane) + ": " +
                          fault_text(result->errors.front()) + " in " +
                          result->errors.front().function;
  return picture;
}

}  // namespace ab::raytrace
