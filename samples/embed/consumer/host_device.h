// The host application's own Vulkan objects, made the way any Vulkan app makes them: an instance
// (with the Khronos validation layer when it is installed), a physical device, a device with one
// compute queue, and a command pool. autobatch is then created on top of them.
#pragma once

#include <vulkan/vulkan.h>

#include <atomic>
#include <string>

struct HostDevice {
  VkInstance instance = VK_NULL_HANDLE;
  VkDebugUtilsMessengerEXT messenger = VK_NULL_HANDLE;
  VkPhysicalDevice physical = VK_NULL_HANDLE;
  VkDevice device = VK_NULL_HANDLE;
  uint32_t family = 0;
  VkQueue queue = VK_NULL_HANDLE;
  VkCommandPool pool = VK_NULL_HANDLE;
  bool validation = false;
  std::atomic<int> messages{0};  // validation warnings and errors reported so far

  // Empty on success, else what failed.
  std::string create();
  void destroy();
  // Begins a one-time command buffer from `pool`; submit_and_wait ends it, submits it with a
  // fence of the host's own, waits for that fence and frees the buffer.
  VkCommandBuffer begin();
  std::string submit_and_wait(VkCommandBuffer cmd);
};
