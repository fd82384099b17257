#include "debugger/lane_inspector.h"

#include <fmt/format.h>
#include <algorithm>
#include <nlohmann/json.hpp>

#include "debugger/block_index.h"
#include "debugger/value_format.h"

namespace ab::debugger {
namespace {

// The function called by the call whose return block is `ret`; "" if none.
std::string callee_at_return(const Module& p, int32_t ret) {
  for (const BlockInfo& b : p.blocks())
    if (b.call_entry >= 0 && b.call_return == ret) return p.blocks()[b.call_entry].function;
  return "";
}

}  // namespace

LaneDetails lane_details(const ExecutionSource& s, uint32_t lane) {
  LaneDetails d;
  d.lane = lane;
  if (lane >= s.lanes()) return d;
  const Module& p = *s.program().module;
  const BlockIndex blocks(p);
  const BatchSnapshot snap = s.snapshot(lane, 1);
  const int32_t pc = snap.pc[0];
  const bool finished = pc == blocks.exit_pc();
  d.status = snap.faulted[0] ? "faulted" : finished ? "finished" : "waiting at " + blocks.name(pc);
  auto frame_of = [&](int32_t block) {
    const BlockInfo& b = p.blocks()[block];
    return Frame{b.function, b.name, blocks.line(block)};
  };
  if (!finished) {
    d.frames.push_back(frame_of(pc));
    // pc_stack[0] is the exit PC the entry function returns to; above it, return blocks.
    for (uint32_t i = snap.pc_depth[0]; i-- > 1;)
      d.frames.push_back(frame_of(snap.pc_stack[i]));
    // A frame whose function differs from the callee of the call its caller waits in was
    // reached by tail calls; the entry function's frame is the lane's start.
    for (size_t f = 0; f < d.frames.size(); ++f) {
      const std::string called = f + 1 < d.frames.size()
                                     ? callee_at_return(p, snap.pc_stack[snap.pc_depth[0] - 1 - f])
                                     : p.entry();
      d.frames[f].after_tail_calls = !called.empty() && called != d.frames[f].function;
    }
  }
  for (size_t v = 0; v < p.variables().size(); ++v) {
    const VariableInfo& var = p.variables()[v];
    if (var.storage == VariableInfo::Storage::Temp || !var.from_source) continue;
    VariableView view;
    view.name = var.name;
    view.storage = VariableInfo::storage_name(var.storage);
    view.value = format_value(var.value_type, snap.registers.data() + var.offset);
    for (const BatchSnapshot::VarStack& st : snap.stacks) {
      if (st.var != static_cast<int32_t>(v)) continue;
      const uint32_t w = var.value_type.words;
      for (uint32_t i = 0; i < st.depth[0]; ++i)
        view.stack.push_back(format_value(var.value_type, st.words.data() + size_t{i} * w));
    }
    d.variables.push_back(std::move(view));
  }
  const RunResult r = s.result();
  if (snap.faulted[0]) {
    for (const LaneError& e : r.errors)
      if (e.lane == lane)
        d.error = fmt::format("{} in {}, line {}, lane step {}", fault_text(e), e.function, e.line,
                              e.step);
  } else if (finished && !p.output().value_type.is_void()) {
    const ValueType& type = p.output().value_type;
    d.output = format_value(type, r.outputs.data() + size_t{lane} * type.words);
  }
  return d;
}

std::optional<GroupView> group_view(const ExecutionSource& source, uint32_t lane) {
  const uint32_t width = source.group_width();
  if (width == 0 || lane >= source.lanes()) return std::nullopt;
  GroupView g;
  g.group = lane / width;
  g.first_lane = g.group * width;
  const uint32_t end = std::min(source.lanes(), g.first_lane + width);
  const auto& pcs = source.lane_pcs();
  const auto& faulted = source.lane_faulted();
  const auto exit = static_cast<int32_t>(source.program().module->blocks().size());
  for (uint32_t l = g.first_lane; l < end; ++l) {
    g.pcs.push_back(pcs[l]);
    if (faulted[l] || pcs[l] >= exit) continue;
    if (g.next_block < 0 || pcs[l] < g.next_block) g.next_block = pcs[l];
  }
  for (uint32_t l = g.first_lane; l < end; ++l)
    g.lanes_at_next += g.next_block >= 0 && pcs[l] == g.next_block && !faulted[l];
  return g;
}

std::string state_json(const Module& p, const BatchSnapshot& snap) {
  nlohmann::json lanes = nlohmann::json::array();
  const size_t words = snap.lanes ? snap.registers.size() / snap.lanes : 0;
  const std::vector<VariableInfo>& vars = p.variables();
  const auto exit_pc = static_cast<int32_t>(p.blocks().size());
  std::vector<bool> temp_word(words, false);
  for (const VariableInfo& v : vars)
    if (v.storage == VariableInfo::Storage::Temp)
      for (uint32_t k = 0; k < v.value_type.words && v.offset + k < words; ++k)
        temp_word[v.offset + k] = true;
  for (uint32_t lane = 0; lane < snap.lanes; ++lane) {
    nlohmann::json l;
    l["pc"] = snap.pc[lane];
    l["block"] = snap.pc[lane] == exit_pc ? "finished" : p.blocks()[snap.pc[lane]].name;
    l["depth"] = snap.pc_depth[lane];
    const auto pcs = snap.pc_stack.begin() + size_t{lane} * snap.stack_capacity;
    l["pc_stack"] = std::vector<int32_t>(pcs, pcs + snap.pc_depth[lane]);
    // Temporaries hold nothing between blocks: the VM leaves stale words there and Vulkan never
    // stores them, so they are written as 0 and every source dumps the same state.
    std::vector<uint32_t> regs(snap.registers.begin() + lane * words,
                               snap.registers.begin() + (lane + 1) * words);
    for (size_t k = 0; k < temp_word.size() && k < regs.size(); ++k)
      if (temp_word[k]) regs[k] = 0;
    l["registers"] = std::move(regs);
    nlohmann::json stacks = nlohmann::json::object();
    for (const BatchSnapshot::VarStack& st : snap.stacks) {
      const uint32_t w = vars[st.var].value_type.words;
      const auto first = st.words.begin() + size_t{lane} * snap.stack_capacity * w;
      stacks[vars[st.var].name] = std::vector<uint32_t>(first, first + size_t{st.depth[lane]} * w);
    }
    l["stacks"] = std::move(stacks);
    l["lane_steps"] = snap.lane_steps[lane];
    l["faulted"] = snap.faulted[lane] != 0;
    lanes.push_back(std::move(l));
  }
  nlohmann::json out;
  out["step"] = snap.step;
  out["lanes"] = std::move(lanes);
  return out.dump();
}

}  // namespace ab::debugger
