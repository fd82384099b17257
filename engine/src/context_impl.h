// The inside of VulkanContext, shared by the engine's implementation files: the loaded entry
// points, the device and queue, its limits, and the validation messages recorded so far.
#pragma once

#include <mutex>
#include <string>
#include <vector>

#include "autobatch/context.h"
#include "engine/src/vk_api.h"

namespace ab {

struct VulkanContext::Impl {
  vk::VkApi api;
  VkInstance instance = VK_NULL_HANDLE;
  VkDebugUtilsMessengerEXT messenger = VK_NULL_HANDLE;
  VkPhysicalDevice physical = VK_NULL_HANDLE;
  VkDevice device = VK_NULL_HANDLE;
  VkQueue queue = VK_NULL_HANDLE;
  uint32_t queue_family = 0;
  VkCommandPool command_pool = VK_NULL_HANDLE;
  VkPhysicalDeviceProperties properties{};
  VkPhysicalDeviceMemoryProperties memory{};
  DeviceInfo info;
  bool validation = false;
  bool external = false;  // the host's instance and device: not destroyed here

  // Serialises the engine's use of `command_pool` and `queue` (both need external
  // synchronisation in Vulkan), so programs and runs of one context may live on different threads.
  std::recursive_mutex submit_mutex;

  mutable std::mutex messages_mutex;
  std::vector<std::string> messages;

  ~Impl();
};

// Whether the device ends a shader loop silently after 65,535 iterations, as lavapipe (Mesa's
// llvmpipe Vulkan driver) does: there a run refuses more steps per dispatch than stay clear of
// it (VulkanOptions::local_steps_per_dispatch). Known by the device's name and driver.
bool caps_shader_loops(const DeviceInfo& device);

// "vkCreateBuffer failed: VK_ERROR_OUT_OF_DEVICE_MEMORY".
std::string vk_error(const char* call, VkResult r);

// A compute pipeline running `spirv`'s "main" with `layout`; `cache` may be VK_NULL_HANDLE, and
// `spec` (the specialization constants' values) nullptr.
Expected<VkPipeline> create_compute_pipeline(VulkanContext::Impl& ctx, VkPipelineLayout layout,
                                             VkPipelineCache cache,
                                             const std::vector<uint32_t>& spirv,
                                             const VkSpecializationInfo* spec = nullptr);

}  // namespace ab
