// samples/raytrace: rendering raytrace.ab's picture on one backend, through the public API: the
// CPU interpreter (the oracle), the CPU VM, or a Vulkan schedule. Shared by the render tool
// (raytrace_render), the tests and the bench.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "autobatch/autobatch.h"
#include "scene.h"

namespace ab::raytrace {

// Where a picture is rendered: "interp", "vm", or a Vulkan schedule, "vulkan" (the engine's
// default) or "global/masked", "global/compacted", "local/subgroup", "local/workgroup",
// "local/lane".
struct Backend {
  std::string name = "interp";
  bool vulkan = false;
  CpuBackend cpu = CpuBackend::Interpreter;
  VulkanOptions options;
};
Expected<Backend> parse_backend(const std::string& name);
// Every backend name parse_backend takes, for --help and the tests.
const std::vector<std::string>& backend_names();

struct Picture {
  uint32_t width = 0, height = 0;
  std::vector<uint32_t> colours;  // 3 float words per pixel, linear RGB, row-major from the top
  RunStats stats;
  double seconds = 0;  // the run alone (compiling not counted)
  size_t faulted = 0;  // lanes that faulted (the picture has black there)
  std::string first_error;
};

// The raytrace.ab embedded at build time (its path names it in messages).
Expected<std::shared_ptr<const Module>> load_program(const std::string& path = "");

// Renders `scene` at `view` on `backend`. Vulkan backends need `context` (created with
// VulkanContext::create when null).
Expected<Picture> render(const std::shared_ptr<const Module>& module, const Scene& scene,
                         const View& view, const Backend& backend,
                         std::shared_ptr<VulkanContext> context = nullptr);

}  // namespace ab::raytrace
