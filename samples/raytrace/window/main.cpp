// The ray tracer in a window (issue 47, docs/embedding.md "The ray tracer"): raytrace.ab renders
// the default scene every frame, one lane per pixel, on the window's own Vulkan device, while the
// camera circles the scene. Each frame's command buffer writes the camera into the run's uniform
// buffer, restarts the run, records its rounds and draws the run's output region straight to the
// window; an ImGui overlay shows the frame time, the GPU time of the tracing (timestamp queries),
// the run's group steps and the batch utilization. C captures the frame's batch as an .abtrace
// for `autobatch debug`. Only <autobatch/...> headers and the sample's own scene (samples/raytrace)
// are used; the window, device, swapchain and pipeline are the game sample's
// (samples/embed/agents).
#include <autobatch/autobatch.h>
#include <backends/imgui_impl_glfw.h>
#include <backends/imgui_impl_vulkan.h>
#include <imgui.h>
#include <CLI/CLI.hpp>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>

#include "agents_pipeline.h"
#include "samples/raytrace/render.h"
#include "swapchain.h"
#include "window_device.h"
#include "window_frame.h"

namespace {

using agents::Failure;
using agents::vk_check;
namespace rt = ab::raytrace;

const uint32_t kVertSpirv[] =
#include "raytrace.vert.inc"
    ;
const uint32_t kFragSpirv[] =
#include "raytrace.frag.inc"
    ;

struct Args {
  rt::View view{320, 180, 5};
  uint64_t frames = 0;  // 0: until the window is closed
  uint32_t rounds = 4;
  float speed = 0.02f;  // camera turn per frame, radians
  std::string screenshot, capture;
  bool check = false, validation = false, no_validation = false;
};

// The overlay's figures.
struct Figures {
  uint64_t frames = 0, finished = 0, continued = 0, group_steps = 0, timed = 0;
  double utilization = 0, frame_ms = 0, trace_ms = 0, sum_frame_ms = 0, sum_trace_ms = 0;
};

class App {
 public:
  explicit App(const Args& args) : args_(args), scene_(rt::default_scene()) {}
  ~App() { destroy(); }
  int run();

 private:
  void create_autobatch();
  void init_imgui();
  void overlay();
  void frame(bool last);
  void record_frame(VkCommandBuffer cmd, uint32_t image, bool screenshot);
  void record_camera(VkCommandBuffer cmd);
  void read_back_frame(bool screenshot);
  rt::Scene scene_at(uint64_t frame) const;
  bool capture(const std::string& path);
  bool check();
  void destroy();

  Args args_;
  rt::Scene scene_;
  agents::WindowDevice gpu_;
  agents::Swapchain sc_;
  agents::AgentsPipeline pipe_;
  VkDescriptorPool imgui_pool_ = VK_NULL_HANDLE;
  bool imgui_ready_ = false;

