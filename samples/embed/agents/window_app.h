// What the samples' windows (the game sample, samples/raytrace/window) share around their own
// autobatch run and drawing (window_app.cpp): the window, device, swapchain, pipeline and ImGui;
// the run made on the window's device; the frame loop (events, the overlay, the frame's command
// buffer around the run's rounds and the sample's draw, submission and presentation, the run's
// poll, the GPU timestamps, the screenshot); the keys (C captures an .abtrace, Esc quits); the
// end (--capture, --check, the validation messages) and the teardown. A sample derives from
// WindowApp and supplies its run, its draw, its overlay lines, its capture and its check.
#pragma once

#include <autobatch/autobatch.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "agents_pipeline.h"
#include "swapchain.h"
#include "window_device.h"

namespace agents {

// The options every window sample takes.
struct WindowOptions {
  uint64_t frames = 0;  // 0: until the window is closed
  uint32_t rounds = 2;  // autobatch rounds recorded per frame
  std::string screenshot, capture;
  bool check = false, validation = false, no_validation = false;
};

// The frames' figures, for the overlay and the summary. Times in milliseconds; the sums cover the
// frames after the first three, which compile and upload.
struct FrameFigures {
  uint64_t frames = 0, finished = 0, continued = 0, group_steps = 0, timed = 0;
  double utilization = 0;  // the last finished run's (VulkanStats::utilization after poll())
  double frame_ms = 0;     // wall
  double run_ms = 0, gpu_frame_ms = 0;  // GPU: the restart and rounds; the whole frame
  double sum_frame_ms = 0, sum_run_ms = 0, sum_gpu_frame_ms = 0;
};

class WindowApp {
 public:
  // `title`: the window's and the overlay's; `default_capture`: where C writes without
  // --capture; `output_read_in`: the pipeline stages whose shaders read the run's output.
  WindowApp(const WindowOptions& options, const char* title, std::string default_capture,
            VkPipelineStageFlags output_read_in);
  virtual ~WindowApp();
  WindowApp(const WindowApp&) = delete;
  WindowApp& operator=(const WindowApp&) = delete;
  // Opens the window and runs the frames; the exit status (1 on a failed capture or check, or
  // any validation message).
  int run();

 protected:
  // The sample's module and first batch, options_ set (the run is made from them).
  virtual void create_autobatch() = 0;
  // The graphics pipeline (pipe_) over the run's output region.
  virtual void create_pipeline() = 0;
  // The line printed once the run is ready ("device: ...").
  virtual void print_started() = 0;
  // Recorded before the frame's rounds when the last run finished: the next run's restart.
  virtual void record_restart(VkCommandBuffer cmd) = 0;
  // The sample's draw, inside the render pass.
  virtual void record_draw(VkCommandBuffer cmd) = 0;
  // The overlay's own lines (ImGui::Text), between the title and the status line.
  virtual void overlay_lines() = 0;
  // The summary after the last frame.
  virtual void print_summary() = 0;
  // Writes the batch on screen as an .abtrace, setting status_line_; whether it was written.
  virtual bool capture(const std::string& path) = 0;
  // Compares the run's last result with the CPU interpreter's; whether it matched.
  virtual bool check() = 0;

  // The run of `module_` on `batch` with options_, on the window's device, prepared.
  void start_run(const ab::Batch& batch);
  // The overlay's lines on the run: its group steps, utilization, and the `runs` (what a run
  // makes: "runs", "pictures") finished and the frames that continued one.
  void overlay_run_figures(const char* runs) const;
  // What write_trace's outcome says, in status_line_ and on stdout; whether it was written.
  bool report_capture(const std::string& path, const ab::Status& written);

  WindowOptions args_;
  WindowDevice gpu_;
  Swapchain sc_;
  AgentsPipeline pipe_;
  ab::RunOptions options_;
  std::shared_ptr<const ab::Module> module_;
  std::shared_ptr<ab::VulkanContext> context_;
  std::shared_ptr<ab::VulkanProgram> program_;
  std::unique_ptr<ab::VulkanRun> run_;
  bool last_run_finished_ = true;
  FrameFigures fig_;
  std::string status_line_;

 private:
  void frame(bool last);
  void overlay();
  void record_frame(VkCommandBuffer cmd, uint32_t image, bool screenshot);
  void read_back_frame(bool screenshot);
  void destroy();

  const char* title_;
  std::string default_capture_;
  VkPipelineStageFlags output_read_in_;
  VkDescriptorPool imgui_pool_ = VK_NULL_HANDLE;
  bool imgui_ready_ = false;
};

}  // namespace agents
