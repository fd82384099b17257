#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>

#include "ab_layout.h"
#include "engine/src/buffers.h"
#include "engine/src/program_impl.h"

namespace ab {
namespace {

using Clock = std::chrono::steady_clock;

Kernel local_kernel(LocalScope scope) {
  switch (scope) {
    case LocalScope::Subgroup:
      return Kernel::LocalSubgroup;
    case LocalScope::Workgroup:
      return Kernel::LocalWorkgroup;
    case LocalScope::Lane:
      return Kernel::LocalLane;
  }
  return Kernel::LocalSubgroup;
}

uint32_t groups_for(uint32_t n) {
  return (n + AB_GROUP_SIZE - 1) / AB_GROUP_SIZE;
}

}  // namespace

struct VulkanRun::Impl {
  std::shared_ptr<VulkanProgram> program_ref;
  VulkanProgram::Impl* prog = nullptr;
  VulkanContext::Impl* ctx = nullptr;
  const LoweredProgram* lp = nullptr;
  const StateLayout* layout = nullptr;
  RunOptions options;
  VulkanOptions vulkan;
  uint32_t lanes = 0, depth = 0, nblocks = 0, trace_cap = 0;
  bool global = false, fused = false;  // fused: the global schedule in one subgroup
  DeviceBuffer ctrl, state, list, uniforms, readback, dummy, stream;
  uint32_t record_words = 0;  // words(emit type); 0 when the program never emits
  RunResult streamed;         // records drained so far (RunResult::emitted, records_emitted)
  std::vector<DeviceBuffer> arenas;
  // The state as created (slot-major), kept for record_restart; `initial` is its device copy,
  // uploaded by the first restart.
  std::vector<uint32_t> initial_image;
  DeviceBuffer initial;
  VkDescriptorPool pool = VK_NULL_HANDLE;
  VkDescriptorSet set = VK_NULL_HANDLE;
  VkFence fence = VK_NULL_HANDLE;
  std::map<uint64_t, VkCommandBuffer> recorded;  // by step count (global) or budget (local)
  PushConstants push;
  bool finished = false;
  uint64_t steps = 0;
  // Local schedule: the lanes busy in the groups' steps (lane scope: in their loop iterations),
  // and the groups' steps times their lanes (the AB_CTRL_LANE_* counters, summed)
  uint64_t lane_iterations = 0, lane_slots = 0;
  std::vector<TraceStep> trace;
  VulkanStats stats;
  Clock::time_point created;
  double compile_seconds_at_creation = 0;  // to leave compilation out of run_seconds

  ~Impl() {
    if (!ctx) return;
    std::lock_guard lock(ctx->submit_mutex);
    ctx->api.vkQueueWaitIdle(ctx->queue);
    for (auto& [n, cmd] : recorded)
      ctx->api.vkFreeCommandBuffers(ctx->device, ctx->command_pool, 1, &cmd);
    if (fence) ctx->api.vkDestroyFence(ctx->device, fence, nullptr);
    if (pool) ctx->api.vkDestroyDescriptorPool(ctx->device, pool, nullptr);
  }

  // The control buffer (header, per-block counts and executions, trace), which the readback
  // buffer mirrors word for word.
  uint64_t ctrl_words() const { return AB_CTRL_HEADER_WORDS + 2ull * nblocks + 2ull * trace_cap; }

