// The debugger window: GLFW + Vulkan + Dear ImGui 1.86. Runs the interactive loop, or, with a
// script, runs the script's commands between frames (screenshots capture the window's content).
#pragma once

#include <string>

namespace ab::debugger {

class Session;

struct WindowOptions {
  int width = 1600, height = 1000;
  std::string script;       // commands to run (empty: interactive)
  std::string script_name;  // for messages
};

// Returns the exit code. With no display: one clear message and 1.
int run_window(Session& session, const WindowOptions& options);

}  // namespace ab::debugger
