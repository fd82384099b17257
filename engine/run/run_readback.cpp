// VulkanRun's readback side: the state and live stacks downloaded, unpacked into results
// (outputs, faults, statistics, the trace) and snapshots, and checkpoints saved and restored.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>

#include "engine/run/run_impl.h"
#include "ir/fault_detail.h"

namespace ab {

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

std::string VulkanRun::Impl::unfinished(const char* call) const {
  switch (phase) {
    case RunPhase::Finished:
      return {};
    case RunPhase::Created:
      return fmt::format(
          "{}: the run has not started: call run(), or record rounds, submit them and poll() "
          "until it returns true",
          call);
    case RunPhase::Running:
      return fmt::format(
          "{}: the run has not finished: call run(), or record more rounds and poll() until it "
          "returns true",
          call);
    case RunPhase::Recorded:
      return fmt::format(
          "{}: rounds were recorded since the last poll(): once the host's fence has signalled, "
          "poll() until it returns true",
          call);
    case RunPhase::Restarted:
      return fmt::format(
          "{}: the run was restarted and no round has run since: record rounds and poll() until "
          "it returns true, or call run()",
          call);
  }
  return {};
}

Expected<RunResult> VulkanRun::result() {
  if (std::string why = impl_->unfinished("result"); !why.empty()) return Error{why};
  return impl_->read_result();
}

Expected<RunResult> VulkanRun::result_so_far() {
  if (impl_->phase == RunPhase::Recorded)
    return Error{
        "result_so_far: rounds were recorded since the last poll(): poll() once the host's "
        "fence has signalled"};
  return impl_->read_result();
}

Expected<RunResult> VulkanRun::Impl::read_result() {
  Impl& I = *this;
  const Clock::time_point start = Clock::now();
  const LoweredProgram& lp = *I.lp;
  const Types& types = lp.types();
  RunResult result;
  RunStats& st = result.stats;
  st.lanes = I.lanes;
  const uint32_t out_words = lp.output < 0 ? 0 : types.words(lp.vars[lp.output].type);
  result.outputs.assign(size_t{I.lanes} * out_words, 0u);
  result.faulted.assign(I.lanes, 0);
  result.emitted = I.streams.streamed.emitted;
  result.records_emitted = I.streams.streamed.records_emitted;
  if (I.lanes == 0) return result;
  // Only the fixed slots and the output's words come back, not the whole lane state (a light
  // nuts_tree run spent 8% of its time reading back state it did not report).
  std::vector<uint32_t> image(size_t{AB_FIXED_SLOTS} * I.lanes);
  if (auto s = download(*I.ctx, I.state, 0, image.data(), image.size() * 4); !s)
    return Error{s.error()};
  const int32_t out_slot = out_words ? I.layout->var_slot[lp.output] : -1;
  std::vector<uint32_t> output_image;  // [word][lane], as in the state buffer
  if (out_slot >= 0) {
    output_image.resize(size_t{out_words} * I.lanes);
    if (auto s = download(*I.ctx, I.state, uint64_t{static_cast<uint32_t>(out_slot)} * I.lanes * 4,
                          output_image.data(), output_image.size() * 4);
        !s)
      return Error{s.error()};
  }
  std::vector<uint32_t> ctrl(I.control.words());
  if (auto s = download(*I.ctx, I.control.buffer, 0, ctrl.data(), ctrl.size() * 4); !s)
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
        const SourceLoc loc = op == AB_NO_BLOCK       ? block.loc
                              : op < block.ops.size() ? block.ops[op].loc
                                                      : block.term.loc;
        e.function = lp.source->functions.at(written_in(loc, block.function)).name;
        e.line = loc.line;
        if (e.code == Fault::IndexOutOfRange && op < block.ops.size())
          e.detail = index_fault_text(
              lp, block.ops[op], {at(AB_SLOT_FAULT_INDEX, lane), at(AB_SLOT_FAULT_VALUE, lane)});
        if (e.code == Fault::AssertFailed && op < block.ops.size())
          e.detail = block.ops[op].message;
      }
      result.errors.push_back(std::move(e));
      continue;
    }
    if (at(AB_SLOT_PC, lane) != I.nblocks) continue;  // still running: no output yet
    for (uint32_t k = 0; k < out_words && out_slot >= 0; ++k)
      result.outputs[size_t{lane} * out_words + k] = output_image[size_t{k} * I.lanes + lane];
  }
  I.update_utilization(ctrl.data());
  st.utilization = I.stats.utilization;
  I.schedule->result_stats(ctrl, result);
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
  snap.step = counters.steps;
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
      for (uint32_t d = 0; d < std::min(entries[0], at(AB_SLOT_PC_SP, lane)); ++d)
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
      for (uint32_t d = 0; d < std::min(entries[k], vs.depth.back()); ++d)
        for (uint32_t j = 0; j < w; ++j)
          vs.words[(size_t{lane} * depth + d) * w + j] = stack_word(k, d, j, lane);
    }
    snap.stacks.push_back(std::move(vs));
  }
  return snap;
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
  d->steps = I.counters.steps;
  d->group_steps = I.stats.group_steps;
  d->lane_iterations = I.counters.lane_iterations;
  d->lane_slots = I.counters.lane_slots;
  d->finished = I.finished();
  d->trace_length = I.counters.trace.size();
  d->run = this;
  if (I.lanes > 0) {
    if (auto s = I.read_state(d->state); !s) return Error{s.error()};
    d->ctrl.resize(I.control.words());
    if (auto s = download(*I.ctx, I.control.buffer, 0, d->ctrl.data(), d->ctrl.size() * 4); !s)
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
    if (auto s = upload(*I.ctx, I.control.buffer, 0, d.ctrl.data(), d.ctrl.size() * 4); !s)
      return s;
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
    if (auto s = I.schedule->restored(); !s) return s;
  }
  I.counters.steps = d.steps;
  I.stats.group_steps = d.group_steps;
  I.counters.lane_iterations = d.lane_iterations;
  I.counters.lane_slots = d.lane_slots;
  I.phase = d.finished ? RunPhase::Finished : RunPhase::Running;
  I.counters.trace.resize(std::min(I.counters.trace.size(), d.trace_length));
  if (!d.ctrl.empty()) I.update_utilization(d.ctrl.data());
  return Ok{};
}

}  // namespace ab
