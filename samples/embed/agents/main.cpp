// The game sample (issue 12, docs/embedding.md "The game sample"): a GLFW + Vulkan window that
// animates tens of thousands of agents whose per-frame decision is agents.ab, one lane per agent.
// The app owns the instance, device, queue and swapchain; autobatch runs on them. Each frame's
// command buffer holds the run's restart (its inputs copied on the GPU from the previous frame's
// outputs), its rounds, a barrier, and a render pass whose vertex shader reads the agents straight
// from the run's output region; an ImGui overlay shows the frame and autobatch times (timestamp
// queries), the run's group steps and utilization. Only <autobatch/...> headers are used, the
// .abtrace capture (ab::write_trace) included.
//
// This file: the options, the autobatch run, the frames, the overlay, capture and --check; the
// window and device are in window_device.cpp, the swapchain in swapchain.cpp, the graphics
// pipeline in agents_pipeline.cpp.
#include <autobatch/autobatch.h>
#include <backends/imgui_impl_glfw.h>
#include <backends/imgui_impl_vulkan.h>
#include <imgui.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "agents_pipeline.h"
#include "swapchain.h"
#include "window_device.h"
#include "window_frame.h"

namespace {

using agents::Failure;
using agents::kAgentWords;
using agents::vk_check;

const char* kUsage =
    "usage: embed_agents [options]\n"
    "  Animates agents whose per-frame decision is agents.ab, run by autobatch on the window's\n"
    "  own Vulkan device; each frame's outputs are the next frame's inputs, on the GPU.\n"
    "options:\n"
    "  --agents N          number of agents (lanes), default 10000\n"
    "  --frames N          exit 0 after N frames (default: run until the window is closed)\n"
    "  --rounds N          autobatch rounds recorded per frame, default 2\n"
    "  --program FILE      the agents program (default: agents.ab next to the sources)\n"
    "  --screenshot FILE   write the window's last frame as a PNG (needs --frames)\n"
    "  --capture FILE      where C (and the end of a --frames run) writes the current batch as an\n"
    "                      .abtrace for `autobatch debug FILE` (default for C: agents.abtrace)\n"
    "  --check             after the last frame, compare every agent with the CPU interpreter\n"
    "                      chaining as many runs (use a small --agents); exit 1 if any differs\n"
    "  --validation        require the Khronos validation layer (else it is used when installed);\n"
    "                      any validation message makes the exit status 1\n"
    "  --no-validation     do not use the validation layer (for timings)\n"
    "  --help              this text\n"
    "keys: C capture, Esc quit\n";

struct Args {
  uint32_t agents = 10000;
  uint64_t frames = 0;  // 0: until closed
  uint32_t rounds = 2;
  std::string program = AB_AGENTS_PROGRAM;
  std::string screenshot, capture;
  bool check = false, validation = false, no_validation = false;
};

bool parse_uint(const std::string& s, uint64_t max, uint64_t& out) {
  if (s.empty() || s.size() > 19 || s.find_first_not_of("0123456789") != std::string::npos)
    return false;
  out = std::stoull(s);
  return out >= 1 && out <= max;
}

// Returns -1 to go on, else the exit status (0 for --help, 2 for a bad flag).
int parse_args(int argc, char** argv, Args& a) {
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--help" || flag == "-h") {
      std::fputs(kUsage, stdout);
      return 0;
    }
    if (flag == "--check") {
      a.check = true;
      continue;
    }
    if (flag == "--validation" || flag == "--no-validation") {
      (flag == "--validation" ? a.validation : a.no_validation) = true;
      continue;
    }
    const bool takes_value = flag == "--agents" || flag == "--frames" || flag == "--rounds" ||
                             flag == "--program" || flag == "--screenshot" || flag == "--capture";
    if (!takes_value) {
      std::fprintf(stderr, "error: unknown option '%s' (see --help)\n", flag.c_str());
      return 2;
    }
    if (i + 1 >= argc) {
      std::fprintf(stderr, "error: %s needs a value (see --help)\n", flag.c_str());
      return 2;
    }
    const std::string value = argv[++i];
    uint64_t n = 0;
    if (flag == "--agents" || flag == "--frames" || flag == "--rounds") {
      const uint64_t max = flag == "--agents" ? 4'000'000 : flag == "--rounds" ? 64 : 1'000'000'000;
      if (!parse_uint(value, max, n)) {
        std::fprintf(stderr, "error: %s takes a whole number from 1 to %llu, not '%s'\n",
                     flag.c_str(), static_cast<unsigned long long>(max), value.c_str());
        return 2;
      }
      if (flag == "--agents") a.agents = static_cast<uint32_t>(n);
      if (flag == "--frames") a.frames = n;
      if (flag == "--rounds") a.rounds = static_cast<uint32_t>(n);
    } else if (flag == "--program") {
      a.program = value;
    } else if (flag == "--screenshot") {
      a.screenshot = value;
    } else {
      a.capture = value;
    }
  }
  if (!a.screenshot.empty() && a.frames == 0) {
    std::fprintf(stderr, "error: --screenshot needs --frames N (it is taken after the last one)\n");
    return 2;
  }
  if (a.validation && a.no_validation) {
    std::fprintf(stderr, "error: --validation and --no-validation exclude each other\n");
    return 2;
  }
  if (a.check && a.frames == 0) {
    std::fprintf(stderr, "error: --check needs --frames N\n");
    return 2;
  }
  return -1;
}