  Status allocate(const Batch& batch);
  // Downloads the per-lane state (slot-major, see state_layout.h).
  Status read_state(std::vector<uint32_t>& image);
  // Entries in use in stack k: its deepest stack pointer over all lanes (clamped to the depth).
  uint32_t live_entries(int k, const std::vector<uint32_t>& image) const;
  // Downloads each stack's live prefix: entries [0, entries[k]) of stack k, laid out
  // [entry][word][lane] as on the device (the prefix is contiguous there).
  Status read_live_stacks(const std::vector<uint32_t>& image,
                          std::vector<std::vector<uint32_t>>& stacks,
                          std::vector<uint32_t>& entries);
  uint64_t stack_offset_words(int k) const {
    return uint64_t{layout->stacks[k].base} * depth * lanes;
  }
  Expected<BatchSnapshot> take_snapshot(bool with_stacks);
  // Sets stats.utilization from the counters so far: `header` is the control buffer's header as
  // the device last left it (the global schedule keeps its sums there).
  void update_utilization(const uint32_t* header);
  Status upload_initial_state(const Batch& batch);
  Expected<VkCommandBuffer> record(uint64_t n);
  // Why this run cannot be recorded into a host's command buffer, or empty.
  std::string unrecordable() const;
  // The region of `words` rows starting at state slot `slot`.
  DeviceRegion state_region(int32_t slot, uint32_t words) const {
    if (slot < 0 || words == 0) return {};
    return {state.handle(), uint64_t{static_cast<uint32_t>(slot)} * lanes * 4,
            uint64_t{words} * lanes * 4, words};
  }
  // Steps one submission runs at most: global scheduler steps (fused: in one dispatch), or local
  // group steps per dispatch.
  uint64_t steps_per_submission() const {
    return global && !fused ? vulkan.steps_per_submission : vulkan.local_steps_per_dispatch;
  }
  Status submit(uint64_t n);
  // Hands the records in the lanes' streams on (RunOptions::on_emit or `streamed`), empties the
  // streams and puts parked lanes back at the block they wait at, so the run goes on.
  Status drain_streams();
  // The generated kernel each dispatch (or each step) of this run runs, in every part.
  Kernel step_kernel() const {
    if (fused) return Kernel::GlobalFused;
    if (global)
      return vulkan.global_mode == GlobalMode::Compacted ? Kernel::GlobalCompacted
                                                         : Kernel::GlobalMasked;
    return local_kernel(vulkan.local_scope);
  }
  size_t step_parts() const { return prog->parts(residency_of(step_kernel())); }
  // A split program's parts in the order a submission dispatches them: forward then back, so
  // that a lane calling into later parts and returning gets through both ways in one submission.
  std::vector<size_t> part_order() const {
    std::vector<size_t> order;
    const size_t parts = step_parts();
    for (size_t p = 0; p < parts; ++p)
      order.push_back(p);
    for (size_t p = parts - 1; p-- > 0;)
      order.push_back(p);
    return order;
  }
  // Every buffer's size against the device before any is allocated.
  Status check_sizes() const;
};

namespace {

// What would make a buffer smaller, by what its size depends on: the lane count, the stack
// depth, or only the program (its uniforms, its blocks), which no batch size changes.
enum class SizedBy { Lanes, LanesAndDepth, Uniforms, Program };

std::string shrink_advice(SizedBy sized_by, const LoweredProgram& lp, uint32_t state_words) {
  switch (sized_by) {
    case SizedBy::Lanes:
      return state_words > 0
                 ? fmt::format("reduce the batch size (each lane holds {} words)", state_words)
                 : "reduce the batch size";
    case SizedBy::LanesAndDepth:
      return "reduce the batch size or the stack depth";
    case SizedBy::Uniforms: {
      // Name the largest uniform: it is what to make smaller.
      const Program& program = *lp.source;
      const Uniform* largest = nullptr;
      for (const Uniform& u : program.uniforms)
        if (!largest || program.types.words(u.type) > program.types.words(largest->type))
          largest = &u;
      const std::string which = largest ? fmt::format(" (the largest is '{}', {})", largest->name,
                                                      program.types.to_string(largest->type))
                                        : "";
      return fmt::format(
          "the uniforms{} are too large for this device; the batch size does not "
          "change their size",
          which);
    }
    case SizedBy::Program:
      return "it grows with the program's blocks, not with the batch size";
  }
  return "";
}

}  // namespace

Status VulkanRun::Impl::check_sizes() const {
  struct Need {
    const char* what;
    uint64_t words;
    SizedBy sized_by;
    uint32_t state_words = 0;
  };
  std::vector<Need> needs = {
      {"control buffer", ctrl_words(), SizedBy::Program},
      {"lane state", uint64_t{layout->slots} * lanes, SizedBy::Lanes, layout->slots},
      {"active-lane list", lanes, SizedBy::Lanes},
      {"uniform data", layout->uniform_words, SizedBy::Uniforms},
  };
  for (uint32_t a = 0; a < layout->arenas; ++a)
    needs.push_back(
        {"stack arena", uint64_t{layout->arena_words[a]} * depth * lanes, SizedBy::LanesAndDepth});
  if (record_words > 0)
    needs.push_back(
        {"output stream", uint64_t{push.stream_cap} * lanes * record_words, SizedBy::Lanes});
  const uint64_t max_range = ctx->properties.limits.maxStorageBufferRange;
  uint64_t total = 0;
  for (const Need& n : needs) {
    if (n.words * 4 > max_range)
      return Error{
          fmt::format("the {} needs {}, more than this device's maxStorageBufferRange ({}): {}",
                      n.what, format_bytes(n.words * 4), format_bytes(max_range),
                      shrink_advice(n.sized_by, *lp, n.state_words))};
    total += n.words * 4;
  }
  // All of it lives in device memory at once; the largest device-local heap bounds the total.
  uint64_t heap = 0;
  for (uint32_t h = 0; h < ctx->memory.memoryHeapCount; ++h)
    if (ctx->memory.memoryHeaps[h].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT)
      heap = std::max<uint64_t>(heap, ctx->memory.memoryHeaps[h].size);
  if (heap > 0 && total > heap)
    return Error{fmt::format(
        "the run needs {} of device memory (lane state, stacks, control), more than this "
        "device's largest memory heap ({}): reduce the batch size or the stack depth",
        format_bytes(total), format_bytes(heap))};
  return Ok{};
}

Status VulkanRun::Impl::allocate(const Batch& batch) {
  // Sizes were checked against the device's limits by check_sizes(); what can still fail here
  // is the allocation itself.
  auto make = [&](DeviceBuffer& b, uint64_t words, const char* what, SizedBy sized_by,
                  uint32_t state_words = 0) -> Status {
    auto created = DeviceBuffer::create(*ctx, std::max<uint64_t>(words, 1) * 4);
    if (!created)
      return Error{fmt::format("cannot allocate the {}: {}: {}", what, created.error(),
                               shrink_advice(sized_by, *lp, state_words))};
    b = std::move(*created);
    return Ok{};
  };
  if (auto s = make(ctrl, ctrl_words(), "control buffer", SizedBy::Program); !s) return s;
  if (auto s =
          make(state, uint64_t{layout->slots} * lanes, "lane state", SizedBy::Lanes, layout->slots);
      !s)
    return s;
  if (auto s = make(list, lanes, "active-lane list", SizedBy::Lanes); !s) return s;
  if (auto s = make(uniforms, layout->uniform_words, "uniform data", SizedBy::Uniforms); !s)
    return s;
  if (auto s = make(dummy, 4, "placeholder", SizedBy::Program); !s) return s;
  if (record_words > 0)
    if (auto s = make(stream, uint64_t{push.stream_cap} * lanes * record_words, "output stream",
                      SizedBy::Lanes);
        !s)
      return s;
  arenas.resize(layout->arenas);
  for (uint32_t a = 0; a < layout->arenas; ++a)
    if (auto s = make(arenas[a], uint64_t{layout->arena_words[a]} * depth * lanes, "stack arena",
                      SizedBy::LanesAndDepth);
        !s)
      return s;
  auto rb = DeviceBuffer::create(*ctx, ctrl_words() * 4, true);
  if (!rb) return Error{rb.error()};
  readback = std::move(*rb);

  VkDescriptorPoolSize size{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, AB_BINDINGS};
  VkDescriptorPoolCreateInfo pci{VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO};
  pci.maxSets = 1;
  pci.poolSizeCount = 1;
  pci.pPoolSizes = &size;
  VkResult r = ctx->api.vkCreateDescriptorPool(ctx->device, &pci, nullptr, &pool);
  if (r != VK_SUCCESS) return Error{vk_error("vkCreateDescriptorPool", r)};
  VkDescriptorSetAllocateInfo ai{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO};
  ai.descriptorPool = pool;
  ai.descriptorSetCount = 1;
  ai.pSetLayouts = &prog->set_layout;
  r = ctx->api.vkAllocateDescriptorSets(ctx->device, &ai, &set);
  if (r != VK_SUCCESS) return Error{vk_error("vkAllocateDescriptorSets", r)};
  std::vector<VkDescriptorBufferInfo> infos(AB_BINDINGS);
  infos[AB_BIND_CTRL] = {ctrl.handle(), 0, VK_WHOLE_SIZE};
  infos[AB_BIND_STATE] = {state.handle(), 0, VK_WHOLE_SIZE};
  infos[AB_BIND_LIST] = {list.handle(), 0, VK_WHOLE_SIZE};
  infos[AB_BIND_UNIFORMS] = {uniforms.handle(), 0, VK_WHOLE_SIZE};
  for (uint32_t a = 0; a < AB_ARENAS; ++a)
    infos[AB_BIND_ARENA0 + a] = {a < arenas.size() ? arenas[a].handle() : dummy.handle(), 0,
                                 VK_WHOLE_SIZE};
  infos[AB_BIND_STREAM] = {record_words > 0 ? stream.handle() : dummy.handle(), 0, VK_WHOLE_SIZE};
  std::vector<VkWriteDescriptorSet> writes;
  for (uint32_t b = 0; b < infos.size(); ++b) {
    VkWriteDescriptorSet w{VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET};
    w.dstSet = set;
    w.dstBinding = b;
    w.descriptorCount = 1;
    w.descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    w.pBufferInfo = &infos[b];
    writes.push_back(w);
  }
  ctx->api.vkUpdateDescriptorSets(ctx->device, static_cast<uint32_t>(writes.size()), writes.data(),
                                  0, nullptr);
  VkFenceCreateInfo fci{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
  r = ctx->api.vkCreateFence(ctx->device, &fci, nullptr, &fence);
  if (r != VK_SUCCESS) return Error{vk_error("vkCreateFence", r)};
  return Ok{};
}

Status VulkanRun::Impl::upload_initial_state(const Batch& batch) {
  const Types& types = lp->types();
  std::vector<uint32_t> image(size_t{layout->slots} * lanes, 0u);
  auto at = [&](uint32_t slot, uint32_t lane) -> uint32_t& {
    return image[size_t{slot} * lanes + lane];
  };
  for (uint32_t lane = 0; lane < lanes; ++lane) {
    at(AB_SLOT_PC, lane) = static_cast<uint32_t>(lp->entry_block);
    at(AB_SLOT_PC_SP, lane) = 1;  // the exit PC at the bottom of the PC stack
    at(AB_SLOT_MAX_DEPTH, lane) = 1;
  }
  for (size_t i = 0; i < lp->inputs.size(); ++i) {
    const VarId v = lp->inputs[i];
    if (layout->var_slot[v] < 0) continue;  // an unused parameter has no storage
    const uint32_t w = types.words(lp->vars[v].type);
    for (uint32_t lane = 0; lane < lanes; ++lane)
      for (uint32_t k = 0; k < w; ++k)
        at(static_cast<uint32_t>(layout->var_slot[v]) + k, lane) =
            batch.inputs[i][size_t{lane} * w + k];
  }
  std::vector<uint32_t> uniform_words;
  for (const auto& u : batch.uniforms)
    uniform_words.insert(uniform_words.end(), u.begin(), u.end());
  std::vector<uint32_t> exits(lanes, static_cast<uint32_t>(lp->exit_pc()));

  if (auto s = upload(*ctx, state, 0, image.data(), image.size() * 4); !s) return s;
  if (auto s = upload(*ctx, uniforms, 0, uniform_words.data(), uniform_words.size() * 4); !s)
    return s;
  auto zero = submit_and_wait(*ctx, [&](VkCommandBuffer cmd) {
    ctx->api.vkCmdFillBuffer(cmd, ctrl.handle(), 0, VK_WHOLE_SIZE, 0);
    for (auto& a : arenas)
      ctx->api.vkCmdFillBuffer(cmd, a.handle(), 0, VK_WHOLE_SIZE, 0);
  });
  if (!zero) return zero;
  // A recorded round runs only while this is set (shaders/local_round.comp); the host-submitted
  // path clears it before each dispatch.
  const uint32_t live = 1;
  if (auto s = upload(*ctx, ctrl, AB_CTRL_NOT_FINISHED * 4, &live, 4); !s) return s;
  initial_image = std::move(image);
  const StackPlacement& pcs = layout->stacks[0];
  if (auto s = upload(*ctx, arenas[pcs.arena], uint64_t{pcs.base} * depth * lanes * 4, exits.data(),
                      exits.size() * 4);
      !s)
    return s;
  if (vulkan.schedule == Schedule::Global) {
    auto count = prog->pipeline(HandKernel::GlobalCount);
    if (!count) return Error{count.error()};
    return submit_and_wait(*ctx, [&](VkCommandBuffer cmd) {
      ctx->api.vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, *count);
      ctx->api.vkCmdBindDescriptorSets(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, prog->pipeline_layout,
                                       0, 1, &set, 0, nullptr);
      ctx->api.vkCmdPushConstants(cmd, prog->pipeline_layout, VK_SHADER_STAGE_COMPUTE_BIT, 0,
                                  sizeof(push), &push);
      ctx->api.vkCmdDispatch(cmd, groups_for(lanes), 1, 1);
      ++stats.dispatches;
    });
  }
  return Ok{};
}

Status VulkanRun::Impl::read_state(std::vector<uint32_t>& image) {
  image.resize(size_t{layout->slots} * lanes);
  return download(*ctx, state, 0, image.data(), image.size() * 4);
}

uint32_t VulkanRun::Impl::live_entries(int k, const std::vector<uint32_t>& image) const {
  uint32_t sp_slot = AB_SLOT_PC_SP;
  if (k > 0) sp_slot = static_cast<uint32_t>(layout->sp_slot[layout->stacks[k].var]);
  uint32_t most = 0;
  for (uint32_t lane = 0; lane < lanes; ++lane)
    most = std::max(most, image[size_t{sp_slot} * lanes + lane]);
  return std::min(most, depth);
}

Status VulkanRun::Impl::read_live_stacks(const std::vector<uint32_t>& image,
                                         std::vector<std::vector<uint32_t>>& stacks,
                                         std::vector<uint32_t>& entries) {
  const int count = static_cast<int>(layout->stacks.size());
  stacks.assign(count, {});
  entries.assign(count, 0);
  for (int k = 0; k < count; ++k) {
    entries[k] = live_entries(k, image);
    stacks[k].resize(size_t{entries[k]} * layout->stacks[k].words * lanes);
    if (stacks[k].empty()) continue;
    if (auto s = download(*ctx, arenas[layout->stacks[k].arena], stack_offset_words(k) * 4,
                          stacks[k].data(), stacks[k].size() * 4);
        !s)
      return s;
  }
  return Ok{};
}

// Global: n scheduler steps. Local: one dispatch letting each group run up to n steps.
Expected<VkCommandBuffer> VulkanRun::Impl::record(uint64_t n) {
  if (auto it = recorded.find(n); it != recorded.end()) return it->second;
  const bool compacted = vulkan.global_mode == GlobalMode::Compacted;
  VkPipeline pick = VK_NULL_HANDLE, compact = VK_NULL_HANDLE;
  if (global && !fused) {
    auto p = prog->pipeline(HandKernel::GlobalPick);
    if (!p) return Error{p.error()};
    pick = *p;
    if (compacted) {
      auto c = prog->pipeline(HandKernel::GlobalCompact);
      if (!c) return Error{c.error()};
      compact = *c;
    }
  }
  std::vector<VkPipeline> steps;  // the step kernel of each part
  for (size_t part = 0; part < step_parts(); ++part) {
    auto s = prog->pipeline(step_kernel(), part);
    if (!s) return Error{s.error()};
    steps.push_back(*s);
  }
  auto& api = ctx->api;
  std::lock_guard lock(ctx->submit_mutex);  // the context's command pool
  VkCommandBufferAllocateInfo ai{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
  ai.commandPool = ctx->command_pool;
  ai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  ai.commandBufferCount = 1;
  VkCommandBuffer cmd = VK_NULL_HANDLE;
  VkResult r = api.vkAllocateCommandBuffers(ctx->device, &ai, &cmd);
  if (r != VK_SUCCESS) return Error{vk_error("vkAllocateCommandBuffers", r)};
  VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  api.vkBeginCommandBuffer(cmd, &bi);
  compute_barrier(*ctx, cmd);
  if (global) {
    api.vkCmdFillBuffer(cmd, ctrl.handle(), AB_CTRL_TRACE_LEN * 4, 4, 0);
    if (fused) api.vkCmdFillBuffer(cmd, ctrl.handle(), AB_CTRL_BUDGET_USED * 4, 4, 0);
  } else {
    api.vkCmdFillBuffer(cmd, ctrl.handle(), AB_CTRL_NOT_FINISHED * 4, 4, 0);
    api.vkCmdFillBuffer(cmd, ctrl.handle(), AB_CTRL_GROUP_STEPS * 4, 4, 0);
    api.vkCmdFillBuffer(cmd, ctrl.handle(), AB_CTRL_LANE_ITERATIONS * 4, 8, 0);
  }
  compute_barrier(*ctx, cmd);
  api.vkCmdBindDescriptorSets(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, prog->pipeline_layout, 0, 1,
                              &set, 0, nullptr);
  PushConstants pc = push;
  if (!global || fused) pc.budget = static_cast<uint32_t>(n);
  api.vkCmdPushConstants(cmd, prog->pipeline_layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof(pc),
                         &pc);
  auto dispatch = [&](VkPipeline p, uint32_t groups) {
    api.vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, p);
    api.vkCmdDispatch(cmd, groups, 1, 1);
    compute_barrier(*ctx, cmd);
  };
  if (fused) {
    for (size_t part : part_order())
      dispatch(steps[part], 1);
  } else if (global) {
    // Each step: the pick, then every part's step kernel; only the part holding the chosen
    // block runs it (the others return at once).
    for (uint64_t s = 0; s < n; ++s) {
      dispatch(pick, 1);
      if (compacted) {
        dispatch(compact, groups_for(lanes));
        for (VkPipeline step : steps) {
          api.vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, step);
          api.vkCmdDispatchIndirect(cmd, ctrl.handle(), AB_CTRL_INDIRECT_X * 4);
          compute_barrier(*ctx, cmd);
        }
      } else {
        for (VkPipeline step : steps)
          dispatch(step, groups_for(lanes));
      }
    }
  } else {
    for (size_t part : part_order())
      dispatch(steps[part], groups_for(lanes));
  }
  VkBufferCopy region{0, 0, ctrl_words() * 4};
  api.vkCmdCopyBuffer(cmd, ctrl.handle(), readback.handle(), 1, &region);
  r = api.vkEndCommandBuffer(cmd);
  if (r != VK_SUCCESS) return Error{vk_error("vkEndCommandBuffer", r)};
  recorded[n] = cmd;
  return cmd;
}

