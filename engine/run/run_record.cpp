// VulkanRun recorded into a host's command buffers (docs/embedding.md): rounds whose dispatch size
// the GPU decides, restarts fed from device regions, poll() after the host's own fence, and the
// buffers a host may bind.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>

#include "engine/run/run_impl.h"

namespace ab {

// ---- recording into the host's command buffers ----

std::string VulkanRun::Impl::unrecordable() const {
  if (auto why = schedule->unrecordable(); !why.empty()) return why;
  if (streams.record_words > 0)
    return "a program that emits cannot be recorded into a host's command buffer: its output "
           "streams are drained by the host between submissions (use run() or step())";
  return {};
}

Status VulkanRun::record(VkCommandBuffer cmd, uint32_t rounds) {
  Impl& I = *impl_;
  if (!cmd) return Error{"record: no command buffer"};
  if (auto why = I.unrecordable(); !why.empty()) return Error{why};
  if (I.lanes == 0 || rounds == 0) return Ok{};
  if (auto s = I.schedule->record_rounds(cmd, rounds); !s) return s;
  I.phase = RunPhase::Recorded;  // known again at the next poll()
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
  api.vkCmdFillBuffer(cmd, I.control.handle(), 0, VK_WHOLE_SIZE, 0);
  compute_barrier(*I.ctx, cmd);
  api.vkCmdFillBuffer(cmd, I.control.handle(), AB_CTRL_NOT_FINISHED * 4, 4, 1);
  compute_barrier(*I.ctx, cmd);
  if (seed) {
    I.push.seed_lo = static_cast<uint32_t>(*seed);
    I.push.seed_hi = static_cast<uint32_t>(*seed >> 32);
    I.options.seed = *seed;
    std::lock_guard lock(I.ctx->submit_mutex);
    I.device.forget_recorded();  // they push the old seed
  }
  I.phase = RunPhase::Restarted;
  return Ok{};
}

Expected<bool> VulkanRun::poll() {
  Impl& I = *impl_;
  if (auto why = I.unrecordable(); !why.empty()) return Error{why};
  switch (I.phase) {
    case RunPhase::Created:
      return Error{
          "poll: nothing has been recorded yet: record() rounds into a command buffer, submit it "
          "and wait for its fence first"};
    case RunPhase::Restarted:
      // The readback still holds the rounds before the restart; the restart cleared the
      // counters it would show, and every lane waits at the entry.
      I.stats.group_steps = I.counters.steps = I.counters.lane_iterations = I.counters.lane_slots =
          0;
      I.stats.utilization = 0;
      return false;
    case RunPhase::Running:
    case RunPhase::Finished:
      return I.finished();  // nothing recorded since: the readback says what was known
    case RunPhase::Recorded:
      break;
  }
  const uint32_t* w = I.control.words_read();
  // Counted since the run was created or last restarted (the counters are never cleared
  // between recorded rounds).
  I.schedule->read_back_rounds(w);
  I.update_utilization(w);
  return I.finished();
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

}  // namespace ab
