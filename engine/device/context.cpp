#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "codegen/glsl_codegen.h"
#include "engine/device/context_impl.h"

namespace ab {
namespace {

const char* kValidationLayer = "VK_LAYER_KHRONOS_validation";
const char* kNoDevice =
    "no Vulkan device found: install mesa-vulkan-drivers for the CPU device (lavapipe), or a GPU "
    "driver";

VKAPI_ATTR VkBool32 VKAPI_CALL record_message(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                              VkDebugUtilsMessageTypeFlagsEXT,
                                              const VkDebugUtilsMessengerCallbackDataEXT* data,
                                              void* user) {
  auto* impl = static_cast<VulkanContext::Impl*>(user);
  const char* level =
      severity >= VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT ? "error" : "warning";
  std::lock_guard lock(impl->messages_mutex);
  impl->messages.push_back(fmt::format("validation {}: {}", level, data->pMessage));
  return VK_FALSE;
}

const char* device_type_name(VkPhysicalDeviceType t) {
  switch (t) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU:
      return "discrete";
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU:
      return "integrated";
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU:
      return "virtual";
    case VK_PHYSICAL_DEVICE_TYPE_CPU:
      return "cpu";
    default:
      return "other";
  }
}

}  // namespace

int device_type_rank(VkPhysicalDeviceType t) {
  switch (t) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU:
      return 0;
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU:
      return 1;
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU:
      return 2;
    case VK_PHYSICAL_DEVICE_TYPE_CPU:
      return 3;
    default:
      return 4;
  }
}

bool caps_shader_loops(const DeviceInfo& device) {
  // lavapipe names itself "llvmpipe (LLVM 15.0.6, 256 bits)", its driver "llvmpipe".
  return device.name.starts_with("llvmpipe") || device.driver.starts_with("llvmpipe");
}

uint32_t private_stack_words(const DeviceInfo& device) {
  return device.type == "cpu" ? kPrivateStackWords : 0;
}

