#include "window_app.h"

#include <backends/imgui_impl_glfw.h>
#include <backends/imgui_impl_vulkan.h>
#include <imgui.h>

#include <cstdio>
#include <utility>

#include "common.h"
#include "window_frame.h"

namespace agents {

WindowApp::WindowApp(const WindowOptions& options, const char* title, std::string default_capture,
                     VkPipelineStageFlags output_read_in)
    : args_(options),
      title_(title),
      default_capture_(std::move(default_capture)),
      output_read_in_(output_read_in) {}

WindowApp::~WindowApp() {
  destroy();
}

void WindowApp::start_run(const ab::Batch& batch) {
  auto context = ab::VulkanContext::create_external(external_device(gpu_));
  if (!context) throw Failure(context.error());
  context_ = *context;
  auto program = ab::VulkanProgram::compile(context_, module_);
  if (!program) throw Failure(program.error());
  program_ = *program;
  auto run = ab::VulkanRun::create(program_, batch, options_);
  if (!run) throw Failure(run.error());
  run_ = std::move(*run);
  if (auto s = run_->prepare(); !s) throw Failure(s.error());
}

bool WindowApp::report_capture(const std::string& path, const ab::Status& written) {
  status_line_ = written ? "captured " + path : "capture: " + written.error();
  std::printf("%s\n", status_line_.c_str());
  if (written) std::printf("open it with: autobatch debug %s\n", path.c_str());
  return written.ok();
}

// The figures of the frames before this one.
void WindowApp::overlay() {
  ImGui_ImplVulkan_NewFrame();
  ImGui_ImplGlfw_NewFrame();
  ImGui::NewFrame();
  ImGui::SetNextWindowPos(ImVec2(10, 10), ImGuiCond_Always);
  ImGui::SetNextWindowBgAlpha(0.75f);
  ImGui::Begin(title_, nullptr,
               ImGuiWindowFlags_AlwaysAutoResize | ImGuiWindowFlags_NoMove |
                   ImGuiWindowFlags_NoSavedSettings);
  overlay_lines();
  if (!status_line_.empty()) ImGui::TextUnformatted(status_line_.c_str());
  ImGui::TextDisabled("C: capture .abtrace   Esc: quit");
  ImGui::End();
  ImGui::Render();
}

void WindowApp::overlay_run_figures(const char* runs) const {
  ImGui::Text("group steps  %llu this frame", static_cast<unsigned long long>(fig_.group_steps));
  ImGui::Text("utilization  %.1f%%", fig_.utilization * 100);
  ImGui::Text("%-12s %llu finished, %llu frames continued", runs,
              static_cast<unsigned long long>(fig_.finished),
              static_cast<unsigned long long>(fig_.continued));
}

void WindowApp::record_frame(VkCommandBuffer cmd, uint32_t image, bool screenshot) {
  VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  vk_check(vkBeginCommandBuffer(cmd, &bi), "vkBeginCommandBuffer");
  if (gpu_.queries) {
    vkCmdResetQueryPool(cmd, gpu_.queries, 0, 3);
    vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, gpu_.queries, 0);
  }
  // A new run once the last one is done; a run that did not finish in its frame goes on.
  if (last_run_finished_) record_restart(cmd);
  if (auto s = run_->record(cmd, args_.rounds); !s) throw Failure("record: " + s.error());
  if (gpu_.queries) vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT, gpu_.queries, 1);

  // The run's writes to its output region, before the draw's shaders read it.
  const ab::DeviceRegion out = run_->buffers().output;
  VkBufferMemoryBarrier barrier{VK_STRUCTURE_TYPE_BUFFER_MEMORY_BARRIER};
  barrier.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT;
  barrier.dstAccessMask = VK_ACCESS_SHADER_READ_BIT;
  barrier.srcQueueFamilyIndex = barrier.dstQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED;
  barrier.buffer = out.buffer;
  barrier.offset = out.offset;
  barrier.size = out.size;
  vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, output_read_in_, 0, 0, nullptr, 1,
                       &barrier, 0, nullptr);

  VkClearValue clear{};
  clear.color = {{0.02f, 0.02f, 0.05f, 1.0f}};
  VkRenderPassBeginInfo rbi{VK_STRUCTURE_TYPE_RENDER_PASS_BEGIN_INFO};
  rbi.renderPass = sc_.render_pass;
  rbi.framebuffer = sc_.framebuffers[image];
  rbi.renderArea = {{0, 0}, sc_.extent};
  rbi.clearValueCount = 1;
  rbi.pClearValues = &clear;
  vkCmdBeginRenderPass(cmd, &rbi, VK_SUBPASS_CONTENTS_INLINE);
  record_draw(cmd);
  ImGui_ImplVulkan_RenderDrawData(ImGui::GetDrawData(), cmd);
  vkCmdEndRenderPass(cmd);

  if (screenshot) sc_.record_copy(cmd, image);
  if (gpu_.queries) vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, gpu_.queries, 2);
  vk_check(vkEndCommandBuffer(cmd), "vkEndCommandBuffer");
}

