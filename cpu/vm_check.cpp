#include "cpu/vm_check.h"

#include <algorithm>

#include "ir/exec.h"

namespace ab {
namespace {

// demand[block][s]: how many entries of Stacked variable s's stack (in variable order) a frame
// at the start of `block` may pop or read (Update) before it returns. A frame pops only what it
// pushed before its own calls, and the frames of those calls are balanced, so a lane can run on
// without underflowing a stack if each stack holds the sum of this over the frames that will
// resume: the lane's current block and every return address on its PC stack. Computed per block
// (the dip below the entry depth, and the net change) and then to a fixed point over the frame's
// successors (a call continues at its return address); values are capped at `cap`.
using StackDemand = std::vector<std::vector<uint32_t>>;

StackDemand stack_demand(const LoweredProgram& p, uint32_t cap) {
  std::vector<int32_t> slot(p.vars.size(), -1);
  size_t stacked = 0;
  for (size_t v = 0; v < p.vars.size(); ++v)
    if (p.vars[v].storage == Storage::Stacked) slot[v] = static_cast<int32_t>(stacked++);
  const size_t blocks = p.blocks.size();
  std::vector<std::vector<int64_t>> dip(blocks, std::vector<int64_t>(stacked, 0));
  std::vector<std::vector<int64_t>> net(blocks, std::vector<int64_t>(stacked, 0));
  for (size_t b = 0; b < blocks; ++b) {
    for (const Op& op : p.blocks[b].ops) {
      if (!is_stack_op(op)) continue;
      const int32_t s = slot[op.args[0]];
      if (is_push(op)) {
        ++net[b][s];
      } else {  // Pop and Update both read the top entry, which must exist
        dip[b][s] = std::max(dip[b][s], 1 - net[b][s]);
        if (is_pop(op)) --net[b][s];
      }
    }
  }
  StackDemand demand(blocks, std::vector<uint32_t>(stacked, 0));
  // Demands only grow and are capped, so this ends; a lowered program has no loop that pops
  // more than it pushes, so it ends within one round per block.
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t b = 0; b < blocks; ++b) {
      const Terminator& t = p.blocks[b].term;
      std::vector<int32_t> next;
      if (t.kind == Terminator::Kind::Jump || t.kind == Terminator::Kind::Branch)
        next.push_back(t.target);
      if (t.kind == Terminator::Kind::Branch || t.kind == Terminator::Kind::PushJump)
        next.push_back(t.target_else);
      for (size_t s = 0; s < stacked; ++s) {
        int64_t d = dip[b][s];
        for (int32_t n : next)
          d = std::max(d, int64_t{demand[n][s]} - net[b][s]);
        const uint32_t capped = static_cast<uint32_t>(std::clamp<int64_t>(d, 0, cap));
        if (capped > demand[b][s]) demand[b][s] = capped, changed = true;
      }
    }
  }
  return demand;
}

// "" if `c` fits the program and batch, so restoring it, and running on from it, cannot index
// out of bounds.
std::string check_checkpoint(const VmCheckpoint& c, const LoweredProgram& p, uint32_t lanes,
                             uint32_t stack_depth, const StackDemand& demand) {
  std::vector<TypeId> types;
  for (const LoweredVar& v : p.vars)
    types.push_back(v.type);
  std::vector<uint32_t> offsets;
  const uint32_t words = layout_words(p.types(), types, offsets);
  if (c.registers.size() != size_t{lanes} * words) return "registers do not fit the program";
  if (c.block_executions.size() != p.blocks.size()) return "block count differs from the program";
  uint64_t entries = 0;
  for (uint32_t lane = 0; lane < lanes; ++lane) {
    if (c.pc[lane] < 0 || c.pc[lane] > p.exit_pc()) return "a PC is outside the program";
    if (c.pc_depth[lane] > stack_depth) return "a call depth exceeds the stack depth";
    entries += c.pc_depth[lane];
  }
  if (entries != c.pc_stack.size()) return "PC stack sizes do not add up";
  // Running on returns through each live lane's PC stack, so it must hold the exit PC at the
  // bottom (pushed when the lane started) and blocks of the program above it: every return then
  // lands in the program, and the last one ends the lane before its stack is empty.
  size_t at = 0;
  for (uint32_t lane = 0; lane < lanes; at += c.pc_depth[lane], ++lane) {
    if (c.pc[lane] == p.exit_pc()) continue;
    if (c.pc_depth[lane] == 0 || c.pc_stack[at] != p.exit_pc())
      return "a running lane's PC stack does not start at the exit";
    for (uint32_t k = 1; k < c.pc_depth[lane]; ++k)
      if (c.pc_stack[at + k] < 0 || c.pc_stack[at + k] >= p.exit_pc())
        return "a return address is outside the program";
  }
  size_t stacked = 0;
  for (const LoweredVar& v : p.vars)
    stacked += v.storage == Storage::Stacked;
  if (c.stacks.size() != stacked) return "variable stacks differ from the program";
  size_t si = 0;
  for (const LoweredVar& v : p.vars) {
    if (v.storage != Storage::Stacked) continue;
    const auto& s = c.stacks[si++];
    if (s.depth.size() != lanes) return "a variable stack has the wrong lane count";
    uint64_t n = 0;
    for (uint32_t d : s.depth) {
      if (d > stack_depth) return "a variable stack is deeper than the stack depth";
      n += uint64_t{d} * p.types().words(v.type);
    }
    if (n != s.words.size()) return "variable stack sizes do not add up";
  }
  // Every stack must hold what the lane's resuming frames will pop (stack_demand).
  at = 0;
  std::vector<uint64_t> need(stacked);
  for (uint32_t lane = 0; lane < lanes; at += c.pc_depth[lane], ++lane) {
    if (c.pc[lane] == p.exit_pc()) continue;
    need.assign(demand[c.pc[lane]].begin(), demand[c.pc[lane]].end());
    for (uint32_t k = 1; k < c.pc_depth[lane]; ++k)  // entry 0 is the exit: no frame resumes
      for (size_t s = 0; s < stacked; ++s)
        need[s] += demand[c.pc_stack[at + k]][s];
    for (size_t s = 0; s < stacked; ++s)
      if (c.stacks[s].depth[lane] < need[s])
        return "a variable stack holds fewer entries than the lane will pop";
  }
  return "";
}

}  // namespace

VmCheckpointCheck::VmCheckpointCheck(const LoweredProgram& program, uint32_t lanes,
                                     uint32_t stack_depth, size_t shards)
    : program_(&program),
      lanes_(lanes),
      stack_depth_(stack_depth),
      shards_(shards),
      demand_(stack_demand(program, stack_depth)) {}

std::string VmCheckpointCheck::operator()(const VmCheckpoint& checkpoint) const {
  if (checkpoint.shard_steps.size() != shards_) return "its shards differ from the run's";
  return check_checkpoint(checkpoint, *program_, lanes_, stack_depth_, demand_);
}

}  // namespace ab