namespace {

DeviceInfo describe(const vk::VkApi& api, VkPhysicalDevice pd, uint32_t index) {
  VkPhysicalDeviceSubgroupProperties subgroup{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES};
  VkPhysicalDeviceDriverProperties driver{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES};
  subgroup.pNext = &driver;
  VkPhysicalDeviceFloatControlsProperties floats{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FLOAT_CONTROLS_PROPERTIES};
  driver.pNext = &floats;
  VkPhysicalDeviceProperties2 props{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
  props.pNext = &subgroup;
  api.vkGetPhysicalDeviceProperties2(pd, &props);
  DeviceInfo info;
  info.index = index;
  info.name = props.properties.deviceName;
  info.type = device_type_name(props.properties.deviceType);
  info.api_version = props.properties.apiVersion;
  info.driver = fmt::format("{} {}", driver.driverName, driver.driverInfo);
  info.subgroup_size = subgroup.subgroupSize;
  info.max_storage_buffer_range = props.properties.limits.maxStorageBufferRange;
  info.subgroup_ballot = (subgroup.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) &&
                         (subgroup.supportedOperations & VK_SUBGROUP_FEATURE_BALLOT_BIT);
  info.subgroup_arithmetic = (subgroup.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) &&
                             (subgroup.supportedOperations & VK_SUBGROUP_FEATURE_ARITHMETIC_BIT);
  info.float_specials_preserved = floats.shaderSignedZeroInfNanPreserveFloat32;
  info.denorms_preserved = floats.shaderDenormPreserveFloat32;
  return info;
}

bool has_layer(const vk::VkApi& api, const char* name) {
  uint32_t n = 0;
  api.vkEnumerateInstanceLayerProperties(&n, nullptr);
  std::vector<VkLayerProperties> layers(n);
  api.vkEnumerateInstanceLayerProperties(&n, layers.data());
  return std::any_of(layers.begin(), layers.end(), [&](const VkLayerProperties& l) {
    return std::strcmp(l.layerName, name) == 0;
  });
}

// Loader + instance (+ messenger); the first half of context creation, shared with list_devices.
std::string create_instance(VulkanContext::Impl& impl, const ContextOptions& options) {
  if (auto err = impl.api.load_library(options.loader_path); !err.empty()) return err;
  uint32_t version = 0;
  impl.api.vkEnumerateInstanceVersion(&version);
  if (version < VK_API_VERSION_1_2)
    return fmt::format("the Vulkan loader supports only Vulkan {}.{}; 1.2 or newer is required",
                       VK_API_VERSION_MAJOR(version), VK_API_VERSION_MINOR(version));
  std::vector<const char*> layers, extensions;
  if (options.validation) {
    if (!has_layer(impl.api, kValidationLayer))
      return "validation requested but VK_LAYER_KHRONOS_validation is not installed (install "
             "vulkan-validationlayers)";
    layers.push_back(kValidationLayer);
    extensions.push_back(VK_EXT_DEBUG_UTILS_EXTENSION_NAME);
  }
  VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
  app.pApplicationName = "autobatch";
  app.pEngineName = "autobatch";
  app.apiVersion = VK_API_VERSION_1_2;
  VkDebugUtilsMessengerCreateInfoEXT messenger{
      VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT};
  messenger.messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT |
                              VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT;
  messenger.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT |
                          VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                          VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT;
  messenger.pfnUserCallback = record_message;
  messenger.pUserData = &impl;
  VkInstanceCreateInfo ci{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
  ci.pApplicationInfo = &app;
  ci.enabledLayerCount = static_cast<uint32_t>(layers.size());
  ci.ppEnabledLayerNames = layers.data();
  ci.enabledExtensionCount = static_cast<uint32_t>(extensions.size());
  ci.ppEnabledExtensionNames = extensions.data();
  if (options.validation) ci.pNext = &messenger;  // also catches instance creation messages
  VkResult r = impl.api.vkCreateInstance(&ci, nullptr, &impl.instance);
  if (r == VK_ERROR_INCOMPATIBLE_DRIVER) return kNoDevice;
  if (r != VK_SUCCESS) return vk_error("vkCreateInstance", r);
  if (auto err = impl.api.load_instance(impl.instance, options.validation); !err.empty())
    return err;
  if (options.validation) {
    r = impl.api.vkCreateDebugUtilsMessengerEXT(impl.instance, &messenger, nullptr,
                                                &impl.messenger);
    if (r != VK_SUCCESS) return vk_error("vkCreateDebugUtilsMessengerEXT", r);
    impl.validation = true;
  }
  return {};
}

std::vector<VkPhysicalDevice> physical_devices(const VulkanContext::Impl& impl) {
  uint32_t n = 0;
  impl.api.vkEnumeratePhysicalDevices(impl.instance, &n, nullptr);
  std::vector<VkPhysicalDevice> devices(n);
  if (n) impl.api.vkEnumeratePhysicalDevices(impl.instance, &n, devices.data());
  devices.resize(n);
  return devices;
}

// The device's description, properties and memory types (impl.physical is set).
std::string describe_device(VulkanContext::Impl& impl, uint32_t index) {
  impl.info = describe(impl.api, impl.physical, index);
  impl.api.vkGetPhysicalDeviceProperties(impl.physical, &impl.properties);
  impl.api.vkGetPhysicalDeviceMemoryProperties(impl.physical, &impl.memory);
  return {};
}

// The first queue family of impl.physical with compute.
std::string find_compute_family(VulkanContext::Impl& impl, uint32_t& family) {
  uint32_t nq = 0;
  impl.api.vkGetPhysicalDeviceQueueFamilyProperties(impl.physical, &nq, nullptr);
  std::vector<VkQueueFamilyProperties> families(nq);
  impl.api.vkGetPhysicalDeviceQueueFamilyProperties(impl.physical, &nq, families.data());
  for (uint32_t i = 0; i < nq; ++i)
    if (families[i].queueFlags & VK_QUEUE_COMPUTE_BIT) {
      family = i;
      return {};
    }
  return fmt::format("Vulkan device '{}' has no compute queue", impl.info.name);
}

// The engine's own command pool on impl.queue_family, for its one-shot and step submissions.
std::string create_command_pool(VulkanContext::Impl& impl) {
  VkCommandPoolCreateInfo pci{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
  pci.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
  pci.queueFamilyIndex = impl.queue_family;
  VkResult r = impl.api.vkCreateCommandPool(impl.device, &pci, nullptr, &impl.command_pool);
  if (r != VK_SUCCESS) return vk_error("vkCreateCommandPool", r);
  return {};
}

std::string create_device(VulkanContext::Impl& impl, const ContextOptions& options) {
  const auto devices = physical_devices(impl);
  if (devices.empty()) return kNoDevice;
  int chosen = options.device_index;
  if (chosen >= static_cast<int>(devices.size()))
    return fmt::format("no Vulkan device {}: there are {} (see `autobatch devices`)", chosen,
                       devices.size());
  if (chosen < 0) {
    int best_rank = 99;
    for (size_t i = 0; i < devices.size(); ++i) {
      VkPhysicalDeviceProperties p;
      impl.api.vkGetPhysicalDeviceProperties(devices[i], &p);
      if (VK_API_VERSION_MINOR(p.apiVersion) < 2 && VK_API_VERSION_MAJOR(p.apiVersion) == 1)
        continue;
      if (device_type_rank(p.deviceType) < best_rank) {
        best_rank = device_type_rank(p.deviceType);
        chosen = static_cast<int>(i);
      }
    }
    if (chosen < 0) return "no Vulkan 1.2 device found: update the Vulkan driver";
  }
  impl.physical = devices[chosen];
  if (auto err = describe_device(impl, static_cast<uint32_t>(chosen)); !err.empty()) return err;
  uint32_t family = 0;
  if (auto err = find_compute_family(impl, family); !err.empty()) return err;
  impl.queue_family = family;

  const float priority = 1.0f;
  VkDeviceQueueCreateInfo qci{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
  qci.queueFamilyIndex = impl.queue_family;
  qci.queueCount = 1;
  qci.pQueuePriorities = &priority;
  VkDeviceCreateInfo dci{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
  dci.queueCreateInfoCount = 1;
  dci.pQueueCreateInfos = &qci;
  VkResult r = impl.api.vkCreateDevice(impl.physical, &dci, nullptr, &impl.device);
  if (r != VK_SUCCESS) return vk_error("vkCreateDevice", r);
  if (auto err = impl.api.load_device(impl.device); !err.empty()) return err;
  impl.api.vkGetDeviceQueue(impl.device, impl.queue_family, 0, &impl.queue);
  return create_command_pool(impl);
}

}  // namespace

std::string vk_error(const char* call, VkResult r) {
  return fmt::format("{} failed: {}", call, vk::result_name(r));
}

Expected<VkPipeline> create_compute_pipeline(VulkanContext::Impl& ctx, VkPipelineLayout layout,
                                             VkPipelineCache cache,
                                             const std::vector<uint32_t>& spirv,
                                             const VkSpecializationInfo* spec) {
  VkShaderModuleCreateInfo mci{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
  mci.codeSize = spirv.size() * 4;
  mci.pCode = spirv.data();
  VkShaderModule module = VK_NULL_HANDLE;
  VkResult r = ctx.api.vkCreateShaderModule(ctx.device, &mci, nullptr, &module);
  if (r != VK_SUCCESS) return Error{vk_error("vkCreateShaderModule", r)};
  VkComputePipelineCreateInfo pci{VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
  pci.stage.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO;
  pci.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
  pci.stage.module = module;
  pci.stage.pName = "main";
  pci.stage.pSpecializationInfo = spec;
  pci.layout = layout;
  VkPipeline pipeline = VK_NULL_HANDLE;
  r = ctx.api.vkCreateComputePipelines(ctx.device, cache, 1, &pci, nullptr, &pipeline);
  ctx.api.vkDestroyShaderModule(ctx.device, module, nullptr);
  if (r != VK_SUCCESS) return Error{vk_error("vkCreateComputePipelines", r)};
  return pipeline;
}

VulkanContext::Impl::~Impl() {
  if (external) {  // the host's device goes on: only the engine's own pool goes
    if (command_pool) {
      api.vkQueueWaitIdle(queue);
      api.vkDestroyCommandPool(device, command_pool, nullptr);
    }
    return;
  }
  if (device) {
    api.vkDeviceWaitIdle(device);
    if (command_pool) api.vkDestroyCommandPool(device, command_pool, nullptr);
    api.vkDestroyDevice(device, nullptr);
  }
  if (messenger) api.vkDestroyDebugUtilsMessengerEXT(instance, messenger, nullptr);
  if (instance) api.vkDestroyInstance(instance, nullptr);
  api.unload();
}

VulkanContext::VulkanContext(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
VulkanContext::~VulkanContext() = default;

Expected<std::shared_ptr<VulkanContext>> VulkanContext::create(const ContextOptions& options) {
  auto impl = std::make_unique<Impl>();
  if (auto err = create_instance(*impl, options); !err.empty()) return Error{err};
  if (auto err = create_device(*impl, options); !err.empty()) return Error{err};
  return std::shared_ptr<VulkanContext>(new VulkanContext(std::move(impl)));
}

Expected<std::shared_ptr<VulkanContext>> VulkanContext::create_external(
    const ExternalDevice& host) {
  if (!host.get_instance_proc_addr || !host.instance || !host.physical_device || !host.device ||
      !host.queue)
    return Error{
        "ExternalDevice needs get_instance_proc_addr, instance, physical_device, device and "
        "queue"};
  auto impl = std::make_unique<Impl>();
  impl->external = true;
  impl->api.vkGetInstanceProcAddr = host.get_instance_proc_addr;
  impl->instance = host.instance;
  if (auto err = impl->api.load_instance(host.instance, false); !err.empty()) return Error{err};
  impl->physical = host.physical_device;
  impl->device = host.device;
  impl->queue = host.queue;
  impl->queue_family = host.queue_family;
  VkPhysicalDeviceProperties props;
  impl->api.vkGetPhysicalDeviceProperties(host.physical_device, &props);
  if (VK_API_VERSION_MAJOR(props.apiVersion) == 1 && VK_API_VERSION_MINOR(props.apiVersion) < 2)
    return Error{
        fmt::format("the host's Vulkan device '{}' supports only Vulkan 1.{}; 1.2 or "
                    "newer is required",
                    props.deviceName, VK_API_VERSION_MINOR(props.apiVersion))};
  if (auto err = describe_device(*impl, 0); !err.empty()) return Error{err};
  uint32_t nq = 0;
  impl->api.vkGetPhysicalDeviceQueueFamilyProperties(host.physical_device, &nq, nullptr);
  std::vector<VkQueueFamilyProperties> families(nq);
  impl->api.vkGetPhysicalDeviceQueueFamilyProperties(host.physical_device, &nq, families.data());
  if (host.queue_family >= nq || !(families[host.queue_family].queueFlags & VK_QUEUE_COMPUTE_BIT))
    return Error{fmt::format("queue family {} of the host's device '{}' {}", host.queue_family,
                             impl->info.name,
                             host.queue_family >= nq ? "does not exist" : "has no compute")};
  if (auto err = impl->api.load_device(host.device); !err.empty()) return Error{err};
  if (auto err = create_command_pool(*impl); !err.empty()) {
    impl->command_pool = VK_NULL_HANDLE;
    return Error{err};
  }
  return std::shared_ptr<VulkanContext>(new VulkanContext(std::move(impl)));
}

bool VulkanContext::external() const {
  return impl_->external;
}

const DeviceInfo& VulkanContext::device() const {
  return impl_->info;
}
bool VulkanContext::validation_enabled() const {
  return impl_->validation;
}

std::vector<std::string> VulkanContext::validation_messages() const {
  std::lock_guard lock(impl_->messages_mutex);
  return impl_->messages;
}

void VulkanContext::clear_validation_messages() {
  std::lock_guard lock(impl_->messages_mutex);
  impl_->messages.clear();
}

Expected<std::vector<DeviceInfo>> list_devices(const ContextOptions& options) {
  VulkanContext::Impl impl;
  if (auto err = create_instance(impl, options); !err.empty()) return Error{err};
  const auto devices = physical_devices(impl);
  if (devices.empty()) return Error{kNoDevice};
  std::vector<DeviceInfo> out;
  for (size_t i = 0; i < devices.size(); ++i)
    out.push_back(describe(impl.api, devices[i], static_cast<uint32_t>(i)));
  return out;
}

Expected<std::vector<int>> parse_device_list(const std::string& text,
                                             const ContextOptions& options) {
  auto devices = list_devices(options);
  if (!devices) return devices.failure();
  const int count = static_cast<int>(devices->size());
  if (count == 0) return Error{"devices: no Vulkan device found"};
  std::vector<int> out;
  if (text == "all") {
    for (int i = 0; i < count; ++i)
      out.push_back(i);
    return out;
  }
  std::string_view rest = text;
  while (true) {
    const size_t comma = rest.find(',');
    const std::string item(rest.substr(0, comma));
    char* end = nullptr;
    const long index = std::strtol(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0' || index < 0)
      return Error{fmt::format("devices '{}': expected 'all' or device indices such as 0,1", text)};
    if (index >= count)
      return Error{
          fmt::format("devices '{}': there is no device {} ('autobatch devices' lists "
                      "{} device{})",
                      text, index, count, count == 1 ? "" : "s")};
    out.push_back(static_cast<int>(index));
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  return out;
}

bool has_gpu(const ContextOptions& options) {
  auto devices = list_devices(options);
  return devices && std::any_of(devices->begin(), devices->end(),
                                [](const DeviceInfo& d) { return d.type != "cpu"; });
}

}  // namespace ab
