// The debugger window: GLFW + Vulkan + Dear ImGui 1.86. Runs the interactive loop, or, with a
// script, runs the script's commands between frames (screenshots capture the window's content).
//
// One device: the window creates its Vulkan device first (a queue family that draws, presents
// and computes, Vulkan 1.2) and hands it to the engine (VulkanContext::create_external), so a
// live Vulkan session runs on the device that draws it, not on a second one beside it.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "autobatch/expected.h"

namespace ab {
class VulkanContext;
}

namespace ab::debugger {

class Session;

struct WindowOptions {
  int width = 1600, height = 1000;
  std::string script;       // commands to run (empty: interactive)
  std::string script_name;  // for messages
  // The window's instance enables the Khronos validation layer; every message it reports (the
  // window's and the engine's, on the one device) goes to stderr and makes the exit status 1.
  bool validation = false;
  int device_index = -1;  // ContextOptions::device_index: -1, the first device that can draw
  bool engine = false;    // the session runs on the Vulkan engine: hand it the window's device
};

// Opens the session once the window's device exists; `context` is the engine's context on that
// device, or null when it cannot host the engine.
using SessionOpener =
    std::function<Expected<std::unique_ptr<Session>>(std::shared_ptr<VulkanContext> context)>;

// Returns the exit code. With no display: one clear message and 1.
int run_window(const SessionOpener& open_session, const WindowOptions& options);

}  // namespace ab::debugger
