// VulkanRun's inside: the run state every schedule shares (buffers, descriptor set, push
// constants, phase, counters), used by run.cpp (creation, uploads and the PC loop's
// submissions), run_readback.cpp (results, snapshots and checkpoints, everything that reads the
// device's state back), run_record.cpp (recording into a host's command buffers) and the
// schedule classes (schedules.h: what differs between schedules lives there, not here).
#pragma once

#include <algorithm>
#include <chrono>
#include <map>
#include <memory>

#include "engine/device/buffers.h"
#include "engine/run/program_impl.h"
#include "engine/schedules/schedules.h"
#include "shaders/ab_layout.h"

namespace ab {

using Clock = std::chrono::steady_clock;

// Where a run stands (docs/embedding.md, "A run's states"): what poll() may read back and whether
// result() has anything to return yet.
enum class RunPhase : uint8_t {
  Created,    // nothing has run or been recorded: the readback holds no round's words (zeroed)
  Running,    // some lane is live, as the last submission, poll() or restore() showed
  Recorded,   // rounds recorded since the last poll(): poll() reads what their copy left
  Restarted,  // a restart recorded and no round after it: every lane waits at the entry again
  Finished,   // every lane has finished or faulted
};

inline uint32_t groups_for(uint32_t n) {
  return (n + AB_GROUP_SIZE - 1) / AB_GROUP_SIZE;
}

// The device objects a run records and submits with: its descriptor set (every buffer bound),
// its fence, and the command buffers it keeps, one per submission size.
struct RunDeviceState {
  VulkanContext::Impl* ctx = nullptr;
  VkDescriptorPool pool = VK_NULL_HANDLE;
  VkDescriptorSet set = VK_NULL_HANDLE;
  VkFence fence = VK_NULL_HANDLE;
  std::map<uint64_t, VkCommandBuffer> recorded;  // by step count (global) or budget (local)

  RunDeviceState() = default;
  RunDeviceState(const RunDeviceState&) = delete;
  RunDeviceState& operator=(const RunDeviceState&) = delete;
  ~RunDeviceState();
  // The pool, the set (of `set_layout`, `bindings` storage buffers) and the fence.
  Status create(VulkanContext::Impl& context, VkDescriptorSetLayout set_layout, uint32_t bindings);
  // Binding b of the set to infos[b], for every b.
  void bind(const std::vector<VkDescriptorBufferInfo>& infos);
  // Frees the kept command buffers (they push constants that changed); the caller holds the
  // context's submit lock.
  void forget_recorded();
  // Binds the set and pushes `push` for the dispatches recorded next into `cmd`.
  void bind_set(VkCommandBuffer cmd, VkPipelineLayout layout, const PushConstants& push) const;
};

// The control buffer (header, per-block counts and executions, trace), which the readback buffer
// mirrors word for word, and where its words are.
struct ControlBuffer {
  DeviceBuffer buffer, readback;
  uint32_t nblocks = 0;
  uint32_t trace_cap = 0;  // the schedule's trace_cap(): part of the layout

  VkBuffer handle() const { return buffer.handle(); }
  // The words the last submission (or recorded round) copied back.
  const uint32_t* words_read() const { return static_cast<const uint32_t*>(readback.mapped()); }
  // The list map (ab_list_map_word) and the two sets of per-block indirect arguments
  // (ab_block_args_word) follow the trace.
  uint64_t words() const { return AB_CTRL_HEADER_WORDS + 9ull * nblocks + 2ull * trace_cap; }
  uint64_t block_args_word(uint32_t set, uint32_t block) const {
    return AB_CTRL_HEADER_WORDS + 3ull * nblocks + 2ull * trace_cap +
           3ull * (set * nblocks + block);
  }
};

// What the run has counted so far, read back from the control buffer after each submission.
struct RunCounters {
  uint64_t steps = 0;
  // Local schedule: the lanes busy in the groups' steps (lane scope: in their loop iterations),
  // and the groups' steps times their lanes (the AB_CTRL_LANE_* counters, summed)
  uint64_t lane_iterations = 0, lane_slots = 0;
  std::vector<TraceStep> trace;
};

// The lanes' output streams of a program that emits (RunOptions::on_emit): the records are
// drained between submissions.
struct EmitStreams {
  DeviceBuffer buffer;
  uint32_t record_words = 0;  // words(emit type); 0 when the program never emits
  RunResult streamed;         // records drained so far (RunResult::emitted, records_emitted)

