// What a frame of the samples' windows (the game sample, samples/raytrace/window) does around its
// own drawing (window_frame.cpp): Dear ImGui on the window, the next swapchain image, the
// submission and presentation of the frame's command buffer and the wait for it, and the window's
// device as autobatch's external device.
#pragma once

#include <autobatch/autobatch.h>

#include "swapchain.h"

namespace agents {

// The window's device, queue and instance for ab::VulkanContext::create_external.
ab::ExternalDevice external_device(const WindowDevice& gpu);

// ImGui's context and GLFW + Vulkan backends on the window's render pass, its fonts uploaded
// (a blocking submission). Returns the descriptor pool the backend uses (destroy it after
// shutdown_imgui).
VkDescriptorPool init_imgui(const WindowDevice& gpu, const Swapchain& sc);
void shutdown_imgui();

// The next swapchain image (its acquire signals gpu.acquired).
uint32_t acquire_image(const WindowDevice& gpu, const Swapchain& sc);
// Submits gpu.cmd (waiting for the acquire, signalling gpu.fence and the image's render_done),
// presents the image, then waits for the fence and resets it.
void submit_present_and_wait(const WindowDevice& gpu, const Swapchain& sc, uint32_t image);

}  // namespace agents
