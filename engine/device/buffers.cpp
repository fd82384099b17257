#include "engine/device/buffers.h"

#include <fmt/format.h>

#include <cstring>

namespace ab {
namespace {

int find_memory_type(const VkPhysicalDeviceMemoryProperties& mem, uint32_t allowed,
                     VkMemoryPropertyFlags want, VkMemoryPropertyFlags prefer) {
  int fallback = -1;
  for (uint32_t i = 0; i < mem.memoryTypeCount; ++i) {
    if (!(allowed & (1u << i))) continue;
    const VkMemoryPropertyFlags f = mem.memoryTypes[i].propertyFlags;
    if ((f & want) != want) continue;
    if ((f & prefer) == prefer) return static_cast<int>(i);
    if (fallback < 0) fallback = static_cast<int>(i);
  }
  return fallback;
}

}  // namespace

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
  if (this == &other) return *this;
  reset();
  ctx_ = other.ctx_;
  buffer_ = other.buffer_;
  memory_ = other.memory_;
  size_ = other.size_;
  mapped_ = other.mapped_;
  other.buffer_ = VK_NULL_HANDLE;
  other.memory_ = VK_NULL_HANDLE;
  other.mapped_ = nullptr;
  return *this;
}

void DeviceBuffer::reset() {
  if (!ctx_) return;
  if (mapped_) ctx_->api.vkUnmapMemory(ctx_->device, memory_);
  if (buffer_) ctx_->api.vkDestroyBuffer(ctx_->device, buffer_, nullptr);
  if (memory_) ctx_->api.vkFreeMemory(ctx_->device, memory_, nullptr);
  buffer_ = VK_NULL_HANDLE;
  memory_ = VK_NULL_HANDLE;
  mapped_ = nullptr;
}