Status VulkanRun::Impl::submit(uint64_t n) {
  auto cmd = record(n);
  if (!cmd) return Error{cmd.error()};
  VkSubmitInfo si{VK_STRUCTURE_TYPE_SUBMIT_INFO};
  si.commandBufferCount = 1;
  si.pCommandBuffers = &*cmd;
  std::unique_lock lock(ctx->submit_mutex);
  VkResult r = ctx->api.vkQueueSubmit(ctx->queue, 1, &si, fence);
  lock.unlock();
  if (r != VK_SUCCESS) return Error{vk_error("vkQueueSubmit", r)};
  r = ctx->api.vkWaitForFences(ctx->device, 1, &fence, VK_TRUE, UINT64_MAX);
  if (r != VK_SUCCESS) return Error{vk_error("vkWaitForFences", r)};
  ctx->api.vkResetFences(ctx->device, 1, &fence);
  ++stats.submissions;
  if (global && !fused) {
    const bool compacted = vulkan.global_mode == GlobalMode::Compacted;
    stats.dispatches += n * ((compacted ? 2 : 1) + step_parts());
  } else {
    stats.dispatches += part_order().size();
  }
  const auto* w = static_cast<const uint32_t*>(readback.mapped());
  if (w[AB_CTRL_UNFIT] != 0)
    return Error{
        "the device ran the fused global kernel with subgroups smaller than it reports: "
        "set VulkanOptions::fuse_small_batches = false"};
  if (global) {
    steps = w[AB_CTRL_STEPS_LO] | uint64_t{w[AB_CTRL_STEPS_HI]} << 32;
    const uint32_t len = std::min(w[AB_CTRL_TRACE_LEN], trace_cap);
    const uint32_t* t = w + AB_CTRL_COUNTS + 2 * nblocks;
    for (uint32_t i = 0; i < len; ++i)
      trace.push_back({static_cast<int32_t>(t[2 * i]), t[2 * i + 1]});
    uint64_t live = 0;
    for (uint32_t b = 0; b < nblocks; ++b)
      live += w[AB_CTRL_COUNTS + b];
    finished = w[AB_CTRL_DONE] != 0 || live == 0;
  } else {
    stats.group_steps += w[AB_CTRL_GROUP_STEPS];
    lane_iterations += w[AB_CTRL_LANE_ITERATIONS];
    lane_slots += w[AB_CTRL_LANE_SLOTS];
    steps = stats.group_steps;
    finished = w[AB_CTRL_NOT_FINISHED] == 0;
  }
  update_utilization(w);
  return Ok{};
}

