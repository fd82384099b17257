// VulkanRun: creation (sizes checked, buffers allocated, the initial state uploaded), prepare, and
// the PC loop of step()/run(): recording and submitting the step kernels, draining emit streams.
// Reading results back is in run_readback.cpp, recording into a host's command buffer in
// run_record.cpp; the shared inside is run_impl.h.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>

#include "engine/run/run_impl.h"

namespace ab {

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
    uint32_t bindings = 1;  // the most it may span (banks)
    bool banks_fit = true;  // banked: each of its bindings within the limit
  };
  const uint64_t limit = bank_bytes();
  // The banks the layout's bindings hold (fewer than ab_layout.h's on a device with fewer).
  const uint32_t state_banks =
      std::min<uint32_t>(AB_STATE_BANKS, prog->bindings - AB_BIND_STATE_BANK1 + 1);
  const uint32_t last_arena = std::max<uint32_t>(layout->arenas, 1) - 1;
  const uint32_t window1_of_last = AB_BIND_ARENA_WINDOW1 + last_arena * (AB_ARENA_WINDOWS - 1);
  const uint32_t arena_windows =
      prog->bindings > window1_of_last
          ? std::min<uint32_t>(AB_ARENA_WINDOWS, prog->bindings - window1_of_last + 1)
          : 1;
  // Bank j of the lane state covers its slots and the rounding of its binding's offset.
  const bool state_fits =
      banks.state == 1 ? uint64_t{layout->slots} * lanes * 4 <= limit
                       : banks.state <= state_banks &&
                             (uint64_t{banks.state_slots} * lanes + banks.align_mask) * 4 <= limit;
  std::vector<Need> needs = {
      {"control buffer", control.words(), SizedBy::Program},
      {"lane state", uint64_t{layout->slots} * lanes, SizedBy::Lanes, layout->slots, state_banks,
       state_fits},
      {"active-lane list", schedule->list_words(), SizedBy::Lanes},
      {"uniform data", layout->uniform_words, SizedBy::Uniforms},
  };
  // The windows are planned for the largest arena: an arena that fits one binding is not the
  // one to name when they are too many.
  for (uint32_t a = 0; a < layout->arenas; ++a) {
    const uint64_t words = uint64_t{layout->arena_words[a]} * depth * lanes;
    needs.push_back({"stack arena", words, SizedBy::LanesAndDepth, 0, arena_windows,
                     words * 4 <= limit || banks.arena <= arena_windows});
  }
  if (streams.record_words > 0)
    needs.push_back({"output stream", uint64_t{push.stream_cap} * lanes * streams.record_words,
                     SizedBy::Lanes});
  const uint64_t max_range = ctx->properties.limits.maxStorageBufferRange;
  const std::string device_range =
      fmt::format("this device's maxStorageBufferRange ({})", format_bytes(max_range));
  const std::string bank_range =
      limit < max_range ? fmt::format("{} (VulkanOptions::bank_bytes)", format_bytes(limit))
                        : device_range;
  uint64_t total = 0;
  for (const Need& n : needs) {
    if (n.bindings == 1 && n.words * 4 > max_range)
      return Error{fmt::format("the {} needs {}, more than {}: {}", n.what,
                               format_bytes(n.words * 4), device_range,
                               shrink_advice(n.sized_by, *lp, n.state_words))};
    if (!n.banks_fit)
      return Error{fmt::format("the {} needs {}, more than {} bindings of {} hold: {}", n.what,
                               format_bytes(n.words * 4), n.bindings, bank_range,
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
  if (auto s = make(control.buffer, control.words(), "control buffer", SizedBy::Program); !s)
    return s;
  if (auto s =
          make(state, uint64_t{layout->slots} * lanes, "lane state", SizedBy::Lanes, layout->slots);
      !s)
    return s;
  if (auto s = make(list, schedule->list_words(), "active-lane list", SizedBy::Lanes); !s) return s;
  if (auto s = make(uniforms, layout->uniform_words, "uniform data", SizedBy::Uniforms); !s)
    return s;
  if (auto s = make(dummy, 4, "placeholder", SizedBy::Program); !s) return s;
  if (streams.record_words > 0)
    if (auto s = make(streams.buffer, uint64_t{push.stream_cap} * lanes * streams.record_words,
                      "output stream", SizedBy::Lanes);
        !s)
      return s;
  arenas.resize(layout->arenas);
  for (uint32_t a = 0; a < layout->arenas; ++a)
    if (auto s = make(arenas[a], uint64_t{layout->arena_words[a]} * depth * lanes, "stack arena",
                      SizedBy::LanesAndDepth);
        !s)
      return s;
  auto rb = DeviceBuffer::create(*ctx, control.words() * 4, true);
  if (!rb) return Error{rb.error()};
  control.readback = std::move(*rb);
  // No round has copied its words here yet: zeroes rather than whatever the memory held (poll()
  // refuses to read it before a round is recorded anyway).
  std::memset(control.readback.mapped(), 0, control.words() * 4);
  if (auto s = device.create(*ctx, prog->set_layout, prog->bindings); !s) return s;
  device.bind(bindings());
  return Ok{};
}

std::vector<VkDescriptorBufferInfo> VulkanRun::Impl::bindings() const {
  // Every binding a kernel may declare holds a buffer: the placeholder where a run has none.
  std::vector<VkDescriptorBufferInfo> infos(prog->bindings, {dummy.handle(), 0, VK_WHOLE_SIZE});
  infos[AB_BIND_CTRL] = {control.handle(), 0, VK_WHOLE_SIZE};
  infos[AB_BIND_LIST] = {list.handle(), 0, VK_WHOLE_SIZE};
  infos[AB_BIND_UNIFORMS] = {uniforms.handle(), 0, VK_WHOLE_SIZE};
  // The banks (state_layout.h, Banks): bank j of the lane state from its first slot's row,
  // rounded down to the alignment (the code adds the rest), to the end of its last.
  const uint64_t state_bytes = uint64_t{layout->slots} * lanes * 4;
  for (uint32_t j = 0; j < banks.state; ++j) {
    if (banks.state == 1) {
      infos[AB_BIND_STATE] = {state.handle(), 0, VK_WHOLE_SIZE};
      break;
    }
    const uint64_t first = uint64_t{j} * banks.state_slots * lanes * 4;
    const uint64_t offset = first & ~(uint64_t{banks.align_mask} * 4 + 3);
    const uint64_t end = std::min(state_bytes, first + uint64_t{banks.state_slots} * lanes * 4);
    infos[j == 0 ? AB_BIND_STATE : AB_BIND_STATE_BANK1 + j - 1] = {state.handle(), offset,
                                                                   end - offset};
  }
  // Window j of an arena: its words from j * window_words.
  for (uint32_t a = 0; a < arenas.size(); ++a) {
    const uint64_t bytes = uint64_t{layout->arena_words[a]} * depth * lanes * 4;
    for (uint32_t j = 0; j < banks.arena; ++j) {
      const uint32_t binding =
          j == 0 ? AB_BIND_ARENA0 + a : AB_BIND_ARENA_WINDOW1 + a * (AB_ARENA_WINDOWS - 1) + j - 1;
      const uint64_t offset = uint64_t{j} * banks.window_words * 4;
      if (banks.arena == 1)
        infos[binding] = {arenas[a].handle(), 0, VK_WHOLE_SIZE};
      else if (offset < bytes)  // a smaller arena has fewer windows; the code never reaches more
        infos[binding] = {arenas[a].handle(), offset,
                          std::min<uint64_t>(bytes - offset, uint64_t{banks.window_words} * 4)};
    }
  }
  if (streams.record_words > 0) infos[AB_BIND_STREAM] = {streams.buffer.handle(), 0, VK_WHOLE_SIZE};
  return infos;
}

RunDeviceState::~RunDeviceState() {
  if (!ctx) return;
  std::lock_guard lock(ctx->submit_mutex);
  ctx->api.vkQueueWaitIdle(ctx->queue);
  forget_recorded();
  if (fence) ctx->api.vkDestroyFence(ctx->device, fence, nullptr);
  if (pool) ctx->api.vkDestroyDescriptorPool(ctx->device, pool, nullptr);
}

Status RunDeviceState::create(VulkanContext::Impl& context, VkDescriptorSetLayout set_layout,
                              uint32_t bindings) {
  ctx = &context;
  VkDescriptorPoolSize size{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, bindings};
  VkDescriptorPoolCreateInfo pci{VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO};
  pci.maxSets = 1;
  pci.poolSizeCount = 1;
  pci.pPoolSizes = &size;
  VkResult r = ctx->api.vkCreateDescriptorPool(ctx->device, &pci, nullptr, &pool);
  if (r != VK_SUCCESS) return Error{vk_error("vkCreateDescriptorPool", r)};
  VkDescriptorSetAllocateInfo ai{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO};
  ai.descriptorPool = pool;
  ai.descriptorSetCount = 1;
  ai.pSetLayouts = &set_layout;
  r = ctx->api.vkAllocateDescriptorSets(ctx->device, &ai, &set);
  if (r != VK_SUCCESS) return Error{vk_error("vkAllocateDescriptorSets", r)};
  VkFenceCreateInfo fci{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
  r = ctx->api.vkCreateFence(ctx->device, &fci, nullptr, &fence);
  if (r != VK_SUCCESS) return Error{vk_error("vkCreateFence", r)};
  return Ok{};
}

void RunDeviceState::bind(const std::vector<VkDescriptorBufferInfo>& infos) {
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
}

void RunDeviceState::forget_recorded() {
  for (auto& [n, cmd] : recorded)
    ctx->api.vkFreeCommandBuffers(ctx->device, ctx->command_pool, 1, &cmd);
  recorded.clear();
}

void RunDeviceState::bind_set(VkCommandBuffer cmd, VkPipelineLayout layout,
                              const PushConstants& push) const {
  ctx->api.vkCmdBindDescriptorSets(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, layout, 0, 1, &set, 0,
                                   nullptr);
  ctx->api.vkCmdPushConstants(cmd, layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof(push), &push);
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

  // The state buffer is cleared on the device; only the fixed slots and the inputs' words, the
  // non-zero part of the image, go through staging copies.
  // The arenas are not cleared: nothing reads a stack above its pointer (pops, the private
  // copies and snapshots stop there), and clearing them touched every page of what is most of a
  // run's memory (a light nuts_tree run spent half its creation time there).
  auto cleared = submit_and_wait(*ctx, [&](VkCommandBuffer cmd) {
    ctx->api.vkCmdFillBuffer(cmd, state.handle(), 0, VK_WHOLE_SIZE, 0);
    ctx->api.vkCmdFillBuffer(cmd, control.handle(), 0, VK_WHOLE_SIZE, 0);
  });
  if (!cleared) return cleared;
  auto upload_slots = [&](uint32_t first, uint32_t count) {
    return upload(*ctx, state, uint64_t{first} * lanes * 4, image.data() + size_t{first} * lanes,
                  uint64_t{count} * lanes * 4);
  };
  if (auto s = upload_slots(0, AB_FIXED_SLOTS); !s) return s;
  for (VarId v : lp->inputs)
    if (layout->var_slot[v] >= 0)
      if (auto s = upload_slots(static_cast<uint32_t>(layout->var_slot[v]),
                                types.words(lp->vars[v].type));
          !s)
        return s;
  if (auto s = upload(*ctx, uniforms, 0, uniform_words.data(), uniform_words.size() * 4); !s)
    return s;
  // A recorded round runs only while this is set (shaders/local_round.comp); the host-submitted
  // path clears it before each dispatch.
  const uint32_t live = 1;
  if (auto s = upload(*ctx, control.buffer, AB_CTRL_NOT_FINISHED * 4, &live, 4); !s) return s;
  initial_image = std::move(image);
  const StackPlacement& pcs = layout->stacks[0];
  if (auto s = upload(*ctx, arenas[pcs.arena], uint64_t{pcs.base} * depth * lanes * 4, exits.data(),
                      exits.size() * 4);
      !s)
    return s;
  return schedule->start();
}

std::unique_ptr<RunSchedule> make_schedule(VulkanRun::Impl& run) {
  if (run.vulkan.schedule == Schedule::Global) return GlobalSchedule::choose(run);
  return std::make_unique<LocalSchedule>(run, run.vulkan.local_scope);
}

// A submission of `n` steps (global: scheduler steps; local: each group's budget), recorded once
// per `n` and kept: the schedule's resets, dispatches and budget in the run's common framing.
Expected<VkCommandBuffer> VulkanRun::Impl::record(uint64_t n) {
  if (auto it = device.recorded.find(n); it != device.recorded.end()) return it->second;
  if (auto s = schedule->load_pipelines(); !s) return Error{s.error()};
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
  schedule->record_resets(cmd);
  compute_barrier(*ctx, cmd);
  PushConstants pc = push;
  pc.budget = schedule->budget(n);
  device.bind_set(cmd, prog->pipeline_layout, pc);
  schedule->record_steps(cmd, n);
  VkBufferCopy region{0, 0, control.words() * 4};
  api.vkCmdCopyBuffer(cmd, control.handle(), control.readback.handle(), 1, &region);
  r = api.vkEndCommandBuffer(cmd);
  if (r != VK_SUCCESS) return Error{vk_error("vkEndCommandBuffer", r)};
  device.recorded[n] = cmd;
  return cmd;
}

Status VulkanRun::Impl::submit(uint64_t n) {
  auto cmd = record(n);
  if (!cmd) return Error{cmd.error()};
  VkSubmitInfo si{VK_STRUCTURE_TYPE_SUBMIT_INFO};
  si.commandBufferCount = 1;
  si.pCommandBuffers = &*cmd;
  std::unique_lock lock(ctx->submit_mutex);
  VkResult r = ctx->api.vkQueueSubmit(ctx->queue, 1, &si, device.fence);
  lock.unlock();
  if (r != VK_SUCCESS) return Error{vk_error("vkQueueSubmit", r)};
  r = ctx->api.vkWaitForFences(ctx->device, 1, &device.fence, VK_TRUE, UINT64_MAX);
  if (r != VK_SUCCESS) return Error{vk_error("vkWaitForFences", r)};
  ctx->api.vkResetFences(ctx->device, 1, &device.fence);
  ++stats.submissions;
  const uint32_t* w = control.words_read();
  if (w[AB_CTRL_UNFIT] != 0)
    return Error{
        "the device ran the fused global kernel with subgroups smaller than it reports: "
        "set VulkanOptions::fuse_small_batches = false"};
  schedule->read_back(w, n);
  update_utilization(w);
  return Ok{};
}

Status EmitStreams::deliver(VulkanContext::Impl& ctx, uint32_t lanes, uint32_t stream_cap,
                            const RunOptions& options, uint32_t* emitted) {
  const uint32_t most = *std::max_element(emitted, emitted + lanes);
  std::vector<uint32_t> records(uint64_t{most} * lanes * record_words);
  if (auto s = download(ctx, buffer, 0, records.data(), records.size() * 4); !s) return s;
  std::vector<uint32_t> words;
  for (uint32_t lane = 0; lane < lanes; ++lane) {
    for (uint32_t r = 0; r < std::min(emitted[lane], stream_cap); ++r) {
      const uint32_t* w = records.data() + (uint64_t{r} * lanes + lane) * record_words;
      words.insert(words.end(), w, w + record_words);
    }
    deliver_emitted(options, record_words, lane, words, streamed);
  }
  std::fill(emitted, emitted + lanes, 0u);
  return Ok{};
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
  if (most > 0)
    if (auto s = streams.deliver(*ctx, lanes, push.stream_cap, options, emitted); !s) return s;
  if (any_parked) {
    std::vector<uint32_t> pcs(lanes);
    if (auto s = download(*ctx, state, uint64_t{AB_SLOT_PC} * lanes * 4, pcs.data(), lanes * 4); !s)
      return s;
    for (uint32_t lane = 0; lane < lanes; ++lane) {
      if (parked[lane] == 0) continue;
      pcs[lane] = parked[lane] - 1;
      parked[lane] = 0;
    }
    if (auto s = upload(*ctx, state, uint64_t{AB_SLOT_PC} * lanes * 4, pcs.data(), lanes * 4); !s)
      return s;
    if (auto s = schedule->pcs_changed(); !s) return s;
    phase = RunPhase::Running;
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
  if (Status fits = check_batch(*lp.source, lp.entry_function, batch); !fits) return fits.failure();
  if (Status valid = check_run_options(options); !valid) return valid.failure();
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
  impl->device.ctx = impl->ctx;
  impl->lp = &lp;
  impl->layout = &impl->prog->layout;
  impl->options = options;
  impl->vulkan = vulkan;
  impl->lanes = batch.lanes;
  impl->depth = options.stack_depth;
  impl->nblocks = impl->control.nblocks = static_cast<uint32_t>(lp.blocks.size());
  impl->schedule = make_schedule(*impl);
  impl->control.trace_cap = impl->schedule->trace_cap();
  impl->stats.device = impl->ctx->info.name;
  impl->stats.pipeline_cache_from_disk = impl->prog->pipeline_cache_from_disk;
  impl->stats.parts = impl->step_parts();
  impl->stats.schedule = impl->schedule->name();
  PushConstants& p = impl->push;
  p.lanes = batch.lanes;
  p.exit_pc = impl->nblocks;
  p.depth = options.stack_depth;
  p.max_steps = static_cast<uint32_t>(std::min<uint64_t>(options.max_steps, 0xFFFFFFFFu));
  p.heuristic = static_cast<uint32_t>(options.heuristic);  // AB_HEURISTIC_*
  p.trace_cap = impl->control.trace_cap;
  p.seed_lo = static_cast<uint32_t>(options.seed);
  p.seed_hi = static_cast<uint32_t>(options.seed >> 32);
  p.first_lane = options.first_lane;
  p.budget = vulkan.local_steps_per_dispatch;
  if (lp.source->emit_type != Types::kVoid) {
    impl->streams.record_words = lp.types().words(lp.source->emit_type);
    // As many records per lane as the device's largest binding holds, up to the option: a lane
    // that fills its stream parks until the host drains it.
    const uint64_t per_record = uint64_t{batch.lanes} * impl->streams.record_words * 4;
    const uint64_t room =
        impl->ctx->properties.limits.maxStorageBufferRange / std::max<uint64_t>(per_record, 1);
    p.stream_cap = static_cast<uint32_t>(
        std::max<uint64_t>(1, std::min<uint64_t>(vulkan.stream_records, room)));
    if (!options.on_emit) impl->streams.streamed.emitted.resize(batch.lanes);
  }
  if (batch.lanes == 0) {
    impl->phase = RunPhase::Finished;
    return std::unique_ptr<VulkanRun>(new VulkanRun(std::move(impl)));
  }
  impl->banks = plan_banks(*impl->layout, batch.lanes, options.stack_depth, impl->bank_bytes(),
                           impl->ctx->properties.limits.minStorageBufferOffsetAlignment);
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
  PipelineJobs todo;
  if (auto s = I.schedule->prepare(todo); !s) return s;
  // Automatic: one thread on a CPU device, which compiles at the first dispatch on its one queue
  // (the other threads only take cores from it: docs/engine.md, "Compile time"), one per
  // hardware thread otherwise.
  uint32_t threads = I.vulkan.compile_threads;
  if (threads == 0 && I.ctx->info.type == "cpu") threads = 1;
  if (auto s = build_all(todo, threads, progress); !s) return s;
  I.take_compile_stats();
  return Ok{};
}

bool VulkanRun::done() const {
  return impl_->finished();
}
const VulkanStats& VulkanRun::stats() const {
  return impl_->stats;
}
uint32_t VulkanRun::group_width() const {
  return impl_->schedule->group_width();
}

Expected<bool> VulkanRun::step(uint64_t n) {
  Impl& I = *impl_;
  const Clock::time_point start = Clock::now();
  const double compiled_before = I.prog->compile_seconds;
  const uint64_t chunk = I.schedule->steps_per_submission();
  I.stopped = false;
  while (n > 0 && !I.finished()) {
    const uint64_t k = std::min(n, chunk);
    const uint64_t before = I.counters.steps;
    if (auto s = I.submit(k); !s) return Error{s.error()};
    if (I.streams.record_words > 0)
      if (auto s = I.drain_streams(); !s) return Error{s.error()};
    // The fused kernels may stop short of the budget (a split program's pick moved to a part
    // already dispatched in this submission, or the device's loop cap drew near): count the
    // steps taken, so that step(n) is exact.
    n -= I.schedule->stops_short() ? std::min<uint64_t>(n, I.counters.steps - before) : k;
    if (!I.finished() && I.options.should_stop && I.options.should_stop()) {
      I.stopped = true;
      break;
    }
  }
  I.stats.loop_seconds += std::chrono::duration<double>(Clock::now() - start).count() -
                          (I.prog->compile_seconds - compiled_before);
  I.take_compile_stats();
  return I.finished();
}

Status VulkanRun::run() {
  while (!impl_->finished()) {
    auto r = step(UINT64_MAX);
    if (!r) return Error{r.error()};
    if (!impl_->finished() && impl_->stopped)
      return Error{"the run was stopped (RunOptions::should_stop)"};
  }
  // Uploads and the run itself; kernels compiled on first use during the run do not count.
  const double compiled = impl_->prog->compile_seconds - impl_->compile_seconds_at_creation;
  impl_->stats.run_seconds =
      std::chrono::duration<double>(Clock::now() - impl_->created).count() - compiled;
  impl_->take_compile_stats();
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
