#include "engine/device/vk_api.h"

#include <dlfcn.h>

namespace ab::vk {

std::string VkApi::load_library(const std::string& path) {
  const std::string name = path.empty() ? "libvulkan.so.1" : path;
  library = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!library)
    return "Vulkan loader '" + name +
           "' not found: install libvulkan1 (the Vulkan loader) and a driver such as "
           "mesa-vulkan-drivers";
  vkGetInstanceProcAddr =
      reinterpret_cast<PFN_vkGetInstanceProcAddr>(dlsym(library, "vkGetInstanceProcAddr"));
  if (!vkGetInstanceProcAddr) return "'" + name + "' has no vkGetInstanceProcAddr";
#define AB_VK_LOAD(fn)                                                         \
  fn = reinterpret_cast<PFN_##fn>(vkGetInstanceProcAddr(VK_NULL_HANDLE, #fn)); \
  if (!fn) return "the Vulkan loader lacks " #fn;
  AB_VK_GLOBAL_FUNCTIONS(AB_VK_LOAD)
#undef AB_VK_LOAD
  return {};
}

std::string VkApi::load_instance(VkInstance instance, bool debug_utils) {
#define AB_VK_LOAD(fn)                                                   \
  fn = reinterpret_cast<PFN_##fn>(vkGetInstanceProcAddr(instance, #fn)); \
  if (!fn) return "the Vulkan instance lacks " #fn;
  AB_VK_INSTANCE_FUNCTIONS(AB_VK_LOAD)
  if (debug_utils) {
    AB_VK_DEBUG_FUNCTIONS(AB_VK_LOAD)
  }
#undef AB_VK_LOAD
  return {};
}

std::string VkApi::load_device(VkDevice device) {
#define AB_VK_LOAD(fn)                                               \
  fn = reinterpret_cast<PFN_##fn>(vkGetDeviceProcAddr(device, #fn)); \
  if (!fn) return "the Vulkan device lacks " #fn;
  AB_VK_DEVICE_FUNCTIONS(AB_VK_LOAD)
#undef AB_VK_LOAD
  return {};
}

void VkApi::unload() {
  if (library) dlclose(library);
  library = nullptr;
}

const char* result_name(VkResult r) {
  switch (r) {
    case VK_SUCCESS:
      return "VK_SUCCESS";
    case VK_NOT_READY:
      return "VK_NOT_READY";
    case VK_TIMEOUT:
      return "VK_TIMEOUT";
    case VK_INCOMPLETE:
      return "VK_INCOMPLETE";
    case VK_ERROR_OUT_OF_HOST_MEMORY:
      return "VK_ERROR_OUT_OF_HOST_MEMORY";
    case VK_ERROR_OUT_OF_DEVICE_MEMORY:
      return "VK_ERROR_OUT_OF_DEVICE_MEMORY";
    case VK_ERROR_INITIALIZATION_FAILED:
      return "VK_ERROR_INITIALIZATION_FAILED";
    case VK_ERROR_DEVICE_LOST:
      return "VK_ERROR_DEVICE_LOST";
    case VK_ERROR_MEMORY_MAP_FAILED:
      return "VK_ERROR_MEMORY_MAP_FAILED";
    case VK_ERROR_LAYER_NOT_PRESENT:
      return "VK_ERROR_LAYER_NOT_PRESENT";
    case VK_ERROR_EXTENSION_NOT_PRESENT:
      return "VK_ERROR_EXTENSION_NOT_PRESENT";
    case VK_ERROR_FEATURE_NOT_PRESENT:
      return "VK_ERROR_FEATURE_NOT_PRESENT";
    case VK_ERROR_INCOMPATIBLE_DRIVER:
      return "VK_ERROR_INCOMPATIBLE_DRIVER";
    case VK_ERROR_TOO_MANY_OBJECTS:
      return "VK_ERROR_TOO_MANY_OBJECTS";
    case VK_ERROR_FORMAT_NOT_SUPPORTED:
      return "VK_ERROR_FORMAT_NOT_SUPPORTED";
    case VK_ERROR_UNKNOWN:
      return "VK_ERROR_UNKNOWN";
    case VK_ERROR_OUT_OF_POOL_MEMORY:
      return "VK_ERROR_OUT_OF_POOL_MEMORY";
    default:
      return "VkResult(other)";
  }
}

}  // namespace ab::vk