// The one definition of a run's utilization (VulkanStats and RunStats both report it). Global:
// the VM's, the mean over scheduler steps of active / live lanes (the kernels add each step's
// ratio in 2^-24 units). Local: lanes busy in a group's step over the group's lanes, summed over
// every group step of the run (the subgroup and workgroup scopes count a lane busy when it ran
// the step's block, the lane scope when it was inside the subgroup's loop iteration).
void VulkanRun::Impl::update_utilization(const uint32_t* header) {
  if (global) {
    const uint64_t n = header[AB_CTRL_STEPS_LO] | uint64_t{header[AB_CTRL_STEPS_HI]} << 32;
    const uint64_t sum = header[AB_CTRL_UTIL_LO] | uint64_t{header[AB_CTRL_UTIL_HI]} << 32;
    stats.utilization = n ? static_cast<double>(sum) / 16777216.0 / static_cast<double>(n) : 0;
  } else {
    stats.utilization =
        lane_slots ? static_cast<double>(lane_iterations) / static_cast<double>(lane_slots) : 0;
  }
}

Status VulkanRun::Impl::drain_streams() {
  // The EMITTED and PARKED rows are adjacent in the slot-major state.
  static_assert(AB_SLOT_PARKED == AB_SLOT_EMITTED + 1);
  std::vector<uint32_t> rows(size_t{lanes} * 2);
  if (auto s = download(*ctx, state, uint64_t{AB_SLOT_EMITTED} * lanes * 4, rows.data(),
                        rows.size() * 4);
      !s)
    return s;
  uint32_t* emitted = rows.data();
  uint32_t* parked = rows.data() + lanes;
  const uint32_t most = *std::max_element(emitted, emitted + lanes);
  const bool any_parked = std::any_of(parked, parked + lanes, [](uint32_t p) { return p != 0; });
  if (most == 0 && !any_parked) return Ok{};
  if (most > 0) {
    std::vector<uint32_t> records(uint64_t{most} * lanes * record_words);
    if (auto s = download(*ctx, stream, 0, records.data(), records.size() * 4); !s) return s;
    std::vector<uint32_t> words;
    for (uint32_t lane = 0; lane < lanes; ++lane) {
      for (uint32_t r = 0; r < std::min(emitted[lane], push.stream_cap); ++r) {
        const uint32_t* w = records.data() + (uint64_t{r} * lanes + lane) * record_words;
        words.insert(words.end(), w, w + record_words);
      }
      deliver_emitted(options, record_words, lane, words, streamed);
    }
  }
  std::fill(emitted, emitted + lanes, 0u);
  if (any_parked) {
    std::vector<uint32_t> pcs(lanes);
    if (auto s = download(*ctx, state, uint64_t{AB_SLOT_PC} * lanes * 4, pcs.data(), lanes * 4); !s)
      return s;
    std::vector<uint32_t> header(ctrl_words());
    if (global)
      if (auto s = download(*ctx, ctrl, 0, header.data(), header.size() * 4); !s) return s;
    for (uint32_t lane = 0; lane < lanes; ++lane) {
      if (parked[lane] == 0) continue;
      pcs[lane] = parked[lane] - 1;
      if (global) ++header[AB_CTRL_COUNTS + pcs[lane]];  // the global schedule counts it again
      parked[lane] = 0;
    }
    if (auto s = upload(*ctx, state, uint64_t{AB_SLOT_PC} * lanes * 4, pcs.data(), lanes * 4); !s)
      return s;
    if (global) {
      header[AB_CTRL_DONE] = 0;
      if (auto s = upload(*ctx, ctrl, 0, header.data(), header.size() * 4); !s) return s;
    }
    finished = false;
  }
  return upload(*ctx, state, uint64_t{AB_SLOT_EMITTED} * lanes * 4, rows.data(), rows.size() * 4);
}