// The initial agents: spread over the world, the four kinds interleaved so that neighbouring lanes
// (one subgroup) run different code.
ab::Batch initial_batch(uint32_t agents) {
  ab::Batch batch;
  batch.lanes = agents;
  std::vector<uint32_t> words;
  words.reserve(size_t{agents} * kAgentWords);
  uint32_t h = 12345;
  auto next = [&] {
    h ^= h << 13;
    h ^= h >> 17;
    h ^= h << 5;
    return h;
  };
  for (uint32_t l = 0; l < agents; ++l) {
    const int32_t x = static_cast<int32_t>(next() % 65536),
                  y = static_cast<int32_t>(next() % 65536);
    const int32_t vx = static_cast<int32_t>(next() % 401) - 200;
    const int32_t vy = static_cast<int32_t>(next() % 401) - 200;
    const int32_t kind = static_cast<int32_t>(l % 4), mood = static_cast<int32_t>(next() % 32);
    const int32_t energy = static_cast<int32_t>(next() % 1001);
    const uint32_t seed = next();
    const int32_t t = static_cast<int32_t>(next() % 1000);
    for (int32_t v : {x, y, vx, vy, kind, mood, energy})
      words.push_back(static_cast<uint32_t>(v));
    words.push_back(seed);
    words.push_back(static_cast<uint32_t>(t));
  }
  batch.inputs = {std::move(words)};
  return batch;
}

class App {
 public:
  explicit App(const Args& args) : args_(args) {}
  ~App() { destroy(); }
  int run();

 private:
  void create_autobatch();
  void init_imgui();
  void frame(bool last);
  void record_frame(VkCommandBuffer cmd, uint32_t image, bool screenshot);
  bool capture(const std::string& path);
  bool check();
  void destroy();

  Args args_;
  agents::WindowDevice gpu_;
  agents::Swapchain sc_;
  agents::AgentsPipeline pipe_;
  VkDescriptorPool imgui_pool_ = VK_NULL_HANDLE;
  bool imgui_ready_ = false;

  ab::Batch batch_;
  ab::RunOptions options_;
  std::shared_ptr<const ab::Module> module_;
  std::shared_ptr<ab::VulkanContext> context_;
  std::shared_ptr<ab::VulkanProgram> program_;
  std::unique_ptr<ab::VulkanRun> run_;

  // Per-frame figures for the overlay and the summary.
  uint64_t frames_ = 0, runs_completed_ = 0, unfinished_frames_ = 0;
  bool last_run_finished_ = true;
  uint64_t group_steps_ = 0;
  double utilization_ = 0;  // the last finished frame's (VulkanStats::utilization after poll())
  double frame_ms_ = 0, autobatch_ms_ = 0, gpu_frame_ms_ = 0;
  double sum_frame_ms_ = 0, sum_autobatch_ms_ = 0, sum_gpu_frame_ms_ = 0;
  uint64_t timed_frames_ = 0;
  std::chrono::steady_clock::time_point last_frame_end_;
  std::string status_line_;
};

