// The Vulkan context: loader, instance, optional validation layer, one device and one compute
// queue. Host applications create one and share it between programs and runs (shared_ptr).
//
// Contract: create() never crashes when Vulkan is missing; it returns an Error whose message says
// what to install. With validation on, every warning or error the layer reports is recorded (and
// kept until cleared) so tests can fail on any message.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <vulkan/vulkan_core.h>

#include "autobatch/expected.h"

namespace ab {

struct ContextOptions {
  bool validation = false;  // enable VK_LAYER_KHRONOS_validation (error if it is not installed)
  int device_index = -1;    // -1: prefer discrete > integrated > virtual > cpu; else this index
  std::string loader_path;  // Vulkan loader to dlopen; empty: the system's libvulkan.so.1
};

struct DeviceInfo {
  uint32_t index = 0;
  std::string name;
  std::string type;  // "discrete", "integrated", "virtual", "cpu", "other"
  uint32_t api_version = 0;
  std::string driver;  // driver name and info where the device reports them
  uint32_t subgroup_size = 0;
  uint64_t max_storage_buffer_range = 0;  // bytes one stack binding may span (bounds a batch)
  bool subgroup_ballot = false;  // compute shaders have subgroup ballot (fewer atomics per step)
  // compute shaders have subgroup arithmetic (subgroupMin, subgroupAdd): the local schedule's
  // subgroup and lane scopes need it
  bool subgroup_arithmetic = false;
  // Float controls (Vulkan 1.2) for 32-bit floats. Without signed-zero/inf/NaN preservation the
  // driver may treat float math as fast math (x * 0.0 -> 0, x / 0.0 -> 0): results then can differ
  // from the CPU backends wherever a NaN, an infinity or a -0 occurs (`autobatch devices` warns).
  bool float_specials_preserved = false;  // shaderSignedZeroInfNanPreserveFloat32
  bool denorms_preserved = false;         // shaderDenormPreserveFloat32 (else may flush to zero)
};

// The host application's own Vulkan objects, for an engine that runs on the app's device
// (docs/embedding.md, "The device contract"). The host keeps ownership: it destroys them only
// after every autobatch object made from the context has been destroyed and the device has
// finished the work recorded by them. The device must be Vulkan 1.2 or newer and the queue
// family must support compute; autobatch needs no extension and no feature beyond Vulkan 1.2's
// core (it reads subgroup and float-control properties, which need no enabling).
struct ExternalDevice {
  PFN_vkGetInstanceProcAddr get_instance_proc_addr = nullptr;  // the host's loader entry point
  VkInstance instance = VK_NULL_HANDLE;
  VkPhysicalDevice physical_device = VK_NULL_HANDLE;
  VkDevice device = VK_NULL_HANDLE;
  uint32_t queue_family = 0;
  // The queue the engine's blocking calls submit to (uploads, downloads, VulkanRun::run/step):
  // the host must not use it from another thread during them (Vulkan's external
  // synchronisation rule for queues).
  VkQueue queue = VK_NULL_HANDLE;
};

// The order VulkanContext::create prefers device types in when no index is given (lower first):
// discrete GPU, integrated, virtual, CPU, other. A host picking its own device (the debugger's
// window does) can follow the same order.
int device_type_rank(VkPhysicalDeviceType type);

class VulkanContext {
 public:
  struct Impl;
  static Expected<std::shared_ptr<VulkanContext>> create(const ContextOptions& options = {});
  // A context on the host's device (bring your own device). Checks the API version and the queue
  // family; creates only a command pool of its own. validation_enabled() is false: the host's
  // validation layer, if it enabled one, reports to the host.
  static Expected<std::shared_ptr<VulkanContext>> create_external(const ExternalDevice& device);
  // Whether the context runs on a host's device (create_external).
  bool external() const;
  ~VulkanContext();

  const DeviceInfo& device() const;
  bool validation_enabled() const;
  // Warnings and errors the validation layer reported since the last clear.
  std::vector<std::string> validation_messages() const;
  void clear_validation_messages();

  Impl& impl() { return *impl_; }

 private:
  explicit VulkanContext(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// The devices the loader reports, in its order (the indices ContextOptions::device_index takes).
Expected<std::vector<DeviceInfo>> list_devices(const ContextOptions& options = {});

// A list of devices as `--devices` and Python's `devices=` take it: "all" (every device
// list_devices reports) or indices into that list, "0,1". An index may repeat: that device is then
// opened once more as a logical device of its own (for testing sharding on one GPU). An Error
// names a malformed list or an index past the devices.
Expected<std::vector<int>> parse_device_list(const std::string& text,
                                             const ContextOptions& options = {});

// Whether the loader reports a device that is not a CPU implementation (lavapipe reports
// VK_PHYSICAL_DEVICE_TYPE_CPU). Without one, large programs such as the NUTS sampler compile for
// seconds to minutes and then run no faster than on the CPU VM: `autobatch sample` and the Python
// `sample` pick the vm then (their backend "auto"). False when there is no Vulkan at all.
bool has_gpu(const ContextOptions& options = {});

}  // namespace ab