VulkanRun::VulkanRun(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
VulkanRun::~VulkanRun() = default;

Expected<std::unique_ptr<VulkanRun>> VulkanRun::create(std::shared_ptr<VulkanProgram> program,
                                                       const Batch& batch,
                                                       const RunOptions& options,
                                                       const VulkanOptions& vulkan) {
  if (!program) return Error{"no compiled program"};
  const LoweredProgram& lp = program->program();
  if (auto msg = check_batch(*lp.source, lp.entry_function, batch); !msg.empty()) return Error{msg};
  if (options.stack_depth == 0) return Error{"the stack depth must be at least 1"};
  if (vulkan.steps_per_submission == 0 || vulkan.local_steps_per_dispatch == 0)
    return Error{"steps per submission and per dispatch must be at least 1"};
  if (vulkan.local_steps_per_dispatch > 60000 && caps_shader_loops(program->impl().ctx->info))
    return Error{
        "local_steps_per_dispatch must stay below 60,000 (lavapipe ends longer shader "
        "loops silently)"};
  if (vulkan.schedule == Schedule::Local && vulkan.local_scope != LocalScope::Workgroup &&
      !program->impl().ctx->info.subgroup_arithmetic)
    return Error{fmt::format(
        "the local/{} schedule needs subgroup arithmetic in compute shaders, which this device "
        "lacks: use --local-scope workgroup or --schedule global",
        local_scope_name(vulkan.local_scope))};
  auto impl = std::make_unique<Impl>();
  impl->created = Clock::now();
  impl->compile_seconds_at_creation = program->compile_seconds();
  impl->program_ref = program;
  impl->prog = &program->impl();
  impl->ctx = impl->prog->ctx;
  impl->lp = &lp;
  impl->layout = &impl->prog->layout;
  impl->options = options;
  impl->vulkan = vulkan;
  impl->lanes = batch.lanes;
  impl->depth = options.stack_depth;
  impl->nblocks = static_cast<uint32_t>(lp.blocks.size());
  impl->global = vulkan.schedule == Schedule::Global;
  const DeviceInfo& device = impl->ctx->info;
  impl->fused = impl->global && vulkan.fuse_small_batches && device.subgroup_arithmetic &&
                batch.lanes <= device.subgroup_size;
  impl->trace_cap = options.record_trace && impl->global ? impl->steps_per_submission() : 0;
  impl->stats.device = impl->ctx->info.name;
  impl->stats.pipeline_cache_from_disk = impl->prog->pipeline_cache_from_disk;
  impl->stats.parts = impl->step_parts();
  impl->stats.schedule = impl->fused ? std::string("global/fused")
                         : impl->global
                             ? fmt::format("global/{}", global_mode_name(vulkan.global_mode))
                             : fmt::format("local/{}", local_scope_name(vulkan.local_scope));
  PushConstants& p = impl->push;
  p.lanes = batch.lanes;
  p.exit_pc = impl->nblocks;
  p.depth = options.stack_depth;
  p.max_steps = static_cast<uint32_t>(std::min<uint64_t>(options.max_steps, 0xFFFFFFFFu));
  p.heuristic = static_cast<uint32_t>(options.heuristic);  // AB_HEURISTIC_*
  p.trace_cap = impl->trace_cap;
  p.seed_lo = static_cast<uint32_t>(options.seed);
  p.seed_hi = static_cast<uint32_t>(options.seed >> 32);
  p.budget = vulkan.local_steps_per_dispatch;
  if (lp.source->emit_type != Types::kVoid) {
    impl->record_words = lp.types().words(lp.source->emit_type);
    // As many records per lane as the device's largest binding holds, up to the option: a lane
    // that fills its stream parks until the host drains it.
    const uint64_t per_record = uint64_t{batch.lanes} * impl->record_words * 4;
    const uint64_t room =
        impl->ctx->properties.limits.maxStorageBufferRange / std::max<uint64_t>(per_record, 1);
    p.stream_cap = static_cast<uint32_t>(
        std::max<uint64_t>(1, std::min<uint64_t>(vulkan.stream_records, room)));
    if (!options.on_emit) impl->streamed.emitted.resize(batch.lanes);
  }
  if (batch.lanes == 0) {
    impl->finished = true;
    return std::unique_ptr<VulkanRun>(new VulkanRun(std::move(impl)));
  }
  // Every size is checked before anything is allocated or any code generated.
  if (auto s = impl->check_sizes(); !s) return Error{s.error()};
  if (!impl->prog->unfit.empty()) return Error{impl->prog->unfit};
  if (auto s = impl->allocate(batch); !s) return Error{s.error()};
  if (auto s = impl->upload_initial_state(batch); !s) return Error{s.error()};
  impl->stats.upload_seconds = std::chrono::duration<double>(Clock::now() - impl->created).count();
  return std::unique_ptr<VulkanRun>(new VulkanRun(std::move(impl)));
}

Status VulkanRun::prepare(const std::function<void(size_t done, size_t total)>& progress) {
  Impl& I = *impl_;
  if (I.lanes == 0) return Ok{};
  std::vector<std::pair<Kernel, size_t>> todo;
  for (size_t part = 0; part < I.step_parts(); ++part)
    if (!I.prog->pipelines.count({static_cast<int>(I.step_kernel()), part}))
      todo.emplace_back(I.step_kernel(), part);
  // The hand-written kernels are small; the pick and compaction come first, uncounted.
  if (I.global && !I.fused) {
    if (auto p = I.prog->pipeline(HandKernel::GlobalPick); !p) return Error{p.error()};
    if (I.vulkan.global_mode == GlobalMode::Compacted)
      if (auto p = I.prog->pipeline(HandKernel::GlobalCompact); !p) return Error{p.error()};
  }
  for (size_t i = 0; i < todo.size(); ++i) {
    if (progress) progress(i, todo.size());
    if (auto p = I.prog->pipeline(todo[i].first, todo[i].second); !p) return Error{p.error()};
  }
  if (progress) progress(todo.size(), todo.size());
  I.stats.compile_seconds = I.prog->compile_seconds;
  I.stats.spirv_from_cache = I.prog->spirv_from_cache;
  return Ok{};
}

bool VulkanRun::done() const {
  return impl_->finished;
}
const VulkanStats& VulkanRun::stats() const {
  return impl_->stats;
}
uint32_t VulkanRun::group_width() const {
  if (impl_->vulkan.schedule == Schedule::Global) return 0;
  return impl_->vulkan.local_scope == LocalScope::Workgroup
             ? AB_GROUP_SIZE
             : std::max<uint32_t>(impl_->ctx->info.subgroup_size, 1);
}

Expected<bool> VulkanRun::step(uint64_t n) {
  Impl& I = *impl_;
  const Clock::time_point start = Clock::now();
  const double compiled_before = I.prog->compile_seconds;
  const uint64_t chunk = I.steps_per_submission();
  while (n > 0 && !I.finished) {
    const uint64_t k = std::min(n, chunk);
    const uint64_t before = I.steps;
    if (auto s = I.submit(k); !s) return Error{s.error()};
    if (I.record_words > 0)
      if (auto s = I.drain_streams(); !s) return Error{s.error()};
    // A split program's fused kernels may stop short of the budget (the pick moved to a part
    // already dispatched in this submission): count the steps taken, so that step(n) is exact.
    const bool exact = I.global && I.fused && I.step_parts() > 1;
    n -= exact ? std::min<uint64_t>(n, I.steps - before) : k;
  }
  I.stats.loop_seconds += std::chrono::duration<double>(Clock::now() - start).count() -
                          (I.prog->compile_seconds - compiled_before);
  I.stats.compile_seconds = I.prog->compile_seconds;
  I.stats.spirv_from_cache = I.prog->spirv_from_cache;
  return I.finished;
}

Status VulkanRun::run() {
  while (!impl_->finished) {
    auto r = step(UINT64_MAX);
    if (!r) return Error{r.error()};
  }
  // Uploads and the run itself; kernels compiled on first use during the run do not count.
  const double compiled = impl_->prog->compile_seconds - impl_->compile_seconds_at_creation;
  impl_->stats.run_seconds =
      std::chrono::duration<double>(Clock::now() - impl_->created).count() - compiled;
  impl_->stats.compile_seconds = impl_->prog->compile_seconds;
  impl_->stats.spirv_from_cache = impl_->prog->spirv_from_cache;
  return Ok{};
}

Expected<RunResult> VulkanRun::result() {
  Impl& I = *impl_;
  const Clock::time_point start = Clock::now();
  const LoweredProgram& lp = *I.lp;
  const Types& types = lp.types();
  RunResult result;
  RunStats& st = result.stats;
  st.lanes = I.lanes;
  const uint32_t out_words = lp.output < 0 ? 0 : types.words(lp.vars[lp.output].type);
  result.outputs.assign(size_t{I.lanes} * out_words, 0u);
  result.faulted.assign(I.lanes, 0);
  result.emitted = I.streamed.emitted;
  result.records_emitted = I.streamed.records_emitted;
  if (I.lanes == 0) return result;
  std::vector<uint32_t> image(size_t{I.layout->slots} * I.lanes);
  if (auto s = download(*I.ctx, I.state, 0, image.data(), image.size() * 4); !s)
    return Error{s.error()};
  std::vector<uint32_t> ctrl(I.ctrl_words());
  if (auto s = download(*I.ctx, I.ctrl, 0, ctrl.data(), ctrl.size() * 4); !s)
    return Error{s.error()};
  auto at = [&](uint32_t slot, uint32_t lane) { return image[size_t{slot} * I.lanes + lane]; };
  st.max_stack_depth = 1;
  for (uint32_t lane = 0; lane < I.lanes; ++lane) {
    st.lane_steps += at(AB_SLOT_STEPS, lane);
    st.calls += at(AB_SLOT_CALLS, lane);
    st.max_stack_depth = std::max(st.max_stack_depth, at(AB_SLOT_MAX_DEPTH, lane));
    const uint32_t code = at(AB_SLOT_FAULT, lane);
    if (code != 0) {
      result.faulted[lane] = 1;
      const uint32_t b = at(AB_SLOT_FAULT_BLOCK, lane), op = at(AB_SLOT_FAULT_OP, lane);
      LaneError e;
      e.lane = lane;
      e.code = static_cast<Fault>(code);
      e.step = at(AB_SLOT_FAULT_STEP, lane);
      if (b < lp.blocks.size()) {
        const LoweredBlock& block = lp.blocks[b];
        e.function = lp.source->functions.at(block.function).name;
        e.line = op == AB_NO_BLOCK       ? block.loc.line
                 : op < block.ops.size() ? block.ops[op].loc.line
                                         : block.term.loc.line;
      }
      result.errors.push_back(std::move(e));
      continue;
    }
    if (out_words && I.layout->var_slot[lp.output] >= 0)
      for (uint32_t k = 0; k < out_words; ++k)
        result.outputs[size_t{lane} * out_words + k] =
            at(static_cast<uint32_t>(I.layout->var_slot[lp.output]) + k, lane);
  }
  I.update_utilization(ctrl.data());
  st.utilization = I.stats.utilization;
  if (I.vulkan.schedule == Schedule::Global) {
    st.steps = ctrl[AB_CTRL_STEPS_LO] | uint64_t{ctrl[AB_CTRL_STEPS_HI]} << 32;
    st.block_executions.assign(ctrl.begin() + AB_CTRL_COUNTS + I.nblocks,
                               ctrl.begin() + AB_CTRL_COUNTS + 2 * I.nblocks);
    result.trace = I.trace;
  } else {
    st.steps = I.stats.group_steps;
  }
  st.wall_seconds = I.stats.run_seconds;
  I.stats.readback_seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return result;
}

Expected<BatchSnapshot> VulkanRun::snapshot() {
  return impl_->take_snapshot(true);
}

Expected<BatchSnapshot> VulkanRun::lane_state() {
  return impl_->take_snapshot(false);
}

Expected<BatchSnapshot> VulkanRun::Impl::take_snapshot(bool with_stacks) {
  const LoweredProgram& lp = *this->lp;
  const Types& types = lp.types();
  BatchSnapshot snap;
  snap.step = steps;
  snap.lanes = lanes;
  snap.stack_depth = depth;
  snap.stack_capacity = with_stacks ? depth : 0;  // the GPU allocates every stack at full depth
  if (lanes == 0) return snap;
  std::vector<uint32_t> image;
  if (auto s = read_state(image); !s) return Error{s.error()};
  std::vector<std::vector<uint32_t>> live;
  std::vector<uint32_t> entries;
  if (with_stacks)
    if (auto s = read_live_stacks(image, live, entries); !s) return Error{s.error()};
  auto at = [&](uint32_t slot, uint32_t lane) { return image[size_t{slot} * lanes + lane]; };
  auto stack_word = [&](int k, uint32_t sp, uint32_t w, uint32_t lane) -> uint32_t {
    if (sp >= entries[k]) return 0u;  // above every lane's live entries
    return live[k][(size_t{sp} * layout->stacks[k].words + w) * lanes + lane];
  };
  std::vector<TypeId> var_types;
  for (const LoweredVar& v : lp.vars)
    var_types.push_back(v.type);
  std::vector<uint32_t> offset;
  const uint32_t frame = layout_words(types, var_types, offset);
  snap.registers.assign(size_t{lanes} * frame, 0u);
  if (with_stacks) snap.pc_stack.assign(size_t{lanes} * depth, 0);
  for (uint32_t lane = 0; lane < lanes; ++lane) {
    snap.pc.push_back(static_cast<int32_t>(at(AB_SLOT_PC, lane)));
    snap.pc_depth.push_back(at(AB_SLOT_PC_SP, lane));
    snap.lane_steps.push_back(at(AB_SLOT_STEPS, lane));
    snap.faulted.push_back(at(AB_SLOT_FAULT, lane) != 0 ? 1 : 0);
    if (with_stacks)
      for (uint32_t d = 0; d < entries[0]; ++d)
        snap.pc_stack[size_t{lane} * depth + d] = static_cast<int32_t>(stack_word(0, d, 0, lane));
    for (size_t v = 0; v < lp.vars.size(); ++v) {
      if (layout->var_slot[v] < 0) continue;
      for (uint32_t k = 0; k < types.words(var_types[v]); ++k)
        snap.registers[size_t{lane} * frame + offset[v] + k] =
            at(static_cast<uint32_t>(layout->var_slot[v]) + k, lane);
    }
  }
  if (!with_stacks) return snap;
  for (size_t v = 0; v < lp.vars.size(); ++v) {
    const int k = layout->stack_of[v];
    if (k < 0) continue;
    const uint32_t w = types.words(var_types[v]);
    BatchSnapshot::VarStack vs;
    vs.var = static_cast<VarId>(v);
    vs.words.assign(size_t{lanes} * depth * w, 0u);
    for (uint32_t lane = 0; lane < lanes; ++lane) {
      vs.depth.push_back(at(static_cast<uint32_t>(layout->sp_slot[v]), lane));
      for (uint32_t d = 0; d < entries[k]; ++d)
        for (uint32_t j = 0; j < w; ++j)
          vs.words[(size_t{lane} * depth + d) * w + j] = stack_word(k, d, j, lane);
    }
    snap.stacks.push_back(std::move(vs));
  }
  return snap;
}

// ---- recording into the host's command buffers ----

std::string VulkanRun::Impl::unrecordable() const {
  if (global)
    return "only the local schedule can be recorded into a host's command buffer (the global "
           "schedule's trace and counts are read back between steps)";
  if (record_words > 0)
    return "a program that emits cannot be recorded into a host's command buffer: its output "
           "streams are drained by the host between submissions (use run() or step())";
  return {};
}

Status VulkanRun::record(VkCommandBuffer cmd, uint32_t rounds) {
  Impl& I = *impl_;
  if (!cmd) return Error{"record: no command buffer"};
  if (auto why = I.unrecordable(); !why.empty()) return Error{why};
  if (I.lanes == 0 || rounds == 0) return Ok{};
  auto round = I.prog->pipeline(HandKernel::LocalRound);
  if (!round) return Error{round.error()};
  std::vector<VkPipeline> steps;
  for (size_t part = 0; part < I.step_parts(); ++part) {
    auto p = I.prog->pipeline(I.step_kernel(), part);
    if (!p) return Error{p.error()};
    steps.push_back(*p);
  }
  auto& api = I.ctx->api;
  compute_barrier(*I.ctx, cmd);  // the host's (and earlier rounds') writes to our buffers
  api.vkCmdBindDescriptorSets(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, I.prog->pipeline_layout, 0, 1,
                              &I.set, 0, nullptr);
  api.vkCmdPushConstants(cmd, I.prog->pipeline_layout, VK_SHADER_STAGE_COMPUTE_BIT, 0,
                         sizeof(I.push), &I.push);
  for (uint32_t r = 0; r < rounds; ++r) {
    api.vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, *round);
    api.vkCmdDispatch(cmd, 1, 1, 1);
    compute_barrier(*I.ctx, cmd);
    for (size_t part : I.part_order()) {
      api.vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, steps[part]);
      api.vkCmdDispatchIndirect(cmd, I.ctrl.handle(), AB_CTRL_INDIRECT_X * 4);
      compute_barrier(*I.ctx, cmd);
    }
  }
  VkBufferCopy region{0, 0, I.ctrl_words() * 4};
  api.vkCmdCopyBuffer(cmd, I.ctrl.handle(), I.readback.handle(), 1, &region);
  VkMemoryBarrier to_host{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
  to_host.srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT;
  to_host.dstAccessMask = VK_ACCESS_HOST_READ_BIT;
  api.vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_HOST_BIT, 0, 1,
                           &to_host, 0, nullptr, 0, nullptr);
  I.stats.dispatches += uint64_t{rounds} * (1 + I.part_order().size());
  I.finished = false;  // known again at the next poll()
  return Ok{};
}