void App::create_autobatch() {
  std::vector<ab::SourceDiagnostic> diagnostics;
  // Under its absolute path: a capture names the module's file, which `autobatch debug` then
  // opens from any directory.
  ab::CompileOptions compile;
  compile.file = std::filesystem::absolute(args_.program).string();
  auto module = ab::Module::load(args_.program, compile, &diagnostics);
  if (!module) throw Failure(module.error());
  module_ = *module;
  if (module_->inputs().size() != 1 || module_->inputs()[0].words != kAgentWords ||
      module_->output().words != kAgentWords)
    throw Failure(args_.program + ": main must take and return one Agent of " +
                  std::to_string(kAgentWords) + " words");

  auto context = ab::VulkanContext::create_external(agents::external_device(gpu_));
  if (!context) throw Failure(context.error());
  context_ = *context;
  auto program = ab::VulkanProgram::compile(context_, module_);
  if (!program) throw Failure(program.error());
  program_ = *program;
  batch_ = initial_batch(args_.agents);
  options_.seed = 7;
  // agents.ab calls at most 6 deep (main, decide x4, hash): a small stack keeps the run's stack
  // arena within maxStorageBufferRange at 50,000 agents (the default, 1024, does not fit).
  options_.stack_depth = 16;
  auto run = ab::VulkanRun::create(program_, batch_, options_);
  if (!run) throw Failure(run.error());
  run_ = std::move(*run);
  if (auto s = run_->prepare(); !s) throw Failure(s.error());
}

void App::init_imgui() {
  imgui_pool_ = agents::init_imgui(gpu_, sc_);
  imgui_ready_ = true;
}

void App::record_frame(VkCommandBuffer cmd, uint32_t image, bool screenshot) {
  VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  vk_check(vkBeginCommandBuffer(cmd, &bi), "vkBeginCommandBuffer");
  if (gpu_.queries) {
    vkCmdResetQueryPool(cmd, gpu_.queries, 0, 3);
    vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, gpu_.queries, 0);
  }
  // The agents' decision: a restart from the previous frame's outputs (copied on the GPU), then
  // the rounds. A run that did not finish in its frame goes on (no restart) in the next.
  if (frames_ > 0 && last_run_finished_) {
    if (auto s = run_->record_restart(cmd, {run_->buffers().output}); !s)
      throw Failure("record_restart: " + s.error());
  }
  if (auto s = run_->record(cmd, args_.rounds); !s) throw Failure("record: " + s.error());
  if (gpu_.queries) vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT, gpu_.queries, 1);

  // The run's writes to its output region, before the vertex shader reads it.
  const ab::DeviceRegion out = run_->buffers().output;
  VkBufferMemoryBarrier barrier{VK_STRUCTURE_TYPE_BUFFER_MEMORY_BARRIER};
  barrier.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT;
  barrier.dstAccessMask = VK_ACCESS_SHADER_READ_BIT;
  barrier.srcQueueFamilyIndex = barrier.dstQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED;
  barrier.buffer = out.buffer;
  barrier.offset = out.offset;
  barrier.size = out.size;
  vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                       VK_PIPELINE_STAGE_VERTEX_SHADER_BIT, 0, 0, nullptr, 1, &barrier, 0, nullptr);

  VkClearValue clear{};
  clear.color = {{0.02f, 0.02f, 0.05f, 1.0f}};
  VkRenderPassBeginInfo rbi{VK_STRUCTURE_TYPE_RENDER_PASS_BEGIN_INFO};
  rbi.renderPass = sc_.render_pass;
  rbi.framebuffer = sc_.framebuffers[image];
  rbi.renderArea = {{0, 0}, sc_.extent};
  rbi.clearValueCount = 1;
  rbi.pClearValues = &clear;
  vkCmdBeginRenderPass(cmd, &rbi, VK_SUBPASS_CONTENTS_INLINE);
  pipe_.record_draw(cmd, args_.agents, sc_.extent);
  ImGui_ImplVulkan_RenderDrawData(ImGui::GetDrawData(), cmd);
  vkCmdEndRenderPass(cmd);

  if (screenshot) sc_.record_copy(cmd, image);
  if (gpu_.queries) vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, gpu_.queries, 2);
  vk_check(vkEndCommandBuffer(cmd), "vkEndCommandBuffer");
}

