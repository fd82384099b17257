// The inside of VulkanContext, shared by the engine's implementation files: the loaded entry
// points, the device and queue, its limits, and the validation messages recorded so far.
#pragma once

#include <mutex>
#include <string>
#include <vector>

#include "autobatch/context.h"
#include "engine/device/vk_api.h"

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

// Whether the device ends loops silently after kShaderLoopLimit iterations, as lavapipe (Mesa's
// llvmpipe Vulkan driver) does: its count is per shader invocation of a SIMD row (a subgroup)
// and shared by every loop in the kernel, inner loops included (gallivm's loop limiter), so the
// generated kernels count their loops and end a dispatch early (GlslTarget::loop_limit), and a
// run refuses more steps per dispatch than stay clear of it
// (VulkanOptions::local_steps_per_dispatch). Known by the device's name and driver.
constexpr uint32_t kShaderLoopLimit = 65535;
bool caps_shader_loops(const DeviceInfo& device);

// The most words of stacks per lane that the register kernels keep in private arrays
// (glsl_codegen.h, private_stack_depth): kPrivateStackWords on a CPU device, where a private
// array is a few vector instructions and a storage buffer access a loop over the SIMD lanes; 0
// (stacks stay in the arenas) on GPUs, where private arrays live in local memory reserved for
// every resident invocation (16 KiB each would be gigabytes on a large GPU) and no measurement
// says they pay.
uint32_t private_stack_words(const DeviceInfo& device);

// "vkCreateBuffer failed: VK_ERROR_OUT_OF_DEVICE_MEMORY".
std::string vk_error(const char* call, VkResult r);

// A compute pipeline running `spirv`'s "main" with `layout`; `cache` may be VK_NULL_HANDLE, and
// `spec` (the specialization constants' values) nullptr.
Expected<VkPipeline> create_compute_pipeline(VulkanContext::Impl& ctx, VkPipelineLayout layout,
                                             VkPipelineCache cache,
                                             const std::vector<uint32_t>& spirv,
                                             const VkSpecializationInfo* spec = nullptr);

}  // namespace ab