Status VulkanRun::record_restart(VkCommandBuffer cmd, const std::vector<DeviceRegion>& inputs,
                                 const uint64_t* seed) {
  Impl& I = *impl_;
  if (!cmd) return Error{"record_restart: no command buffer"};
  if (auto why = I.unrecordable(); !why.empty()) return Error{why};
  const LoweredProgram& lp = *I.lp;
  if (inputs.size() > lp.inputs.size())
    return Error{fmt::format("record_restart: {} input regions for {} parameters", inputs.size(),
                             lp.inputs.size())};
  if (I.lanes == 0) return Ok{};
  const RunBuffers own = buffers();
  // Which rows of the state each given input replaces, checked before anything is recorded.
  struct Row {
    uint64_t begin, end;  // bytes in the state buffer
  };
  std::vector<Row> replaced;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const DeviceRegion& src = inputs[i];
    if (src.size == 0) continue;
    const DeviceRegion& dst = own.inputs[i];
    if (dst.size == 0) continue;  // a parameter the program never reads
    if (src.buffer == VK_NULL_HANDLE || src.size != dst.size)
      return Error{fmt::format(
          "record_restart: input {} needs a region of {} bytes ({} words for each of {} lanes), "
          "got {} bytes",
          i, dst.size, dst.words, I.lanes, src.size)};
    if (src.buffer == I.state.handle() && src.offset < dst.offset + dst.size &&
        dst.offset < src.offset + src.size)
      return Error{fmt::format("record_restart: input {}'s region overlaps its own storage", i)};
    replaced.push_back({dst.offset, dst.offset + dst.size});
  }
  if (!I.initial.handle()) {
    auto created = DeviceBuffer::create(*I.ctx, I.initial_image.size() * 4);
    if (!created) return Error{"cannot allocate the run's initial state: " + created.error()};
    I.initial = std::move(*created);
    if (auto s = upload(*I.ctx, I.initial, 0, I.initial_image.data(), I.initial_image.size() * 4);
        !s)
      return s;
  }
  auto& api = I.ctx->api;
  compute_barrier(*I.ctx, cmd);
  // The given inputs first: one may be read from rows (the outputs) the reset below overwrites.
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i].size == 0 || own.inputs[i].size == 0) continue;
    VkBufferCopy copy{inputs[i].offset, own.inputs[i].offset, inputs[i].size};
    api.vkCmdCopyBuffer(cmd, inputs[i].buffer, I.state.handle(), 1, &copy);
  }
  compute_barrier(*I.ctx, cmd);
  std::sort(replaced.begin(), replaced.end(), [](Row a, Row b) { return a.begin < b.begin; });
  std::vector<VkBufferCopy> reset;
  uint64_t at = 0;
  for (const Row& row : replaced) {
    if (row.begin > at) reset.push_back({at, at, row.begin - at});
    at = std::max(at, row.end);
  }
  const uint64_t state_bytes = I.initial_image.size() * 4;
  if (at < state_bytes) reset.push_back({at, at, state_bytes - at});
  api.vkCmdCopyBuffer(cmd, I.initial.handle(), I.state.handle(),
                      static_cast<uint32_t>(reset.size()), reset.data());
  api.vkCmdFillBuffer(cmd, I.ctrl.handle(), 0, VK_WHOLE_SIZE, 0);
  compute_barrier(*I.ctx, cmd);
  api.vkCmdFillBuffer(cmd, I.ctrl.handle(), AB_CTRL_NOT_FINISHED * 4, 4, 1);
  compute_barrier(*I.ctx, cmd);
  if (seed) {
    I.push.seed_lo = static_cast<uint32_t>(*seed);
    I.push.seed_hi = static_cast<uint32_t>(*seed >> 32);
    I.options.seed = *seed;
    std::lock_guard lock(I.ctx->submit_mutex);
    for (auto& [n, recorded] : I.recorded)  // they push the old seed
      api.vkFreeCommandBuffers(I.ctx->device, I.ctx->command_pool, 1, &recorded);
    I.recorded.clear();
  }
  I.finished = false;
  return Ok{};
}