void App::frame(bool last) {
  const auto start = std::chrono::steady_clock::now();
  glfwPollEvents();

  // The overlay shows the figures of the frames before this one.
  ImGui_ImplVulkan_NewFrame();
  ImGui_ImplGlfw_NewFrame();
  ImGui::NewFrame();
  ImGui::SetNextWindowPos(ImVec2(10, 10), ImGuiCond_Always);
  ImGui::SetNextWindowBgAlpha(0.75f);
  ImGui::Begin("autobatch agents", nullptr,
               ImGuiWindowFlags_AlwaysAutoResize | ImGuiWindowFlags_NoMove |
                   ImGuiWindowFlags_NoSavedSettings);
  ImGui::Text("agents       %u (lanes)", args_.agents);
  ImGui::Text("FPS          %.1f", frame_ms_ > 0 ? 1000.0 / frame_ms_ : 0.0);
  ImGui::Text("frame        %.2f ms (wall)", frame_ms_);
  if (gpu_.queries) {
    ImGui::Text("GPU frame    %.2f ms", gpu_frame_ms_);
    ImGui::Text("autobatch    %.2f ms (restart + %u rounds)", autobatch_ms_, args_.rounds);
  }
  ImGui::Text("group steps  %llu this frame", static_cast<unsigned long long>(group_steps_));
  ImGui::Text("utilization  %.1f%%", utilization_ * 100);
  ImGui::Text("runs         %llu finished, %llu frames continued",
              static_cast<unsigned long long>(runs_completed_),
              static_cast<unsigned long long>(unfinished_frames_));
  if (!status_line_.empty()) ImGui::TextUnformatted(status_line_.c_str());
  ImGui::TextDisabled("C: capture .abtrace   Esc: quit");
  ImGui::End();
  ImGui::Render();

  const uint32_t image = agents::acquire_image(gpu_, sc_);
  const bool screenshot = last && !args_.screenshot.empty();
  vk_check(vkResetCommandBuffer(gpu_.cmd, 0), "vkResetCommandBuffer");
  record_frame(gpu_.cmd, image, screenshot);

  agents::submit_present_and_wait(gpu_, sc_, image);
  // After the frame's fence: the run's completion and statistics, the timestamps.
  auto finished = run_->poll();
  if (!finished) throw Failure("poll: " + finished.error());
  last_run_finished_ = *finished;
  if (*finished)
    ++runs_completed_;
  else
    ++unfinished_frames_;
  group_steps_ = run_->stats().group_steps;
  if (gpu_.queries) {
    uint64_t t[3] = {};
    if (vkGetQueryPoolResults(gpu_.device, gpu_.queries, 0, 3, sizeof t, t, sizeof t[0],
                              VK_QUERY_RESULT_64_BIT) == VK_SUCCESS) {
      autobatch_ms_ = double(t[1] - t[0]) * gpu_.timestamp_period_ns * 1e-6;
      gpu_frame_ms_ = double(t[2] - t[0]) * gpu_.timestamp_period_ns * 1e-6;
    }
  }
  ++frames_;
  if (screenshot) sc_.write_png(gpu_.device, args_.screenshot);

  const auto end = std::chrono::steady_clock::now();
  frame_ms_ = std::chrono::duration<double, std::milli>(end - start).count();
  // The first frames compile and upload: leave them out of the means.
  if (frames_ > 3) {
    sum_frame_ms_ += frame_ms_;
    sum_autobatch_ms_ += autobatch_ms_;
    sum_gpu_frame_ms_ += gpu_frame_ms_;
    ++timed_frames_;
  }
  // poll() read the run's counters: no readback of the lanes' state.
  if (*finished) utilization_ = run_->stats().utilization;
}

// The batch the next frame will run: the agents as they are now (the last finished run's outputs,
// a blocking readback), or the initial batch before the first frame.
bool App::capture(const std::string& path) {
  ab::Batch batch;
  batch.lanes = args_.agents;
  if (frames_ == 0) {
    batch = batch_;
  } else {
    if (!last_run_finished_) {
      status_line_ = "capture: the run is still going; try again next frame";
      return false;
    }
    auto r = run_->result();
    if (!r) {
      status_line_ = "capture: " + r.error();
      return false;
    }
    batch.inputs = {r->outputs};
  }
  // The CPU VM's run of the current agents (the next frame's decision), as the debugger replays it.
  const ab::Status written = ab::write_trace(path, *module_, batch, options_);
  const std::string error = written ? std::string() : written.error();
  status_line_ = error.empty() ? "captured " + path : "capture: " + error;
  std::printf("%s\n", status_line_.c_str());
  if (error.empty()) std::printf("open it with: autobatch debug %s\n", path.c_str());
  return error.empty();
}

