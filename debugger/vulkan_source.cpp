#include "debugger/vulkan_source.h"

#include <fmt/format.h>
#include <algorithm>

#include "autobatch/vm.h"

namespace ab::debugger {
namespace {

// Lanes [first, first + count) of a full snapshot, in the same form VmRun::snapshot gives.
BatchSnapshot slice(const BatchSnapshot& all, uint32_t first, uint32_t count) {
  first = std::min(first, all.lanes);
  count = std::min(count, all.lanes - first);
  BatchSnapshot s;
  s.step = all.step;
  s.lanes = count;
  s.stack_depth = all.stack_depth;
  s.stack_capacity = all.stack_capacity;
  const size_t frame = all.lanes ? all.registers.size() / all.lanes : 0;
  auto range = [&](const auto& v, size_t per_lane) {
    using V = std::decay_t<decltype(v)>;
    return V(v.begin() + first * per_lane, v.begin() + (first + size_t{count}) * per_lane);
  };
  s.pc = range(all.pc, 1);
  s.pc_depth = range(all.pc_depth, 1);
  s.pc_stack = range(all.pc_stack, all.stack_capacity);
  s.registers = range(all.registers, frame);
  s.lane_steps = range(all.lane_steps, 1);
  s.faulted = range(all.faulted, 1);
  for (const BatchSnapshot::VarStack& v : all.stacks) {
    const size_t per_lane = all.lanes ? v.words.size() / all.lanes : 0;
    s.stacks.push_back({v.var, range(v.depth, 1), range(v.words, per_lane)});
  }
  return s;
}

}  // namespace

VulkanSource::VulkanSource(ProgramInfo program, const RunOptions& options,
                           const VulkanOptions& vulkan, uint32_t lanes)
    : program_(std::move(program)), options_(options), vulkan_(vulkan), lanes_(lanes) {}

Expected<std::unique_ptr<VulkanSource>> VulkanSource::open(std::shared_ptr<const Module> module,
                                                           const Batch& batch,
                                                           const RunOptions& options,
                                                           const VulkanOptions& vulkan,
                                                           std::shared_ptr<VulkanContext> context) {
  if (!context) {
    auto created = VulkanContext::create(vulkan.context);
    if (!created) return Error{created.error()};
    context = *created;
  }
  const DeviceInfo device = context->device();
  ProgramInfo program{module->file(), module->source_text(), module};
  auto compiled = VulkanProgram::compile(context, std::move(module), vulkan);
  if (!compiled) return Error{compiled.error()};
  auto run = VulkanRun::create(*compiled, batch, options, vulkan);
  if (!run) return Error{run.error()};
  std::unique_ptr<VulkanSource> s(
      new VulkanSource(std::move(program), options, vulkan, batch.lanes));
  s->run_ = std::move(*run);
  s->device_ = device.name;
  s->external_ = context->external();
  // Lane scope: every lane is its own PC loop, so there is no group choosing a block to show.
  s->group_width_ = vulkan.local_scope == LocalScope::Lane ? 0 : s->run_->group_width();
  if (!s->refresh()) return Error{s->error_};
  return s;
}

bool VulkanSource::refresh() {
  full_.reset();
  result_.reset();
  auto state = run_->lane_state();
  if (!state) {
    error_ = state.error();
    return false;
  }
  view_ = std::move(*state);
  const auto exit_pc = static_cast<int32_t>(program_.module->blocks().size());
  std::vector<uint32_t> waiting(exit_pc, 0);
  live_ = 0;
  for (uint32_t lane = 0; lane < lanes_; ++lane) {
    const int32_t pc = view_.pc[lane];
    if (pc < 0 || pc >= exit_pc || view_.faulted[lane]) continue;
    ++waiting[pc];
    ++live_;
  }
  // The VM's rule; for the local schedule it is the block the lowest-numbered group would see
  // if it held every lane, so the per-group view (model.h, group_view) is what to read there.
  next_block_ = live_ == 0 ? -1 : pick_next_block(options_.heuristic, waiting);
  return true;
}

uint64_t VulkanSource::step(uint64_t n) {
  uint64_t taken = 0;
  for (; taken < n && !done(); ++taken) {
    const std::vector<uint64_t> before = view_.lane_steps;
    auto stepped = run_->step(1);
    if (!stepped) {
      error_ = stepped.error();
      break;
    }
    ++steps_;
    if (!refresh()) break;
    last_active_.clear();
    for (uint32_t lane = 0; lane < lanes_; ++lane)
      if (view_.lane_steps[lane] != before[lane]) last_active_.push_back(lane);
  }
  return taken;
}

BatchSnapshot VulkanSource::snapshot(uint32_t first, uint32_t count) const {
  if (!full_) {
    auto s = run_->snapshot();
    if (!s) {
      // Without the stacks: no frames to show, and the error says why.
      error_ = s.error();
      BatchSnapshot partial = slice(view_, first, count);
      std::fill(partial.pc_depth.begin(), partial.pc_depth.end(), 0u);
      return partial;
    }
    full_ = std::move(*s);
    full_->step = steps_;
  }
  if (first == 0 && count >= lanes_) return *full_;
  return slice(*full_, first, count);
}

RunResult VulkanSource::result() const {
  if (!result_) {
    auto r = run_->result_so_far();
    result_ = r ? std::move(*r) : RunResult{};
  }
  return *result_;
}

std::unique_ptr<SourceCheckpoint> VulkanSource::checkpoint() const {
  auto c = std::make_unique<VulkanSourceCheckpoint>();
  c->step = steps_;
  auto saved = run_->checkpoint();
  if (saved)
    c->run = *saved;
  else
    c->failure = saved.error();  // restoring it reports the error instead of going back
  return c;
}

void VulkanSource::restore(const SourceCheckpoint& checkpoint) {
  const auto& c = static_cast<const VulkanSourceCheckpoint&>(checkpoint);
  if (!c.run) {
    error_ = "cannot go back: the checkpoint could not be saved: " + c.failure;
    return;
  }
  if (auto s = run_->restore(*c.run); !s) {
    error_ = s.error();
    return;
  }
  error_.clear();
  steps_ = c.step;
  last_active_.clear();
  refresh();
}

std::string VulkanSource::describe() const {
  const std::string schedule =
      vulkan_.schedule == Schedule::Global
          ? fmt::format("global/{}", global_mode_name(vulkan_.global_mode))
          : fmt::format("local/{}, {} lanes per group", local_scope_name(vulkan_.local_scope),
                        group_width_);
  return fmt::format("vulkan: {}{}, {}", device_, external_ ? " (the window's device)" : "",
                     schedule);
}

}  // namespace ab::debugger