Expected<bool> VulkanRun::poll() {
  Impl& I = *impl_;
  if (auto why = I.unrecordable(); !why.empty()) return Error{why};
  if (I.lanes == 0) return true;
  const auto* w = static_cast<const uint32_t*>(I.readback.mapped());
  // Counted since the run was created or last restarted (the counters are never cleared
  // between recorded rounds).
  I.stats.group_steps = w[AB_CTRL_GROUP_STEPS];
  I.lane_iterations = w[AB_CTRL_LANE_ITERATIONS];
  I.lane_slots = w[AB_CTRL_LANE_SLOTS];
  I.steps = I.stats.group_steps;
  I.finished = w[AB_CTRL_NOT_FINISHED] == 0;
  I.update_utilization(w);
  return I.finished;
}

RunBuffers VulkanRun::buffers() const {
  const Impl& I = *impl_;
  RunBuffers b;
  b.lanes = I.lanes;
  b.exit_pc = I.nblocks;
  if (I.lanes == 0) return b;
  const LoweredProgram& lp = *I.lp;
  const Types& types = lp.types();
  for (VarId v : lp.inputs)
    b.inputs.push_back(I.state_region(I.layout->var_slot[v], types.words(lp.vars[v].type)));
  if (lp.output >= 0)
    b.output = I.state_region(I.layout->var_slot[lp.output], types.words(lp.vars[lp.output].type));
  b.pc = I.state_region(AB_SLOT_PC, 1);
  b.fault = I.state_region(AB_SLOT_FAULT, 1);
  b.uniforms = I.uniforms.handle();
  b.uniforms_size = uint64_t{I.layout->uniform_words} * 4;
  return b;
}