  ab::RunOptions options_;
  std::shared_ptr<const ab::Module> module_;
  std::shared_ptr<ab::VulkanContext> context_;
  std::shared_ptr<ab::VulkanProgram> program_;
  std::unique_ptr<ab::VulkanRun> run_;
  uint64_t camera_offset_ = 0;  // the camera's bytes in the run's uniform buffer
  uint64_t traced_frame_ = 0;   // the frame whose camera the run traces
  bool last_run_finished_ = true;
  Figures fig_;
  std::string status_line_;
};

// The scene as frame `frame` shows it: the camera turned speed x frame about the scene.
rt::Scene App::scene_at(uint64_t frame) const {
  rt::Scene s = scene_;
  s.camera = rt::orbit_camera(scene_, args_.speed * static_cast<float>(frame));
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
  auto context = ab::VulkanContext::create_external(agents::external_device(gpu_));
  if (!context) throw Failure(context.error());
  context_ = *context;
  auto program = ab::VulkanProgram::compile(context_, module_);
  if (!program) throw Failure(program.error());
  program_ = *program;
  options_.stack_depth = rt::stack_depth(args_.view);
  auto run = ab::VulkanRun::create(program_, rt::pixel_batch(scene_at(0), args_.view), options_);
  if (!run) throw Failure(run.error());
  run_ = std::move(*run);
  if (auto s = run_->prepare(); !s) throw Failure(s.error());
}

void App::init_imgui() {
  imgui_pool_ = agents::init_imgui(gpu_, sc_);
  imgui_ready_ = true;
}

// The next frame's camera, written into the run's uniforms before its restart.
void App::record_camera(VkCommandBuffer cmd) {
  const auto basis =
      rt::camera_basis(scene_at(fig_.frames).camera, args_.view.width, args_.view.height);
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
}

void App::record_frame(VkCommandBuffer cmd, uint32_t image, bool screenshot) {
  VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  vk_check(vkBeginCommandBuffer(cmd, &bi), "vkBeginCommandBuffer");
  if (gpu_.queries) {
    vkCmdResetQueryPool(cmd, gpu_.queries, 0, 3);
    vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, gpu_.queries, 0);
  }
  // A new picture once the last one is done; a run that did not finish goes on.
  if (last_run_finished_) {
    record_camera(cmd);
    if (auto s = run_->record_restart(cmd); !s) throw Failure("record_restart: " + s.error());
  }
  if (auto s = run_->record(cmd, args_.rounds); !s) throw Failure("record: " + s.error());
  if (gpu_.queries) vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT, gpu_.queries, 1);

  const ab::DeviceRegion out = run_->buffers().output;
  VkBufferMemoryBarrier barrier{VK_STRUCTURE_TYPE_BUFFER_MEMORY_BARRIER};
  barrier.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT;
  barrier.dstAccessMask = VK_ACCESS_SHADER_READ_BIT;
  barrier.srcQueueFamilyIndex = barrier.dstQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED;
  barrier.buffer = out.buffer;
  barrier.offset = out.offset;
  barrier.size = out.size;
  vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                       VK_PIPELINE_STAGE_FRAGMENT_SHADER_BIT, 0, 0, nullptr, 1, &barrier, 0,
                       nullptr);

  VkClearValue clear{};
  clear.color = {{0.02f, 0.02f, 0.05f, 1.0f}};
  VkRenderPassBeginInfo rbi{VK_STRUCTURE_TYPE_RENDER_PASS_BEGIN_INFO};
  rbi.renderPass = sc_.render_pass;
  rbi.framebuffer = sc_.framebuffers[image];
  rbi.renderArea = {{0, 0}, sc_.extent};
  rbi.clearValueCount = 1;
  rbi.pClearValues = &clear;
  vkCmdBeginRenderPass(cmd, &rbi, VK_SUBPASS_CONTENTS_INLINE);
  vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_GRAPHICS, pipe_.pipeline);
  vkCmdBindDescriptorSets(cmd, VK_PIPELINE_BIND_POINT_GRAPHICS, pipe_.layout, 0, 1, &pipe_.set, 0,
                          nullptr);
  const float w = float(args_.view.width), h = float(args_.view.height);
  const float scale = std::min(float(sc_.extent.width) / w, float(sc_.extent.height) / h);
  struct {
    uint32_t base, lanes, width, height;
    float origin_x, origin_y, scale;
  } push{pipe_.base_word,
         args_.view.width * args_.view.height,
         args_.view.width,
         args_.view.height,
         0.5f * (float(sc_.extent.width) - scale * w),
         0.5f * (float(sc_.extent.height) - scale * h),
         scale};
  vkCmdPushConstants(cmd, pipe_.layout, VK_SHADER_STAGE_FRAGMENT_BIT, 0, sizeof push, &push);
  vkCmdDraw(cmd, 3, 1, 0, 0);
  ImGui_ImplVulkan_RenderDrawData(ImGui::GetDrawData(), cmd);
  vkCmdEndRenderPass(cmd);

  if (screenshot) sc_.record_copy(cmd, image);
  if (gpu_.queries) vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, gpu_.queries, 2);
  vk_check(vkEndCommandBuffer(cmd), "vkEndCommandBuffer");
}