// The agents after the frames so far must equal the CPU interpreter chaining as many runs.
bool App::check() {
  if (!last_run_finished_) {
    std::printf("check: FAILED (the last frame's run had not finished)\n");
    return false;
  }
  auto gpu = run_->result();
  if (!gpu) {
    std::printf("check: FAILED (%s)\n", gpu.error().c_str());
    return false;
  }
  ab::Batch chained = batch_;
  std::vector<uint32_t> cpu;
  for (uint64_t k = 0; k < runs_completed_; ++k) {
    auto step = module_->run_cpu(chained, options_, ab::CpuBackend::Interpreter);
    if (!step || !step->errors.empty()) {
      std::printf("check: FAILED (the interpreter: %s)\n",
                  step ? "a lane faulted" : step.error().c_str());
      return false;
    }
    chained.inputs[0] = step->outputs;
  }
  const std::vector<uint32_t>& want = chained.inputs[0];
  size_t differ = 0;
  for (uint32_t l = 0; l < args_.agents; ++l)
    for (uint32_t k = 0; k < kAgentWords; ++k)
      if (gpu->outputs[size_t{l} * kAgentWords + k] != want[size_t{l} * kAgentWords + k]) {
        ++differ;
        break;
      }
  const bool ok = differ == 0 && gpu->errors.empty();
  std::printf(
      "check: %s: %u agents after %llu runs (%llu frames), %zu differ from the CPU "
      "interpreter, %zu faulted\n",
      ok ? "ok" : "FAILED", args_.agents, static_cast<unsigned long long>(runs_completed_),
      static_cast<unsigned long long>(frames_), differ, gpu->errors.size());
  return ok;
}

int App::run() {
  gpu_.create(args_.validation, args_.no_validation);
  sc_.create(gpu_, !args_.screenshot.empty());
  create_autobatch();
  pipe_.create(gpu_, sc_, run_->buffers().output);
  init_imgui();
  std::printf("device: %s; validation layer: %s; %u agents\n", context_->device().name.c_str(),
              gpu_.validation ? "on" : "off", args_.agents);

  bool c_was_down = false;
  bool captured_ok = true;
  while (!glfwWindowShouldClose(gpu_.window)) {
    const bool last = args_.frames && frames_ + 1 == args_.frames;
    frame(last);
    if (glfwGetKey(gpu_.window, GLFW_KEY_ESCAPE) == GLFW_PRESS)
      glfwSetWindowShouldClose(gpu_.window, 1);
    const bool c_down = glfwGetKey(gpu_.window, GLFW_KEY_C) == GLFW_PRESS;
    if (c_down && !c_was_down) capture(args_.capture.empty() ? "agents.abtrace" : args_.capture);
    c_was_down = c_down;
    if (last) break;
  }
  vk_check(vkDeviceWaitIdle(gpu_.device), "vkDeviceWaitIdle");

  if (timed_frames_)
    std::printf(
        "frames: %llu; mean frame %.2f ms (wall), GPU frame %.2f ms, autobatch %.2f ms "
        "per frame (over frames 4..%llu); group steps last frame %llu\n",
        static_cast<unsigned long long>(frames_), sum_frame_ms_ / timed_frames_,
        sum_gpu_frame_ms_ / timed_frames_, sum_autobatch_ms_ / timed_frames_,
        static_cast<unsigned long long>(frames_), static_cast<unsigned long long>(group_steps_));
  bool ok = true;
  if (args_.frames && !args_.capture.empty()) captured_ok = capture(args_.capture);
  ok = ok && captured_ok;
  if (args_.check) ok = check() && ok;
  destroy();  // so that messages about the teardown count too
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
    sc_.destroy(gpu_.device);
  }
  gpu_.destroy();
}

}  // namespace

int main(int argc, char** argv) {
  Args args;
  if (int status = parse_args(argc, argv, args); status >= 0) return status;
  try {
    App app(args);
    const int status = app.run();
    return status;
  } catch (const Failure& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