// ---- checkpoints ----

struct RunCheckpoint::Data {
  uint64_t steps = 0, group_steps = 0, lane_iterations = 0, lane_slots = 0;
  bool finished = false;
  size_t trace_length = 0;
  std::vector<uint32_t> ctrl, state;
  std::vector<std::vector<uint32_t>> stacks;  // live prefix of each stack, as on the device
  const void* run = nullptr;                  // the run that made it
};

RunCheckpoint::RunCheckpoint(std::unique_ptr<Data> data) : data_(std::move(data)) {}
RunCheckpoint::~RunCheckpoint() = default;
uint64_t RunCheckpoint::steps() const {
  return data_->steps;
}
size_t RunCheckpoint::bytes() const {
  size_t n = (data_->ctrl.size() + data_->state.size()) * 4;
  for (const auto& s : data_->stacks)
    n += s.size() * 4;
  return n;
}

Expected<std::shared_ptr<const RunCheckpoint>> VulkanRun::checkpoint() {
  Impl& I = *impl_;
  auto d = std::make_unique<RunCheckpoint::Data>();
  d->steps = I.steps;
  d->group_steps = I.stats.group_steps;
  d->lane_iterations = I.lane_iterations;
  d->lane_slots = I.lane_slots;
  d->finished = I.finished;
  d->trace_length = I.trace.size();
  d->run = this;
  if (I.lanes > 0) {
    if (auto s = I.read_state(d->state); !s) return Error{s.error()};
    d->ctrl.resize(I.ctrl_words());
    if (auto s = download(*I.ctx, I.ctrl, 0, d->ctrl.data(), d->ctrl.size() * 4); !s)
      return Error{s.error()};
    std::vector<uint32_t> entries;
    if (auto s = I.read_live_stacks(d->state, d->stacks, entries); !s) return Error{s.error()};
  }
  return std::shared_ptr<const RunCheckpoint>(std::make_shared<RunCheckpoint>(std::move(d)));
}

Status VulkanRun::restore(const RunCheckpoint& checkpoint) {
  Impl& I = *impl_;
  const RunCheckpoint::Data& d = checkpoint.data();
  if (d.run != this) return Error{"this checkpoint was made by another run"};
  if (I.lanes > 0) {
    if (auto s = upload(*I.ctx, I.state, 0, d.state.data(), d.state.size() * 4); !s) return s;
    if (auto s = upload(*I.ctx, I.ctrl, 0, d.ctrl.data(), d.ctrl.size() * 4); !s) return s;
    // Entries above a stack's saved prefix were dead when it was saved; no lane reads them
    // before pushing over them, so only the prefix goes back.
    for (size_t k = 0; k < d.stacks.size(); ++k) {
      if (d.stacks[k].empty()) continue;
      const int kk = static_cast<int>(k);
      if (auto s = upload(*I.ctx, I.arenas[I.layout->stacks[kk].arena],
                          I.stack_offset_words(kk) * 4, d.stacks[k].data(), d.stacks[k].size() * 4);
          !s)
        return s;
    }
  }
  I.steps = d.steps;
  I.stats.group_steps = d.group_steps;
  I.lane_iterations = d.lane_iterations;
  I.lane_slots = d.lane_slots;
  I.finished = d.finished;
  I.trace.resize(std::min(I.trace.size(), d.trace_length));
  if (!d.ctrl.empty()) I.update_utilization(d.ctrl.data());
  return Ok{};
}

Expected<RunResult> run_vulkan(const LoweredProgram& program, const Batch& batch,
                               const RunOptions& options, const VulkanOptions& vulkan,
                               VulkanStats* stats, std::shared_ptr<VulkanContext> context) {
  if (!context) {
    auto created = VulkanContext::create(vulkan.context);
    if (!created) return Error{created.error()};
    context = *created;
  }
  auto compiled = VulkanProgram::compile(context, program, vulkan);
  if (!compiled) return Error{compiled.error()};
  auto run = VulkanRun::create(*compiled, batch, options, vulkan);
  if (!run) return Error{run.error()};
  if (auto s = (*run)->run(); !s) return Error{s.error()};
  auto result = (*run)->result();
  if (stats) *stats = (*run)->stats();
  return result;
}

}  // namespace ab
