// The ray tracer in a window (issue 47, docs/embedding.md "The ray tracer"): raytrace.ab renders
// the default scene every frame, one lane per pixel, on the window's own Vulkan device, while the
// camera circles the scene. Each frame's command buffer writes the camera into the run's uniform
// buffer, restarts the run, records its rounds and draws the run's output region straight to the
// window; an ImGui overlay shows the frame time, the GPU time of the tracing (timestamp queries),
// the run's group steps and the batch utilization. C captures the frame's batch as an .abtrace
// for `autobatch debug`. Only <autobatch/...> headers and the sample's own scene (samples/raytrace)
// are used; the window, device, swapchain, pipeline, frame loop and teardown are the game
// sample's (samples/embed/agents: window_app.h).
#include <autobatch/autobatch.h>
#include <imgui.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdio>
#include <string>

#include "common.h"
#include "samples/raytrace/render.h"
#include "window_app.h"

namespace {

using agents::Failure;
namespace rt = ab::raytrace;

const uint32_t kVertSpirv[] =
#include "raytrace.vert.inc"
    ;
const uint32_t kFragSpirv[] =
#include "raytrace.frag.inc"
    ;

struct Args {
  rt::View view{320, 180, 5};
  agents::WindowOptions window{.rounds = 4};  // frames, rounds, screenshot, capture, ...
  float speed = 0.02f;                        // camera turn per frame, radians
};

class App final : public agents::WindowApp {
 public:
  explicit App(const Args& args)
      : WindowApp(args.window, "autobatch ray tracer", "raytrace.abtrace",
                  VK_PIPELINE_STAGE_FRAGMENT_SHADER_BIT),
        view_(args.view),
        speed_(args.speed),
        scene_(rt::default_scene()) {}

 private:
  void create_autobatch() override;
  void create_pipeline() override {
    pipe_.create(gpu_, sc_, run_->buffers().output,
                 {kVertSpirv, sizeof kVertSpirv, kFragSpirv, sizeof kFragSpirv,
                  VK_SHADER_STAGE_FRAGMENT_BIT, 28});
  }
  void print_started() override {
    std::printf("device: %s; validation layer: %s; %ux%u pixels, depth %u\n",
                context_->device().name.c_str(), gpu_.validation ? "on" : "off", view_.width,
                view_.height, view_.depth);
  }
  void record_restart(VkCommandBuffer cmd) override;
  void record_draw(VkCommandBuffer cmd) override;
  void overlay_lines() override;
  void print_summary() override;
  bool capture(const std::string& path) override;
  bool check() override;
  rt::Scene scene_at(uint64_t frame) const;

  rt::View view_;
  float speed_;
  rt::Scene scene_;
  uint64_t camera_offset_ = 0;  // the camera's bytes in the run's uniform buffer
  uint64_t traced_frame_ = 0;   // the frame whose camera the run traces
};

// The scene as frame `frame` shows it: the camera turned speed x frame about the scene.
rt::Scene App::scene_at(uint64_t frame) const {
  rt::Scene s = scene_;
  s.camera = rt::orbit_camera(scene_, speed_ * static_cast<float>(frame));
  return s;
}

void App::create_autobatch() {
  auto module = rt::load_program();
  if (!module) throw Failure(module.error());
  module_ = *module;
  for (const ab::ValueInfo& u : module_->uniforms()) {
    if (u.name == "camera") break;
    camera_offset_ += uint64_t{u.words} * 4;
  }
  options_.stack_depth = rt::stack_depth(view_);
  start_run(rt::pixel_batch(scene_at(0), view_));
}

// A new picture: the frame's camera written into the run's uniforms, then the run's restart.
void App::record_restart(VkCommandBuffer cmd) {
  const auto basis = rt::camera_basis(scene_at(fig_.frames).camera, view_.width, view_.height);
  const ab::RunBuffers buffers = run_->buffers();
  vkCmdUpdateBuffer(cmd, buffers.uniforms, camera_offset_, sizeof basis, basis.data());
  VkBufferMemoryBarrier barrier{VK_STRUCTURE_TYPE_BUFFER_MEMORY_BARRIER};
  barrier.srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT;
  barrier.dstAccessMask = VK_ACCESS_SHADER_READ_BIT;
  barrier.srcQueueFamilyIndex = barrier.dstQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED;
  barrier.buffer = buffers.uniforms;
  barrier.offset = camera_offset_;
  barrier.size = sizeof basis;
  vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0,
                       0, nullptr, 1, &barrier, 0, nullptr);
  traced_frame_ = fig_.frames;
  if (auto s = run_->record_restart(cmd); !s) throw Failure("record_restart: " + s.error());
}

