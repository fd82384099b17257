// The game sample's window and device (window_device.h).
#include "window_device.h"

#include <cstdio>
#include <cstring>
#include <vector>

namespace agents {
namespace {

int g_validation_messages = 0;
VKAPI_ATTR VkBool32 VKAPI_CALL on_validation(VkDebugUtilsMessageSeverityFlagBitsEXT,
                                             VkDebugUtilsMessageTypeFlagsEXT,
                                             const VkDebugUtilsMessengerCallbackDataEXT* data,
                                             void*) {
  std::fprintf(stderr, "validation: %s\n", data->pMessage);
  ++g_validation_messages;
  return VK_FALSE;
}

bool validation_layer_installed() {
  uint32_t n = 0;
  vkEnumerateInstanceLayerProperties(&n, nullptr);
  std::vector<VkLayerProperties> layers(n);
  vkEnumerateInstanceLayerProperties(&n, layers.data());
  for (const auto& l : layers)
    if (std::strcmp(l.layerName, "VK_LAYER_KHRONOS_validation") == 0) return true;
  return false;
}

}  // namespace

int validation_messages() {
  return g_validation_messages;
}

void WindowDevice::create(bool require_validation, bool no_validation) {
  create_window_and_instance(require_validation, no_validation);
  vk_check(glfwCreateWindowSurface(instance, window, nullptr, &surface), "glfwCreateWindowSurface");
  pick_device();
  create_device();
}

void WindowDevice::create_window_and_instance(bool require_validation, bool no_validation) {
  glfwSetErrorCallback([](int, const char* msg) { std::fprintf(stderr, "GLFW: %s\n", msg); });
  if (!glfwInit()) throw Failure("no display (set DISPLAY, or run under `xvfb-run -a`)");
  if (!glfwVulkanSupported()) throw Failure("GLFW finds no Vulkan loader or driver");
  glfwWindowHint(GLFW_CLIENT_API, GLFW_NO_API);
  glfwWindowHint(GLFW_RESIZABLE, GLFW_FALSE);
  window = glfwCreateWindow(kWidth, kHeight, title, nullptr, nullptr);
  if (!window) throw Failure("GLFW cannot create the window");

  validation = !no_validation && validation_layer_installed();
  if (require_validation && !validation)
    throw Failure("--validation: VK_LAYER_KHRONOS_validation is not installed");
  uint32_t n_ext = 0;
  const char** glfw_ext = glfwGetRequiredInstanceExtensions(&n_ext);
  std::vector<const char*> extensions(glfw_ext, glfw_ext + n_ext);
  const char* layer = "VK_LAYER_KHRONOS_validation";
  VkDebugUtilsMessengerCreateInfoEXT mci{VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT};
  mci.messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT |
                        VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT;
  mci.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT |
                    VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                    VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT;
  mci.pfnUserCallback = on_validation;
  if (validation) extensions.push_back(VK_EXT_DEBUG_UTILS_EXTENSION_NAME);
  VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
  app.pApplicationName = "autobatch agents";
  app.apiVersion = VK_API_VERSION_1_2;
  VkInstanceCreateInfo ici{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
  ici.pApplicationInfo = &app;
  ici.enabledExtensionCount = static_cast<uint32_t>(extensions.size());
  ici.ppEnabledExtensionNames = extensions.data();
  if (validation) {
    ici.enabledLayerCount = 1;
    ici.ppEnabledLayerNames = &layer;
    ici.pNext = &mci;
  }
  vk_check(vkCreateInstance(&ici, nullptr, &instance), "vkCreateInstance");
  if (validation) {
    auto create = reinterpret_cast<PFN_vkCreateDebugUtilsMessengerEXT>(
        vkGetInstanceProcAddr(instance, "vkCreateDebugUtilsMessengerEXT"));
    if (!create) throw Failure("vkCreateDebugUtilsMessengerEXT is missing");
    vk_check(create(instance, &mci, nullptr, &messenger), "vkCreateDebugUtilsMessengerEXT");
  }
}

// The first device with a queue family that does graphics, compute and presents to the window.
void WindowDevice::pick_device() {
  uint32_t n = 0;
  vkEnumeratePhysicalDevices(instance, &n, nullptr);
  std::vector<VkPhysicalDevice> devices(n);
  vkEnumeratePhysicalDevices(instance, &n, devices.data());
  bool found = false;
  for (VkPhysicalDevice d : devices) {
    VkPhysicalDeviceProperties props;
    vkGetPhysicalDeviceProperties(d, &props);
    if (props.apiVersion < VK_API_VERSION_1_2) continue;
    uint32_t nq = 0;
    vkGetPhysicalDeviceQueueFamilyProperties(d, &nq, nullptr);
    std::vector<VkQueueFamilyProperties> families(nq);
    vkGetPhysicalDeviceQueueFamilyProperties(d, &nq, families.data());
    for (uint32_t i = 0; i < nq && !found; ++i) {
      VkBool32 present = VK_FALSE;
      vkGetPhysicalDeviceSurfaceSupportKHR(d, i, surface, &present);
      const VkQueueFlags need = VK_QUEUE_GRAPHICS_BIT | VK_QUEUE_COMPUTE_BIT;
      if ((families[i].queueFlags & need) == need && present) {
        physical = d;
        family = i;
        found = true;
        if (families[i].timestampValidBits) timestamp_period_ns = props.limits.timestampPeriod;
      }
    }
    if (found) break;
  }
  if (!found) throw Failure("no Vulkan 1.2 device with a graphics+compute queue that presents");
}

void WindowDevice::create_device() {
  const float priority = 1.0f;
  VkDeviceQueueCreateInfo qci{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
  qci.queueFamilyIndex = family;
  qci.queueCount = 1;
  qci.pQueuePriorities = &priority;
  const char* swapchain_ext = VK_KHR_SWAPCHAIN_EXTENSION_NAME;
  VkDeviceCreateInfo dci{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
  dci.queueCreateInfoCount = 1;
  dci.pQueueCreateInfos = &qci;
  dci.enabledExtensionCount = 1;
  dci.ppEnabledExtensionNames = &swapchain_ext;
  vk_check(vkCreateDevice(physical, &dci, nullptr, &device), "vkCreateDevice");
  vkGetDeviceQueue(device, family, 0, &queue);

  VkCommandPoolCreateInfo pci{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
  pci.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
  pci.queueFamilyIndex = family;
  vk_check(vkCreateCommandPool(device, &pci, nullptr, &cmd_pool), "vkCreateCommandPool");
  VkCommandBufferAllocateInfo ai{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
  ai.commandPool = cmd_pool;
  ai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  ai.commandBufferCount = 1;
  vk_check(vkAllocateCommandBuffers(device, &ai, &cmd), "vkAllocateCommandBuffers");
  VkFenceCreateInfo fci{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
  vk_check(vkCreateFence(device, &fci, nullptr, &fence), "vkCreateFence");
  VkSemaphoreCreateInfo sci{VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO};
  vk_check(vkCreateSemaphore(device, &sci, nullptr, &acquired), "vkCreateSemaphore");
  if (timestamp_period_ns > 0) {
    VkQueryPoolCreateInfo qpi{VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO};
    qpi.queryType = VK_QUERY_TYPE_TIMESTAMP;
    qpi.queryCount = 3;  // frame start, after the autobatch part, frame end
    vk_check(vkCreateQueryPool(device, &qpi, nullptr, &queries), "vkCreateQueryPool");
  }
}

uint32_t WindowDevice::memory_type(uint32_t bits, VkMemoryPropertyFlags props) const {
  VkPhysicalDeviceMemoryProperties mp;
  vkGetPhysicalDeviceMemoryProperties(physical, &mp);
  for (uint32_t i = 0; i < mp.memoryTypeCount; ++i)
    if ((bits & (1u << i)) && (mp.memoryTypes[i].propertyFlags & props) == props) return i;
  throw Failure("no suitable memory type");
}

void WindowDevice::destroy() {
  if (device) {
    if (queries) vkDestroyQueryPool(device, queries, nullptr);
    if (acquired) vkDestroySemaphore(device, acquired, nullptr);
    if (fence) vkDestroyFence(device, fence, nullptr);
    if (cmd_pool) vkDestroyCommandPool(device, cmd_pool, nullptr);
    vkDestroyDevice(device, nullptr);
    device = VK_NULL_HANDLE;
  }
  if (surface) vkDestroySurfaceKHR(instance, surface, nullptr);
  surface = VK_NULL_HANDLE;
  if (messenger) {
    auto destroy_messenger = reinterpret_cast<PFN_vkDestroyDebugUtilsMessengerEXT>(
        vkGetInstanceProcAddr(instance, "vkDestroyDebugUtilsMessengerEXT"));
    if (destroy_messenger) destroy_messenger(instance, messenger, nullptr);
    messenger = VK_NULL_HANDLE;
  }
  if (instance) vkDestroyInstance(instance, nullptr);
  instance = VK_NULL_HANDLE;
  if (window) glfwDestroyWindow(window);
  window = nullptr;
  glfwTerminate();
}

}  // namespace agents