void App::overlay() {
  ImGui_ImplVulkan_NewFrame();
  ImGui_ImplGlfw_NewFrame();
  ImGui::NewFrame();
  ImGui::SetNextWindowPos(ImVec2(10, 10), ImGuiCond_Always);
  ImGui::SetNextWindowBgAlpha(0.75f);
  ImGui::Begin("autobatch ray tracer", nullptr,
               ImGuiWindowFlags_AlwaysAutoResize | ImGuiWindowFlags_NoMove |
                   ImGuiWindowFlags_NoSavedSettings);
  ImGui::Text("picture      %ux%u = %u lanes, depth %u", args_.view.width, args_.view.height,
              args_.view.width * args_.view.height, args_.view.depth);
  ImGui::Text("frame        %.2f ms (wall), %.1f FPS", fig_.frame_ms,
              fig_.frame_ms > 0 ? 1000.0 / fig_.frame_ms : 0.0);
  if (gpu_.queries)
    ImGui::Text("tracing      %.2f ms (GPU, %u rounds)", fig_.trace_ms, args_.rounds);
  ImGui::Text("group steps  %llu", static_cast<unsigned long long>(fig_.group_steps));
  ImGui::Text("utilization  %.1f%%", fig_.utilization * 100);
  ImGui::Text("pictures     %llu finished, %llu frames continued",
              static_cast<unsigned long long>(fig_.finished),
              static_cast<unsigned long long>(fig_.continued));
  if (!status_line_.empty()) ImGui::TextUnformatted(status_line_.c_str());
  ImGui::TextDisabled("C: capture .abtrace   Esc: quit");
  ImGui::End();
  ImGui::Render();
}

void App::frame(bool last) {
  const auto start = std::chrono::steady_clock::now();
  glfwPollEvents();
  overlay();
  const uint32_t image = agents::acquire_image(gpu_, sc_);
  const bool screenshot = last && !args_.screenshot.empty();
  vk_check(vkResetCommandBuffer(gpu_.cmd, 0), "vkResetCommandBuffer");
  record_frame(gpu_.cmd, image, screenshot);
  agents::submit_present_and_wait(gpu_, sc_, image);
  read_back_frame(screenshot);
  fig_.frame_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  if (fig_.frames > 3) {  // the first frames compile and upload
    fig_.sum_frame_ms += fig_.frame_ms;
    fig_.sum_trace_ms += fig_.trace_ms;
    ++fig_.timed;
  }
}

// After the frame's fence: the run's completion and statistics, the timestamps, the screenshot.
void App::read_back_frame(bool screenshot) {
  auto finished = run_->poll();
  if (!finished) throw Failure("poll: " + finished.error());
  last_run_finished_ = *finished;
  ++(*finished ? fig_.finished : fig_.continued);
  fig_.group_steps = run_->stats().group_steps;
  if (*finished) fig_.utilization = run_->stats().utilization;
  if (gpu_.queries) {
    uint64_t t[3] = {};
    if (vkGetQueryPoolResults(gpu_.device, gpu_.queries, 0, 3, sizeof t, t, sizeof t[0],
                              VK_QUERY_RESULT_64_BIT) == VK_SUCCESS)
      fig_.trace_ms = double(t[1] - t[0]) * gpu_.timestamp_period_ns * 1e-6;
  }
  ++fig_.frames;
  if (screenshot) sc_.write_png(gpu_.device, args_.screenshot);
}

// The batch of the picture on screen (its camera), run on the CPU VM into an .abtrace.
bool App::capture(const std::string& path) {
  const ab::Batch batch = rt::pixel_batch(scene_at(traced_frame_), args_.view);
  const ab::Status written = ab::write_trace(path, *module_, batch, options_);
  status_line_ = written ? "captured " + path : "capture: " + written.error();
  std::printf("%s\n", status_line_.c_str());
  if (written) std::printf("open it with: autobatch debug %s\n", path.c_str());
  return written.ok();
}