void WindowApp::frame(bool last) {
  const auto start = std::chrono::steady_clock::now();
  glfwPollEvents();
  overlay();
  const uint32_t image = acquire_image(gpu_, sc_);
  const bool screenshot = last && !args_.screenshot.empty();
  vk_check(vkResetCommandBuffer(gpu_.cmd, 0), "vkResetCommandBuffer");
  record_frame(gpu_.cmd, image, screenshot);
  submit_present_and_wait(gpu_, sc_, image);
  read_back_frame(screenshot);
  fig_.frame_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  if (fig_.frames > 3) {  // the first frames compile and upload
    fig_.sum_frame_ms += fig_.frame_ms;
    fig_.sum_run_ms += fig_.run_ms;
    fig_.sum_gpu_frame_ms += fig_.gpu_frame_ms;
    ++fig_.timed;
  }
}

// After the frame's fence: the run's completion and statistics (poll() reads the run's counters,
// no lane state), the timestamps, the screenshot.
void WindowApp::read_back_frame(bool screenshot) {
  auto finished = run_->poll();
  if (!finished) throw Failure("poll: " + finished.error());
  last_run_finished_ = *finished;
  ++(*finished ? fig_.finished : fig_.continued);
  fig_.group_steps = run_->stats().group_steps;
  if (*finished) fig_.utilization = run_->stats().utilization;
  if (gpu_.queries) {
    uint64_t t[3] = {};
    if (vkGetQueryPoolResults(gpu_.device, gpu_.queries, 0, 3, sizeof t, t, sizeof t[0],
                              VK_QUERY_RESULT_64_BIT) == VK_SUCCESS) {
      fig_.run_ms = double(t[1] - t[0]) * gpu_.timestamp_period_ns * 1e-6;
      fig_.gpu_frame_ms = double(t[2] - t[0]) * gpu_.timestamp_period_ns * 1e-6;
    }
  }
  ++fig_.frames;
  if (screenshot) sc_.write_png(gpu_.device, args_.screenshot);
}

int WindowApp::run() {
  gpu_.title = title_;
  gpu_.create(args_.validation, args_.no_validation);
  sc_.create(gpu_, !args_.screenshot.empty());
  create_autobatch();
  create_pipeline();
  imgui_pool_ = init_imgui(gpu_, sc_);
  imgui_ready_ = true;
  print_started();
  bool c_was_down = false;
  while (!glfwWindowShouldClose(gpu_.window)) {
    const bool last = args_.frames && fig_.frames + 1 == args_.frames;
    frame(last);
    if (glfwGetKey(gpu_.window, GLFW_KEY_ESCAPE) == GLFW_PRESS)
      glfwSetWindowShouldClose(gpu_.window, 1);
    const bool c_down = glfwGetKey(gpu_.window, GLFW_KEY_C) == GLFW_PRESS;
    if (c_down && !c_was_down) capture(args_.capture.empty() ? default_capture_ : args_.capture);
    c_was_down = c_down;
    if (last) break;
  }
  vk_check(vkDeviceWaitIdle(gpu_.device), "vkDeviceWaitIdle");
  if (fig_.timed) print_summary();
  bool ok = true;
  if (args_.frames && !args_.capture.empty()) ok = capture(args_.capture);
  if (args_.check) ok = check() && ok;
  destroy();  // so that messages about the teardown count too
  std::printf("validation messages: %d\n", validation_messages());
  return ok && validation_messages() == 0 ? 0 : 1;
}

void WindowApp::destroy() {
  if (gpu_.device) vkDeviceWaitIdle(gpu_.device);
  if (imgui_ready_) {
    shutdown_imgui();
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

}  // namespace agents