// The picture, scaled to the window and centred.
void App::record_draw(VkCommandBuffer cmd) {
  vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_GRAPHICS, pipe_.pipeline);
  vkCmdBindDescriptorSets(cmd, VK_PIPELINE_BIND_POINT_GRAPHICS, pipe_.layout, 0, 1, &pipe_.set, 0,
                          nullptr);
  const float w = float(view_.width), h = float(view_.height);
  const float scale = std::min(float(sc_.extent.width) / w, float(sc_.extent.height) / h);
  struct {
    uint32_t base, lanes, width, height;
    float origin_x, origin_y, scale;
  } push{pipe_.base_word,
         view_.width * view_.height,
         view_.width,
         view_.height,
         0.5f * (float(sc_.extent.width) - scale * w),
         0.5f * (float(sc_.extent.height) - scale * h),
         scale};
  vkCmdPushConstants(cmd, pipe_.layout, VK_SHADER_STAGE_FRAGMENT_BIT, 0, sizeof push, &push);
  vkCmdDraw(cmd, 3, 1, 0, 0);
}

void App::overlay_lines() {
  ImGui::Text("picture      %ux%u = %u lanes, depth %u", view_.width, view_.height,
              view_.width * view_.height, view_.depth);
  ImGui::Text("frame        %.2f ms (wall), %.1f FPS", fig_.frame_ms,
              fig_.frame_ms > 0 ? 1000.0 / fig_.frame_ms : 0.0);
  if (gpu_.queries) ImGui::Text("tracing      %.2f ms (GPU, %u rounds)", fig_.run_ms, args_.rounds);
  overlay_run_figures("pictures");
}

void App::print_summary() {
  std::printf(
      "frames: %llu; mean frame %.2f ms (wall), tracing %.2f ms (GPU) over frames "
      "5..%llu; utilization %.3f\n",
      static_cast<unsigned long long>(fig_.frames), fig_.sum_frame_ms / fig_.timed,
      fig_.sum_run_ms / fig_.timed, static_cast<unsigned long long>(fig_.frames), fig_.utilization);
}

// The batch of the picture on screen (its camera), run on the CPU VM into an .abtrace.
bool App::capture(const std::string& path) {
  const ab::Batch batch = rt::pixel_batch(scene_at(traced_frame_), view_);
  return report_capture(path, ab::write_trace(path, *module_, batch, options_));
}

// The last picture must equal the CPU interpreter's for its camera, bit for bit.
bool App::check() {
  auto gpu = run_->result();
  if (!last_run_finished_ || !gpu) {
    std::printf("check: FAILED (the last picture is not finished)\n");
    return false;
  }
  const ab::Batch batch = rt::pixel_batch(scene_at(traced_frame_), view_);
  auto cpu = module_->run_cpu(batch, options_, ab::CpuBackend::Interpreter);
  if (!cpu) {
    std::printf("check: FAILED (the interpreter: %s)\n", cpu.error().c_str());
    return false;
  }
  size_t differ = 0;
  for (size_t i = 0; i < cpu->outputs.size(); ++i)
    differ += cpu->outputs[i] != gpu->outputs[i];
  const bool ok = differ == 0 && gpu->errors.empty();
  std::printf(
      "check: %s: frame %llu's picture, %zu words differ from the interpreter's, %zu "
      "faulted\n",
      ok ? "ok" : "FAILED", static_cast<unsigned long long>(traced_frame_), differ,
      gpu->errors.size());
  return ok;
}

// Returns -1 to go on, else the exit status (0 for --help, 2 for a bad option).
int parse_args(int argc, char** argv, Args& a) {
  CLI::App app{
      "The ray tracer (samples/raytrace/raytrace.ab) in a window, one lane per pixel, "
      "the camera circling the scene. Keys: C capture .abtrace, Esc quit."};
  app.add_option("--width", a.view.width, "picture width in pixels (lanes per row)")
      ->check(CLI::Range(1u, 4096u));
  app.add_option("--height", a.view.height, "picture height in pixels")
      ->check(CLI::Range(1u, 4096u));
  app.add_option("--depth", a.view.depth, "recursion limit of trace()")->check(CLI::Range(0u, 64u));
  app.add_option("--frames", a.window.frames, "exit 0 after N frames (default: until closed)")
      ->check(CLI::Range(uint64_t{1}, uint64_t{1'000'000'000}));
  app.add_option("--rounds", a.window.rounds, "autobatch rounds recorded per frame")
      ->check(CLI::Range(1u, 64u));
  app.add_option("--speed", a.speed, "camera turn per frame, radians");
  app.add_option("--screenshot", a.window.screenshot,
                 "write the last frame as a PNG (needs --frames)");
  app.add_option("--capture", a.window.capture,
                 "where C (and the end of a --frames run) writes the picture's batch as an "
                 ".abtrace for `autobatch debug` (default for C: raytrace.abtrace)");
  app.add_flag("--check", a.window.check,
               "after the last frame, compare the picture with the CPU interpreter's");
  app.add_flag("--validation", a.window.validation, "require the Khronos validation layer");
  app.add_flag("--no-validation", a.window.no_validation, "do not use the validation layer")
      ->excludes("--validation");
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 2;
  }
  const bool needs_frames = !a.window.screenshot.empty() || a.window.check;
  if (needs_frames && a.window.frames == 0) {
    std::fprintf(stderr, "error: --screenshot and --check need --frames N\n");
    return 2;
  }
  return -1;
}

}  // namespace

int main(int argc, char** argv) {
  Args args;
  if (int status = parse_args(argc, argv, args); status >= 0) return status;
  try {
    App app(args);
    return app.run();
  } catch (const Failure& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