Expected<DeviceBuffer> DeviceBuffer::create(VulkanContext::Impl& ctx, uint64_t bytes,
                                            bool host_visible) {
  DeviceBuffer b;
  b.ctx_ = &ctx;
  b.size_ = bytes < 16 ? 16 : (bytes + 15) / 16 * 16;
  VkBufferCreateInfo bci{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
  bci.size = b.size_;
  bci.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
              VK_BUFFER_USAGE_TRANSFER_DST_BIT | VK_BUFFER_USAGE_INDIRECT_BUFFER_BIT;
  bci.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
  VkResult r = ctx.api.vkCreateBuffer(ctx.device, &bci, nullptr, &b.buffer_);
  if (r != VK_SUCCESS) return Error{vk_error("vkCreateBuffer", r)};
  VkMemoryRequirements req;
  ctx.api.vkGetBufferMemoryRequirements(ctx.device, b.buffer_, &req);
  const VkMemoryPropertyFlags want =
      host_visible ? VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT : 0;
  const VkMemoryPropertyFlags prefer =
      host_visible ? VK_MEMORY_PROPERTY_HOST_CACHED_BIT : VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT;
  const int type = find_memory_type(ctx.memory, req.memoryTypeBits, want, prefer);
  if (type < 0) return Error{"no suitable Vulkan memory type for a buffer"};
  VkMemoryAllocateInfo mai{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
  mai.allocationSize = req.size;
  mai.memoryTypeIndex = static_cast<uint32_t>(type);
  r = ctx.api.vkAllocateMemory(ctx.device, &mai, nullptr, &b.memory_);
  // The size, not advice: only the caller knows what the buffer's size depends on.
  if (r != VK_SUCCESS)
    return Error{vk_error("vkAllocateMemory", r) + fmt::format(" ({} MiB)", req.size >> 20)};
  r = ctx.api.vkBindBufferMemory(ctx.device, b.buffer_, b.memory_, 0);
  if (r != VK_SUCCESS) return Error{vk_error("vkBindBufferMemory", r)};
  if (host_visible) {
    r = ctx.api.vkMapMemory(ctx.device, b.memory_, 0, VK_WHOLE_SIZE, 0, &b.mapped_);
    if (r != VK_SUCCESS) return Error{vk_error("vkMapMemory", r)};
  }
  return b;
}

Expected<VkCommandBuffer> begin_one_shot(VulkanContext::Impl& ctx) {
  VkCommandBufferAllocateInfo ai{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
  ai.commandPool = ctx.command_pool;
  ai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  ai.commandBufferCount = 1;
  VkCommandBuffer cmd = VK_NULL_HANDLE;
  VkResult r = ctx.api.vkAllocateCommandBuffers(ctx.device, &ai, &cmd);
  if (r != VK_SUCCESS) return Error{vk_error("vkAllocateCommandBuffers", r)};
  VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  ctx.api.vkBeginCommandBuffer(cmd, &bi);
  // Order this work after everything submitted before it (the barrier's first scope).
  compute_barrier(ctx, cmd);
  return cmd;
}

Status submit_commands(VulkanContext::Impl& ctx, VkCommandBuffer cmd) {
  ctx.api.vkEndCommandBuffer(cmd);
  VkFenceCreateInfo fci{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
  VkFence fence = VK_NULL_HANDLE;
  VkResult r = ctx.api.vkCreateFence(ctx.device, &fci, nullptr, &fence);
  if (r == VK_SUCCESS) {
    VkSubmitInfo si{VK_STRUCTURE_TYPE_SUBMIT_INFO};
    si.commandBufferCount = 1;
    si.pCommandBuffers = &cmd;
    r = ctx.api.vkQueueSubmit(ctx.queue, 1, &si, fence);
    if (r == VK_SUCCESS) r = ctx.api.vkWaitForFences(ctx.device, 1, &fence, VK_TRUE, UINT64_MAX);
    ctx.api.vkDestroyFence(ctx.device, fence, nullptr);
  }
  ctx.api.vkFreeCommandBuffers(ctx.device, ctx.command_pool, 1, &cmd);
  if (r != VK_SUCCESS) return Error{vk_error("vkQueueSubmit/vkWaitForFences", r)};
  return Ok{};
}

void compute_barrier(VulkanContext::Impl& ctx, VkCommandBuffer cmd) {
  VkMemoryBarrier mb{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
  mb.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
  mb.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT |
                     VK_ACCESS_INDIRECT_COMMAND_READ_BIT | VK_ACCESS_TRANSFER_READ_BIT |
                     VK_ACCESS_TRANSFER_WRITE_BIT;
  ctx.api.vkCmdPipelineBarrier(
      cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
      VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_DRAW_INDIRECT_BIT |
          VK_PIPELINE_STAGE_TRANSFER_BIT,
      0, 1, &mb, 0, nullptr, 0, nullptr);
}

Status upload(VulkanContext::Impl& ctx, const DeviceBuffer& dst, uint64_t offset, const void* data,
              uint64_t bytes) {
  if (bytes == 0) return Ok{};
  auto staging = DeviceBuffer::create(ctx, bytes, true);
  if (!staging) return Error{staging.error()};
  std::memcpy(staging->mapped(), data, bytes);
  return submit_and_wait(ctx, [&](VkCommandBuffer cmd) {
    VkBufferCopy region{0, offset, bytes};
    ctx.api.vkCmdCopyBuffer(cmd, staging->handle(), dst.handle(), 1, &region);
  });
}

Status download(VulkanContext::Impl& ctx, const DeviceBuffer& src, uint64_t offset, void* data,
                uint64_t bytes) {
  if (bytes == 0) return Ok{};
  auto staging = DeviceBuffer::create(ctx, bytes, true);
  if (!staging) return Error{staging.error()};
  auto st = submit_and_wait(ctx, [&](VkCommandBuffer cmd) {
    VkBufferCopy region{offset, 0, bytes};
    ctx.api.vkCmdCopyBuffer(cmd, src.handle(), staging->handle(), 1, &region);
  });
  if (!st) return st;
  std::memcpy(data, staging->mapped(), bytes);
  return Ok{};
}

}  // namespace ab
