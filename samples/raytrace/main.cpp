// raytrace_render: renders samples/raytrace/raytrace.ab's default scene to a PNG on one backend
// (samples/README.md). Exit status 0; 2 with one message for a bad option; 1 with one message for
// a program that does not compile, a failed run or a lane that faulted.
#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <cstdio>
#include <string>

#include "render.h"

int main(int argc, char** argv) {
  CLI::App app{"Render samples/raytrace/raytrace.ab (a Whitted ray tracer, one lane per pixel)"};
  ab::raytrace::View view;
  std::string out = "raytrace.png", backend_name = "vulkan", program;
  float angle = 0;
  bool validation = false;
  app.add_option("--width", view.width, "image width in pixels")->check(CLI::Range(1u, 8192u));
  app.add_option("--height", view.height, "image height in pixels")->check(CLI::Range(1u, 8192u));
  app.add_option("--depth", view.depth, "recursion limit of trace()")->check(CLI::Range(0u, 64u));
  app.add_option("--backend", backend_name,
                 "interp, vm, vulkan (the default schedule), global/masked, global/compacted, "
                 "local/subgroup, local/workgroup or local/lane")
      ->capture_default_str();
  app.add_option("--angle", angle, "turn the camera about the scene's centre (radians)");
  app.add_option("--out,-o", out, "the PNG to write")->capture_default_str();
  app.add_option("--program", program, "another raytrace.ab (the default: the sample's)");
  app.add_flag("--validation", validation, "Vulkan: enable the Khronos validation layer");
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    fmt::print(stderr, "error: {}\n", e.what());
    return 2;
  }

  auto backend = ab::raytrace::parse_backend(backend_name);
  if (!backend) {
    fmt::print(stderr, "error: {}\n", backend.error());
    return 2;
  }
  backend->options.context.validation = validation;
  auto module = ab::raytrace::load_program(program);
  if (!module) {
    fmt::print(stderr, "{}{}\n", module.failure().formatted ? "" : "error: ", module.error());
    return 1;
  }
  ab::raytrace::Scene scene = ab::raytrace::default_scene();
  scene.camera = ab::raytrace::orbit_camera(scene, angle);
  auto picture = ab::raytrace::render(*module, scene, view, *backend);
  if (!picture) {
    fmt::print(stderr, "error: {}\n", picture.error());
    return 1;
  }
  if (picture->faulted != 0) {
    fmt::print(stderr, "error: {} pixels faulted; the first: {}\n", picture->faulted,
               picture->first_error);
    return 1;
  }
  std::string error;
  if (!ab::raytrace::write_png(out, view.width, view.height,
                               ab::raytrace::to_rgb8(picture->colours), &error)) {
    fmt::print(stderr, "error: {}\n", error);
    return 1;
  }
  fmt::print("{}: {}x{}, depth {}, {}: {:.3f} s, {} calls, deepest call chain {}", out, view.width,
             view.height, view.depth, backend->name, picture->seconds, picture->stats.calls,
             picture->stats.max_stack_depth);
  if (picture->stats.utilization > 0)
    fmt::print(", utilization {:.3f}", picture->stats.utilization);
  fmt::print("\n");
  return 0;
}
