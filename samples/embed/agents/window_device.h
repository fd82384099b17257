// The sample's window and Vulkan device (window_device.cpp): a GLFW window, an instance (with the
// validation layer when installed or asked for), the first device whose queue family does
// graphics and compute and presents to the window, and what each frame submits with.
#pragma once

#define GLFW_INCLUDE_VULKAN
#include <GLFW/glfw3.h>

#include "common.h"

namespace agents {

struct WindowDevice {
  const char* title = "autobatch agents";
  GLFWwindow* window = nullptr;
  VkInstance instance = VK_NULL_HANDLE;
  VkDebugUtilsMessengerEXT messenger = VK_NULL_HANDLE;
  VkSurfaceKHR surface = VK_NULL_HANDLE;
  VkPhysicalDevice physical = VK_NULL_HANDLE;
  VkDevice device = VK_NULL_HANDLE;
  uint32_t family = 0;
  VkQueue queue = VK_NULL_HANDLE;
  bool validation = false;
  float timestamp_period_ns = 0;  // 0: no timestamps on this queue family
  // The frames': one command buffer, its fence, the acquire semaphore and the timestamp queries.
  VkCommandPool cmd_pool = VK_NULL_HANDLE;
  VkCommandBuffer cmd = VK_NULL_HANDLE;
  VkFence fence = VK_NULL_HANDLE;
  VkSemaphore acquired = VK_NULL_HANDLE;
  VkQueryPool queries = VK_NULL_HANDLE;

  // require_validation: fail without the layer; no_validation: never use it.
  void create(bool require_validation, bool no_validation);
  // Once everything made on the device is gone (the device is idle).
  void destroy();
  uint32_t memory_type(uint32_t bits, VkMemoryPropertyFlags props) const;

 private:
  void create_window_and_instance(bool require_validation, bool no_validation);
  void pick_device();
  void create_device();
};

// Validation messages so far (each also printed on stderr).
int validation_messages();

}  // namespace agents
