// ComputeKernel (autobatch/compute.h): one pipeline over N storage buffers. A run is a single
// submission — staging copies in, the dispatch, copies out — so its wall time is what a caller
// of the kernel waits for. A repeated run adds one submission per further dispatch (each reads
// back only the flag word) and one for the final copies out.
#include "autobatch/compute.h"

#include <fmt/format.h>

#include <chrono>
#include <cstring>

#include "codegen/glsl_prelude.h"
#include "codegen/shader_texts.h"
#include "engine/device/buffers.h"
#include "engine/device/context_impl.h"
#include "engine/device/shader_compiler.h"

namespace ab {

struct ComputeKernel::Impl {
  std::shared_ptr<VulkanContext> context;  // keeps the device alive
  VulkanContext::Impl* ctx = nullptr;
  uint32_t buffer_count = 0;
  uint32_t push_constant_words = 0;
  VkDescriptorSetLayout set_layout = VK_NULL_HANDLE;
  VkPipelineLayout pipeline_layout = VK_NULL_HANDLE;
  VkPipeline pipeline = VK_NULL_HANDLE;
  double compile_seconds = 0;

  ~Impl() {
    if (!ctx) return;
    if (pipeline) ctx->api.vkDestroyPipeline(ctx->device, pipeline, nullptr);
    if (pipeline_layout) ctx->api.vkDestroyPipelineLayout(ctx->device, pipeline_layout, nullptr);
    if (set_layout) ctx->api.vkDestroyDescriptorSetLayout(ctx->device, set_layout, nullptr);
  }
};

namespace {

// A descriptor pool holding the one set a run binds; destroyed (with the set) at scope exit.
struct RunDescriptors {
  VulkanContext::Impl* ctx = nullptr;
  VkDescriptorPool pool = VK_NULL_HANDLE;
  VkDescriptorSet set = VK_NULL_HANDLE;
  ~RunDescriptors() {
    if (pool) ctx->api.vkDestroyDescriptorPool(ctx->device, pool, nullptr);
  }
};

// A run's arguments against the kernel; fills the words on the device per binding and which
// bindings are device-only (ComputeKernel::Repeat::device_only).
Status check_run(const ComputeKernel::Impl& k, const std::vector<std::vector<uint32_t>>& buffers,
                 uint32_t groups, const std::vector<uint32_t>& push_constants,
                 const ComputeKernel::Repeat* repeat, std::vector<uint64_t>& words,
                 std::vector<bool>& device_only) {
  const auto& ctx = *k.ctx;
  if (buffers.size() != k.buffer_count)
    return Error{fmt::format("compute kernel run with {} buffers, the kernel binds {}",
                             buffers.size(), k.buffer_count)};
  if (push_constants.size() != k.push_constant_words)
    return Error{fmt::format("compute kernel run with {} push-constant words, the kernel takes {}",
                             push_constants.size(), k.push_constant_words)};
  const uint32_t max_groups = ctx.properties.limits.maxComputeWorkGroupCount[0];
  if (groups == 0 || groups > max_groups)
    return Error{
        fmt::format("compute kernel run with {} workgroups: 1 to {} allowed", groups, max_groups)};
  words.assign(buffers.size(), 0);
  device_only.assign(buffers.size(), false);
  for (size_t i = 0; i < buffers.size(); ++i)
    words[i] = buffers[i].size();
  if (!repeat) return Ok{};
  if (repeat->flag_buffer >= buffers.size() || buffers[repeat->flag_buffer].empty())
    return Error{
        fmt::format("compute kernel run_repeated: flag buffer {} must be a non-empty "
                    "buffer of the kernel",
                    repeat->flag_buffer)};
  if (repeat->max_dispatches == 0)
    return Error{"compute kernel run_repeated: max_dispatches must be at least 1"};
  if (repeat->device_only.size() != repeat->device_words.size())
    return Error{"compute kernel run_repeated: device_only and device_words differ in length"};
  for (size_t j = 0; j < repeat->device_only.size(); ++j) {
    const uint32_t b = repeat->device_only[j];
    if (b >= buffers.size() || !buffers[b].empty() || b == repeat->flag_buffer)
      return Error{fmt::format(
          "compute kernel run_repeated: device-only binding {} must be an empty host buffer "
          "and not the flag",
          b)};
    device_only[b] = true;
    words[b] = repeat->device_words[j];
  }
  return Ok{};
}

// Make the copies visible to the host's reads of the mapped staging memory.
void to_host_barrier(VulkanContext::Impl& ctx, VkCommandBuffer cmd) {
  VkMemoryBarrier to_host{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
  to_host.srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT;
  to_host.dstAccessMask = VK_ACCESS_HOST_READ_BIT;
  ctx.api.vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_HOST_BIT, 0,
                               1, &to_host, 0, nullptr, 0, nullptr);
}

// Each host buffer's words from the staging buffer into its device buffer (an empty one cleared),
// device-only bindings left alone.
void record_uploads(VulkanContext::Impl& ctx, VkCommandBuffer cmd,
                    const std::vector<std::vector<uint32_t>>& buffers,
                    const std::vector<bool>& device_only, const std::vector<uint64_t>& offsets,
                    const DeviceBuffer& staging, const std::vector<DeviceBuffer>& device) {
  for (size_t i = 0; i < buffers.size(); ++i) {
    if (device_only[i]) continue;
    const uint64_t bytes = buffers[i].size() * 4;
    if (bytes == 0) {
      ctx.api.vkCmdFillBuffer(cmd, device[i].handle(), 0, VK_WHOLE_SIZE, 0);
      continue;
    }
    VkBufferCopy region{offsets[i], 0, bytes};
    ctx.api.vkCmdCopyBuffer(cmd, staging.handle(), device[i].handle(), 1, &region);
  }
}

Status make_descriptors(ComputeKernel::Impl& k, const std::vector<DeviceBuffer>& buffers,
                        RunDescriptors& out) {
  auto& ctx = *k.ctx;
  out.ctx = &ctx;
  if (k.buffer_count == 0) return Ok{};  // nothing to bind (and a pool may not be empty)
  VkDescriptorPoolSize size{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, k.buffer_count};
  VkDescriptorPoolCreateInfo pci{VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO};
  pci.maxSets = 1;
  pci.poolSizeCount = 1;
  pci.pPoolSizes = &size;
  VkResult r = ctx.api.vkCreateDescriptorPool(ctx.device, &pci, nullptr, &out.pool);
  if (r != VK_SUCCESS) return Error{vk_error("vkCreateDescriptorPool", r)};
  VkDescriptorSetAllocateInfo ai{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO};
  ai.descriptorPool = out.pool;
  ai.descriptorSetCount = 1;
  ai.pSetLayouts = &k.set_layout;
  r = ctx.api.vkAllocateDescriptorSets(ctx.device, &ai, &out.set);
  if (r != VK_SUCCESS) return Error{vk_error("vkAllocateDescriptorSets", r)};
  std::vector<VkDescriptorBufferInfo> infos;
  for (const DeviceBuffer& b : buffers)
    infos.push_back({b.handle(), 0, VK_WHOLE_SIZE});
  std::vector<VkWriteDescriptorSet> writes;
  for (uint32_t b = 0; b < infos.size(); ++b) {
    VkWriteDescriptorSet w{VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET};
    w.dstSet = out.set;
    w.dstBinding = b;
    w.descriptorCount = 1;
    w.descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    w.pBufferInfo = &infos[b];
    writes.push_back(w);
  }
  ctx.api.vkUpdateDescriptorSets(ctx.device, static_cast<uint32_t>(writes.size()), writes.data(), 0,
                                 nullptr);
  return Ok{};
}

// Where buffer i's words sit in the shared staging buffer (16-byte aligned regions).
std::vector<uint64_t> staging_offsets(const std::vector<std::vector<uint32_t>>& buffers,
                                      uint64_t& total) {
  std::vector<uint64_t> offsets;
  total = 0;
  for (const auto& words : buffers) {
    offsets.push_back(total);
    total += (words.size() * 4 + 15) / 16 * 16;
  }
  return offsets;
}

// compile_glsl words its message for the generated kernels; a custom kernel's caller wants only
// glslang's log.
std::string glslang_log(const std::string& message) {
  const std::string prefix = "generated GLSL does not compile (): ";
  return message.starts_with(prefix) ? message.substr(prefix.size()) : message;
}

}  // namespace

ComputeKernel::ComputeKernel(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
ComputeKernel::~ComputeKernel() = default;

Expected<std::shared_ptr<ComputeKernel>> ComputeKernel::create(
    std::shared_ptr<VulkanContext> context, const std::string& glsl, uint32_t buffer_count,
    const ComputeKernelOptions& options) {
  if (!context) return Error{"no Vulkan context"};
  const auto start = std::chrono::steady_clock::now();
  auto impl = std::make_unique<Impl>();
  impl->context = context;
  impl->ctx = &context->impl();
  impl->buffer_count = buffer_count;
  impl->push_constant_words = options.push_constant_words;
  auto& ctx = *impl->ctx;
  const VkPhysicalDeviceLimits& limits = ctx.properties.limits;
  if (buffer_count > limits.maxPerStageDescriptorStorageBuffers)
    return Error{fmt::format("a compute kernel with {} storage buffers: the device allows {}",
                             buffer_count, limits.maxPerStageDescriptorStorageBuffers)};
  if (options.push_constant_words * 4 > limits.maxPushConstantsSize)
    return Error{
        fmt::format("a compute kernel with {} bytes of push constants: the device allows {}",
                    options.push_constant_words * 4, limits.maxPushConstantsSize)};

  const std::string cache_dir =
      options.disk_cache ? (options.cache_dir.empty() ? default_cache_dir() : options.cache_dir)
                         : std::string();
  auto spirv = compile_glsl(glsl, "", cache_dir);
  if (!spirv) return Error{"compute kernel does not compile: " + glslang_log(spirv.error())};

  std::vector<VkDescriptorSetLayoutBinding> bindings;
  for (uint32_t b = 0; b < buffer_count; ++b)
    bindings.push_back(
        {b, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1, VK_SHADER_STAGE_COMPUTE_BIT, nullptr});
  VkDescriptorSetLayoutCreateInfo dci{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO};
  dci.bindingCount = buffer_count;
  dci.pBindings = bindings.data();
  VkResult r = ctx.api.vkCreateDescriptorSetLayout(ctx.device, &dci, nullptr, &impl->set_layout);
  if (r != VK_SUCCESS) return Error{vk_error("vkCreateDescriptorSetLayout", r)};
  VkPushConstantRange range{VK_SHADER_STAGE_COMPUTE_BIT, 0, options.push_constant_words * 4};
  VkPipelineLayoutCreateInfo lci{VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
  lci.setLayoutCount = 1;
  lci.pSetLayouts = &impl->set_layout;
  lci.pushConstantRangeCount = options.push_constant_words > 0 ? 1 : 0;
  lci.pPushConstantRanges = &range;
  r = ctx.api.vkCreatePipelineLayout(ctx.device, &lci, nullptr, &impl->pipeline_layout);
  if (r != VK_SUCCESS) return Error{vk_error("vkCreatePipelineLayout", r)};

  auto pipeline = create_compute_pipeline(ctx, impl->pipeline_layout, VK_NULL_HANDLE, spirv->spirv);
  if (!pipeline) return Error{pipeline.error()};
  impl->pipeline = *pipeline;
  impl->compile_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return std::shared_ptr<ComputeKernel>(new ComputeKernel(std::move(impl)));
}

Status ComputeKernel::run(std::vector<std::vector<uint32_t>>& buffers, uint32_t groups,
                          const std::vector<uint32_t>& push_constants) {
  auto ran = run_impl(buffers, groups, push_constants, nullptr);
  if (!ran) return Error{ran.error()};
  return Ok{};
}

Expected<uint32_t> ComputeKernel::run_repeated(std::vector<std::vector<uint32_t>>& buffers,
                                               uint32_t groups,
                                               const std::vector<uint32_t>& push_constants,
                                               const Repeat& repeat) {
  return run_impl(buffers, groups, push_constants, &repeat);
}

Expected<uint32_t> ComputeKernel::run_impl(std::vector<std::vector<uint32_t>>& buffers,
                                           uint32_t groups,
                                           const std::vector<uint32_t>& push_constants,
                                           const Repeat* repeat) {
  Impl& k = *impl_;
  auto& ctx = *k.ctx;
  // Words on the device per binding; device-only bindings are neither uploaded nor read back.
  std::vector<uint64_t> words;
  std::vector<bool> device_only;
  if (auto s = check_run(k, buffers, groups, push_constants, repeat, words, device_only); !s)
    return Error{s.error()};

  std::vector<DeviceBuffer> device;
  for (size_t i = 0; i < buffers.size(); ++i) {
    auto b = DeviceBuffer::create(ctx, words[i] * 4);
    if (!b) return Error{b.error()};
    device.push_back(std::move(*b));
  }
  uint64_t staging_bytes = 0;
  const std::vector<uint64_t> offsets = staging_offsets(buffers, staging_bytes);
  auto staging = DeviceBuffer::create(ctx, staging_bytes, true);
  if (!staging) return Error{staging.error()};
  auto* staged = static_cast<char*>(staging->mapped());
  for (size_t i = 0; i < buffers.size(); ++i)
    std::memcpy(staged + offsets[i], buffers[i].data(), buffers[i].size() * 4);
  RunDescriptors descriptors;
  if (Status s = make_descriptors(k, device, descriptors); !s) return Error{s.error()};

  auto dispatch = [&](VkCommandBuffer cmd) {
    ctx.api.vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, k.pipeline);
    if (descriptors.set)
      ctx.api.vkCmdBindDescriptorSets(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, k.pipeline_layout, 0, 1,
                                      &descriptors.set, 0, nullptr);
    if (!push_constants.empty())
      ctx.api.vkCmdPushConstants(cmd, k.pipeline_layout, VK_SHADER_STAGE_COMPUTE_BIT, 0,
                                 static_cast<uint32_t>(push_constants.size() * 4),
                                 push_constants.data());
    ctx.api.vkCmdDispatch(cmd, groups, 1, 1);
    compute_barrier(ctx, cmd);
  };
  auto read_back = [&](VkCommandBuffer cmd) {
    for (size_t i = 0; i < buffers.size(); ++i) {
      const uint64_t bytes = buffers[i].size() * 4;
      if (bytes == 0 || device_only[i]) continue;
      VkBufferCopy region{0, offsets[i], bytes};
      ctx.api.vkCmdCopyBuffer(cmd, device[i].handle(), staging->handle(), 1, &region);
    }
    to_host_barrier(ctx, cmd);
  };
  // The first submission: uploads, the first dispatch, and (one dispatch only) every read-back;
  // repeated, just the flag word comes back.
  auto read_flag = [&](VkCommandBuffer cmd) {
    const uint32_t f = repeat->flag_buffer;
    VkBufferCopy region{0, offsets[f], 4};
    ctx.api.vkCmdCopyBuffer(cmd, device[f].handle(), staging->handle(), 1, &region);
    to_host_barrier(ctx, cmd);
  };
  Status submitted = submit_and_wait(ctx, [&](VkCommandBuffer cmd) {
    record_uploads(ctx, cmd, buffers, device_only, offsets, *staging, device);
    if (repeat) ctx.api.vkCmdFillBuffer(cmd, device[repeat->flag_buffer].handle(), 0, 4, 0);
    compute_barrier(ctx, cmd);
    dispatch(cmd);
    if (repeat)
      read_flag(cmd);
    else
      read_back(cmd);
  });
  if (!submitted) return Error{submitted.error()};
  uint32_t dispatches = 1;
  if (repeat) {
    auto flag = [&] {
      uint32_t word = 0;
      std::memcpy(&word, staged + offsets[repeat->flag_buffer], 4);
      return word;
    };
    while (flag() != 0 && dispatches < repeat->max_dispatches) {
      submitted = submit_and_wait(ctx, [&](VkCommandBuffer cmd) {
        ctx.api.vkCmdFillBuffer(cmd, device[repeat->flag_buffer].handle(), 0, 4, 0);
        compute_barrier(ctx, cmd);
        dispatch(cmd);
        read_flag(cmd);
      });
      if (!submitted) return Error{submitted.error()};
      ++dispatches;
    }
    submitted = submit_and_wait(ctx, [&](VkCommandBuffer cmd) { read_back(cmd); });
    if (!submitted) return Error{submitted.error()};
  }
  for (size_t i = 0; i < buffers.size(); ++i)
    if (!device_only[i]) std::memcpy(buffers[i].data(), staged + offsets[i], buffers[i].size() * 4);
  return dispatches;
}

uint32_t ComputeKernel::buffer_count() const {
  return impl_->buffer_count;
}

double ComputeKernel::compile_seconds() const {
  return impl_->compile_seconds;
}

const std::string& op_prelude_glsl() {
  // The helpers set the fault codes of ab_layout.h, which a hand-written kernel does not declare
  // (a generated one does, before the prelude).
  static const std::string text = std::string(kAbLayoutText) + glsl_prelude();
  return text;
}

}  // namespace ab
