// The game sample's swapchain (swapchain.cpp): its images, their views and framebuffers, the
// render pass that draws the agents and the overlay, and the buffer a --screenshot copies into.
#pragma once

#include <string>
#include <vector>

#include "window_device.h"

namespace agents {

struct Swapchain {
  VkSwapchainKHR swapchain = VK_NULL_HANDLE;
  VkFormat format = VK_FORMAT_UNDEFINED;
  VkExtent2D extent{};
  std::vector<VkImage> images;
  std::vector<VkImageView> views;
  std::vector<VkFramebuffer> framebuffers;
  std::vector<VkSemaphore> render_done;  // one per swapchain image
  VkRenderPass render_pass = VK_NULL_HANDLE;
  bool can_copy = false;
  VkBuffer shot_buffer = VK_NULL_HANDLE;  // with `screenshot` only
  VkDeviceMemory shot_memory = VK_NULL_HANDLE;

  // screenshot: the images must be copyable, and the screenshot buffer is made.
  void create(const WindowDevice& gpu, bool screenshot);
  void destroy(VkDevice device);
  // Records the copy of `image` into the screenshot buffer (after the render pass).
  void record_copy(VkCommandBuffer cmd, uint32_t image) const;
  // The screenshot buffer as a PNG at `path`, once the copy's submission has finished.
  void write_png(VkDevice device, const std::string& path) const;

 private:
  void create_render_pass(VkDevice device);
  void create_framebuffers(VkDevice device);
  void create_shot_buffer(const WindowDevice& gpu);
};

}  // namespace agents
