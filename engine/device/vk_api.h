// The Vulkan entry points the engine uses, loaded at run time from the Vulkan loader library
// (dlopen), so a machine without libvulkan still runs the CPU backends and gets a clear message
// instead of a failure at program start. One VkApi per context; nothing here is global.
#pragma once

#define VK_NO_PROTOTYPES
#include <vulkan/vulkan.h>

#include <string>

namespace ab::vk {

#define AB_VK_GLOBAL_FUNCTIONS(X)           \
  X(vkCreateInstance)                       \
  X(vkEnumerateInstanceExtensionProperties) \
  X(vkEnumerateInstanceLayerProperties)     \
  X(vkEnumerateInstanceVersion)

#define AB_VK_INSTANCE_FUNCTIONS(X)           \
  X(vkDestroyInstance)                        \
  X(vkEnumeratePhysicalDevices)               \
  X(vkGetPhysicalDeviceProperties)            \
  X(vkGetPhysicalDeviceProperties2)           \
  X(vkGetPhysicalDeviceFeatures2)             \
  X(vkGetPhysicalDeviceQueueFamilyProperties) \
  X(vkGetPhysicalDeviceMemoryProperties)      \
  X(vkEnumerateDeviceExtensionProperties)     \
  X(vkCreateDevice)                           \
  X(vkGetDeviceProcAddr)

#define AB_VK_DEBUG_FUNCTIONS(X)    \
  X(vkCreateDebugUtilsMessengerEXT) \
  X(vkDestroyDebugUtilsMessengerEXT)

#define AB_VK_DEVICE_FUNCTIONS(X)  \
  X(vkDestroyDevice)               \
  X(vkGetDeviceQueue)              \
  X(vkCreateBuffer)                \
  X(vkDestroyBuffer)               \
  X(vkGetBufferMemoryRequirements) \
  X(vkAllocateMemory)              \
  X(vkFreeMemory)                  \
  X(vkBindBufferMemory)            \
  X(vkMapMemory)                   \
  X(vkUnmapMemory)                 \
  X(vkCreateShaderModule)          \
  X(vkDestroyShaderModule)         \
  X(vkCreateDescriptorSetLayout)   \
  X(vkDestroyDescriptorSetLayout)  \
  X(vkCreatePipelineLayout)        \
  X(vkDestroyPipelineLayout)       \
  X(vkCreateComputePipelines)      \
  X(vkDestroyPipeline)             \
  X(vkCreatePipelineCache)         \
  X(vkDestroyPipelineCache)        \
  X(vkGetPipelineCacheData)        \
  X(vkCreateDescriptorPool)        \
  X(vkDestroyDescriptorPool)       \
  X(vkAllocateDescriptorSets)      \
  X(vkUpdateDescriptorSets)        \
  X(vkCreateCommandPool)           \
  X(vkDestroyCommandPool)          \
  X(vkAllocateCommandBuffers)      \
  X(vkFreeCommandBuffers)          \
  X(vkBeginCommandBuffer)          \
  X(vkEndCommandBuffer)            \
  X(vkCmdBindPipeline)             \
  X(vkCmdBindDescriptorSets)       \
  X(vkCmdPushConstants)            \
  X(vkCmdDispatch)                 \
  X(vkCmdDispatchIndirect)         \
  X(vkCmdPipelineBarrier)          \
  X(vkCmdCopyBuffer)               \
  X(vkCmdFillBuffer)               \
  X(vkQueueSubmit)                 \
  X(vkQueueWaitIdle)               \
  X(vkCreateFence)                 \
  X(vkDestroyFence)                \
  X(vkWaitForFences)               \
  X(vkResetFences)                 \
  X(vkDeviceWaitIdle)

struct VkApi {
  void* library = nullptr;
  PFN_vkGetInstanceProcAddr vkGetInstanceProcAddr = nullptr;
#define AB_VK_DECLARE(name) PFN_##name name = nullptr;
  AB_VK_GLOBAL_FUNCTIONS(AB_VK_DECLARE)
  AB_VK_INSTANCE_FUNCTIONS(AB_VK_DECLARE)
  AB_VK_DEBUG_FUNCTIONS(AB_VK_DECLARE)
  AB_VK_DEVICE_FUNCTIONS(AB_VK_DECLARE)
#undef AB_VK_DECLARE

  // Opens the loader (`path`, or the system's libvulkan.so.1 when empty) and resolves the global
  // entry points. Returns an empty string on success, else what went wrong.
  std::string load_library(const std::string& path);
  // Resolves the instance-level entry points (debug-utils ones only when `debug_utils`).
  std::string load_instance(VkInstance instance, bool debug_utils);
  std::string load_device(VkDevice device);
  void unload();
};

// "VK_ERROR_OUT_OF_DEVICE_MEMORY" and so on.
const char* result_name(VkResult r);

}  // namespace ab::vk
