// The game sample (issue 12, docs/embedding.md "The game sample"): a GLFW + Vulkan window that
// animates tens of thousands of agents whose per-frame decision is agents.ab, one lane per agent.
// The app owns the instance, device, queue and swapchain; autobatch runs on them. Each frame's
// command buffer holds the run's restart (its inputs copied on the GPU from the previous frame's
// outputs), its rounds, a barrier, and a render pass whose vertex shader reads the agents straight
// from the run's output region; an ImGui overlay shows the frame and autobatch times (timestamp
// queries), the run's group steps and utilization. Only <autobatch/...> headers are used, the
// .abtrace capture (ab::write_trace) included.
//
// This file: the options, the autobatch run, the draw, the overlay's lines, capture and --check;
// the frame loop and teardown are window_app.cpp's (which the ray tracer's window shares), the
// window and device in window_device.cpp, the swapchain in swapchain.cpp, the graphics pipeline
// in agents_pipeline.cpp.
#include <autobatch/autobatch.h>
#include <imgui.h>

#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "common.h"
#include "window_app.h"

namespace {

using agents::Failure;
using agents::kAgentWords;

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
  agents::WindowOptions window;  // frames, rounds (2), screenshot, capture, check, validation
  uint32_t agents = 10000;
  std::string program = AB_AGENTS_PROGRAM;
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
      a.window.check = true;
      continue;
    }
    if (flag == "--validation" || flag == "--no-validation") {
      (flag == "--validation" ? a.window.validation : a.window.no_validation) = true;
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
      if (flag == "--frames") a.window.frames = n;
      if (flag == "--rounds") a.window.rounds = static_cast<uint32_t>(n);
    } else if (flag == "--program") {
      a.program = value;
    } else if (flag == "--screenshot") {
      a.window.screenshot = value;
    } else {
      a.window.capture = value;
    }
  }
  if (!a.window.screenshot.empty() && a.window.frames == 0) {
    std::fprintf(stderr, "error: --screenshot needs --frames N (it is taken after the last one)\n");
    return 2;
  }
  if (a.window.validation && a.window.no_validation) {
    std::fprintf(stderr, "error: --validation and --no-validation exclude each other\n");
    return 2;
  }
  if (a.window.check && a.window.frames == 0) {
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

class App final : public agents::WindowApp {
 public:
  explicit App(const Args& args)
      : WindowApp(args.window, "autobatch agents", "agents.abtrace",
                  VK_PIPELINE_STAGE_VERTEX_SHADER_BIT),
        agents_(args.agents),
        program_file_(args.program) {}

 private:
  void create_autobatch() override;
  void create_pipeline() override { pipe_.create(gpu_, sc_, run_->buffers().output); }
  void print_started() override {
    std::printf("device: %s; validation layer: %s; %u agents\n", context_->device().name.c_str(),
                gpu_.validation ? "on" : "off", agents_);
  }
  void record_restart(VkCommandBuffer cmd) override;
  void record_draw(VkCommandBuffer cmd) override { pipe_.record_draw(cmd, agents_, sc_.extent); }
  void overlay_lines() override;
  void print_summary() override;
  bool capture(const std::string& path) override;
  bool check() override;

  uint32_t agents_;
  std::string program_file_;
  ab::Batch batch_;  // the first frame's agents
};

void App::create_autobatch() {
  std::vector<ab::SourceDiagnostic> diagnostics;
  // Under its absolute path: a capture names the module's file, which `autobatch debug` then
  // opens from any directory.
  ab::CompileOptions compile;
  compile.file = std::filesystem::absolute(program_file_).string();
  auto module = ab::Module::load(program_file_, compile, &diagnostics);
  if (!module) throw Failure(module.error());
  module_ = *module;
  if (module_->inputs().size() != 1 || module_->inputs()[0].words != kAgentWords ||
      module_->output().words != kAgentWords)
    throw Failure(program_file_ + ": main must take and return one Agent of " +
                  std::to_string(kAgentWords) + " words");
  batch_ = initial_batch(agents_);
  options_.seed = 7;
  // agents.ab calls at most 6 deep (main, decide x4, hash): a small stack keeps the run's stack
  // arena within maxStorageBufferRange at 50,000 agents (the default, 1024, does not fit).
  options_.stack_depth = 16;
  start_run(batch_);
}

// The agents' decision: a restart from the previous frame's outputs (copied on the GPU); the
// first frame runs the initial batch.
void App::record_restart(VkCommandBuffer cmd) {
  if (fig_.frames == 0) return;
  if (auto s = run_->record_restart(cmd, {run_->buffers().output}); !s)
    throw Failure("record_restart: " + s.error());
}

void App::overlay_lines() {
  ImGui::Text("agents       %u (lanes)", agents_);
  ImGui::Text("FPS          %.1f", fig_.frame_ms > 0 ? 1000.0 / fig_.frame_ms : 0.0);
  ImGui::Text("frame        %.2f ms (wall)", fig_.frame_ms);
  if (gpu_.queries) {
    ImGui::Text("GPU frame    %.2f ms", fig_.gpu_frame_ms);
    ImGui::Text("autobatch    %.2f ms (restart + %u rounds)", fig_.run_ms, args_.rounds);
  }
  overlay_run_figures("runs");
}

void App::print_summary() {
  std::printf(
      "frames: %llu; mean frame %.2f ms (wall), GPU frame %.2f ms, autobatch %.2f ms "
      "per frame (over frames 4..%llu); group steps last frame %llu\n",
      static_cast<unsigned long long>(fig_.frames), fig_.sum_frame_ms / fig_.timed,
      fig_.sum_gpu_frame_ms / fig_.timed, fig_.sum_run_ms / fig_.timed,
      static_cast<unsigned long long>(fig_.frames),
      static_cast<unsigned long long>(fig_.group_steps));
}

// The batch the next frame will run: the agents as they are now (the last finished run's outputs,
// a blocking readback), or the initial batch before the first frame.
bool App::capture(const std::string& path) {
  ab::Batch batch;
  batch.lanes = agents_;
  if (fig_.frames == 0) {
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
  return report_capture(path, ab::write_trace(path, *module_, batch, options_));
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
  for (uint64_t k = 0; k < fig_.finished; ++k) {
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
  for (uint32_t l = 0; l < agents_; ++l)
    for (uint32_t k = 0; k < kAgentWords; ++k)
      if (gpu->outputs[size_t{l} * kAgentWords + k] != want[size_t{l} * kAgentWords + k]) {
        ++differ;
        break;
      }
  const bool ok = differ == 0 && gpu->errors.empty();
  std::printf(
      "check: %s: %u agents after %llu runs (%llu frames), %zu differ from the CPU "
      "interpreter, %zu faulted\n",
      ok ? "ok" : "FAILED", agents_, static_cast<unsigned long long>(fig_.finished),
      static_cast<unsigned long long>(fig_.frames), differ, gpu->errors.size());
  return ok;
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