// The last picture must equal the CPU interpreter's for its camera, bit for bit.
bool App::check() {
  auto gpu = run_->result();
  if (!last_run_finished_ || !gpu) {
    std::printf("check: FAILED (the last picture is not finished)\n");
    return false;
  }
  const ab::Batch batch = rt::pixel_batch(scene_at(traced_frame_), args_.view);
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

int App::run() {
  gpu_.title = "autobatch ray tracer";
  gpu_.create(args_.validation, args_.no_validation);
  sc_.create(gpu_, !args_.screenshot.empty());
  create_autobatch();
  pipe_.create(gpu_, sc_, run_->buffers().output,
               {kVertSpirv, sizeof kVertSpirv, kFragSpirv, sizeof kFragSpirv,
                VK_SHADER_STAGE_FRAGMENT_BIT, 28});
  init_imgui();
  std::printf("device: %s; validation layer: %s; %ux%u pixels, depth %u\n",
              context_->device().name.c_str(), gpu_.validation ? "on" : "off", args_.view.width,
              args_.view.height, args_.view.depth);
  bool c_was_down = false;
  while (!glfwWindowShouldClose(gpu_.window)) {
    const bool last = args_.frames && fig_.frames + 1 == args_.frames;
    frame(last);
    if (glfwGetKey(gpu_.window, GLFW_KEY_ESCAPE) == GLFW_PRESS)
      glfwSetWindowShouldClose(gpu_.window, 1);
    const bool c_down = glfwGetKey(gpu_.window, GLFW_KEY_C) == GLFW_PRESS;
    if (c_down && !c_was_down) capture(args_.capture.empty() ? "raytrace.abtrace" : args_.capture);
    c_was_down = c_down;
    if (last) break;
  }
  vk_check(vkDeviceWaitIdle(gpu_.device), "vkDeviceWaitIdle");
  if (fig_.timed)
    std::printf(
        "frames: %llu; mean frame %.2f ms (wall), tracing %.2f ms (GPU) over frames "
        "5..%llu; utilization %.3f\n",
        static_cast<unsigned long long>(fig_.frames), fig_.sum_frame_ms / fig_.timed,
        fig_.sum_trace_ms / fig_.timed, static_cast<unsigned long long>(fig_.frames),
        fig_.utilization);
  bool ok = true;
  if (args_.frames && !args_.capture.empty()) ok = capture(args_.capture);
  if (args_.check) ok = check() && ok;
  destroy();
  std::printf("validation messages: %d\n", agents::validation_messages());
  return ok && agents::validation_messages() == 0 ? 0 : 1;
}

void App::destroy() {
  if (gpu_.device) vkDeviceWaitIdle(gpu_.device);
  if (imgui_ready_) {
    agents::shutdown_imgui();
    imgui_ready_ = false;
  }
  run_.reset();
  program_.reset();
  context_.reset();
  if (gpu_.device) {
    pipe_.destroy(gpu_.device);
    if (imgui_pool_) vkDestroyDescriptorPool(gpu_.device, imgui_pool_, nullptr);
    imgui_pool_ = VK_NULL_HANDLE;
    sc_.destroy(gpu_.device);
  }
  gpu_.destroy();
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
  app.add_option("--frames", a.frames, "exit 0 after N frames (default: until closed)")
      ->check(CLI::Range(uint64_t{1}, uint64_t{1'000'000'000}));
  app.add_option("--rounds", a.rounds, "autobatch rounds recorded per frame")
      ->check(CLI::Range(1u, 64u));
  app.add_option("--speed", a.speed, "camera turn per frame, radians");
  app.add_option("--screenshot", a.screenshot, "write the last frame as a PNG (needs --frames)");
  app.add_option("--capture", a.capture,
                 "where C (and the end of a --frames run) writes the picture's batch as an "
                 ".abtrace for `autobatch debug` (default for C: raytrace.abtrace)");
  app.add_flag("--check", a.check,
               "after the last frame, compare the picture with the CPU interpreter's");
  app.add_flag("--validation", a.validation, "require the Khronos validation layer");
  app.add_flag("--no-validation", a.no_validation, "do not use the validation layer")
      ->excludes("--validation");
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 2;
  }
  const bool needs_frames = !a.screenshot.empty() || a.check;
  if (needs_frames && a.frames == 0) {
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
