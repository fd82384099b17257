// Device buffers and host transfers. Storage buffers live in device-local memory; the host moves
// data through a temporary host-visible staging buffer and a one-shot command buffer, which works
// the same on a discrete GPU and on lavapipe.
#pragma once

#include <cstdint>
#include <string>

#include "autobatch/expected.h"
#include "engine/device/context_impl.h"

namespace ab {

class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer(DeviceBuffer&& other) noexcept { *this = std::move(other); }
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
  ~DeviceBuffer() { reset(); }

  // A storage buffer (also a transfer source/destination and indirect-argument buffer).
  static Expected<DeviceBuffer> create(VulkanContext::Impl& ctx, uint64_t bytes,
                                       bool host_visible = false);
  void reset();

  VkBuffer handle() const { return buffer_; }
  uint64_t size() const { return size_; }
  void* mapped() const { return mapped_; }

 private:
  VulkanContext::Impl* ctx_ = nullptr;
  VkBuffer buffer_ = VK_NULL_HANDLE;
  VkDeviceMemory memory_ = VK_NULL_HANDLE;
  uint64_t size_ = 0;
  void* mapped_ = nullptr;
};

// Records commands into a fresh command buffer, submits it and waits.
template <class F>
Status submit_and_wait(VulkanContext::Impl& ctx, F record);

Status upload(VulkanContext::Impl& ctx, const DeviceBuffer& dst, uint64_t offset, const void* data,
              uint64_t bytes);
Status download(VulkanContext::Impl& ctx, const DeviceBuffer& src, uint64_t offset, void* data,
                uint64_t bytes);

// A full compute->compute (+ indirect, transfer) barrier.
void compute_barrier(VulkanContext::Impl& ctx, VkCommandBuffer cmd);

// ---- implementation of the template ----
Status submit_commands(VulkanContext::Impl& ctx, VkCommandBuffer cmd);
Expected<VkCommandBuffer> begin_one_shot(VulkanContext::Impl& ctx);

template <class F>
Status submit_and_wait(VulkanContext::Impl& ctx, F record) {
  std::lock_guard lock(ctx.submit_mutex);
  auto cmd = begin_one_shot(ctx);
  if (!cmd) return Error{cmd.error()};
  record(*cmd);
  return submit_commands(ctx, *cmd);
}

}  // namespace ab