  // Hands the records of `lanes` lanes' streams (the EMITTED row `emitted`, zeroed here) on to
  // `options.on_emit` or `streamed`.
  Status deliver(VulkanContext::Impl& ctx, uint32_t lanes, uint32_t stream_cap,
                 const RunOptions& options, uint32_t* emitted);
};

struct VulkanRun::Impl {
  std::shared_ptr<VulkanProgram> program_ref;
  VulkanProgram::Impl* prog = nullptr;
  VulkanContext::Impl* ctx = nullptr;
  const LoweredProgram* lp = nullptr;
  const StateLayout* layout = nullptr;
  RunOptions options;
  bool stopped = false;  // RunOptions::should_stop ended a step() early
  VulkanOptions vulkan;
  uint32_t lanes = 0, depth = 0, nblocks = 0;
  // How the lane state and the arenas are bound (state_layout.h): chosen by create() from the
  // lanes and the depth; the generated kernels depend on it.
  Banks banks;
  // What one binding may cover: maxStorageBufferRange, or less (VulkanOptions::bank_bytes).
  uint64_t bank_bytes() const {
    const uint64_t range = ctx->properties.limits.maxStorageBufferRange;
    return vulkan.bank_bytes > 0 ? std::min(vulkan.bank_bytes, range) : range;
  }
  // How steps are recorded and read back (schedules.h); set once, before anything is allocated.
  std::unique_ptr<RunSchedule> schedule;
  ControlBuffer control;
  DeviceBuffer state, list, uniforms, dummy;
  EmitStreams streams;
  std::vector<DeviceBuffer> arenas;
  // The state as created (slot-major), kept for record_restart; `initial` is its device copy,
  // uploaded by the first restart.
  std::vector<uint32_t> initial_image;
  DeviceBuffer initial;
  RunDeviceState device;
  PushConstants push;
  RunPhase phase = RunPhase::Created;
  bool finished() const { return phase == RunPhase::Finished; }
  // Why result() has nothing yet ("" once the run has finished), named for `call`.
  std::string unfinished(const char* call) const;
  // Outputs, errors and statistics as they are now (result() and result_so_far()).
  Expected<RunResult> read_result();
  RunCounters counters;
  VulkanStats stats;
  Clock::time_point created;
  double compile_seconds_at_creation = 0;  // to leave compilation out of run_seconds

  Status allocate(const Batch& batch);
  // The run's buffers, each bound to the set's bindings (allocate).
  std::vector<VkDescriptorBufferInfo> bindings() const;
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
  void update_utilization(const uint32_t* header) {
    stats.utilization = schedule->utilization(header);
  }
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
  Status submit(uint64_t n);
  // Hands the records in the lanes' streams on (RunOptions::on_emit or `streamed`), empties the
  // streams and puts parked lanes back at the block they wait at, so the run goes on.
  Status drain_streams();
  Kernel step_kernel() const { return schedule->step_kernel(); }
  size_t step_parts() const { return prog->parts(residency_of(step_kernel())); }
  // The program's compile statistics so far into `stats` (compile_seconds, kernels, ...).
  void take_compile_stats() {
    std::lock_guard lock(prog->mutex);
    stats.compile_seconds = prog->compile_seconds;
    stats.spirv_from_cache = prog->spirv_from_cache;
    stats.kernels = prog->kernel_compiles;
  }
  // The step kernel's SourcePart::private_stack_depth for this run's stack depth.
  uint32_t private_depth() const {
    return residency_of(step_kernel()) == Residency::Registers
               ? private_stack_depth(prog->layout, depth, private_stack_words(ctx->info))
               : 0;
  }
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

}  // namespace ab
