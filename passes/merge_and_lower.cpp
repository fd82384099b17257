#include "passes/merge_and_lower.h"

#include <fmt/format.h>

#include <algorithm>

#include "passes/analysis/call_graph.h"
#include "passes/split_at_calls.h"

namespace ab {
namespace {

// Functions joined by tail calls share one result variable: a tail-called function returns
// straight to its caller's caller, whose continuation reads the result of the function it
// called. Each group's owner is its lowest-numbered function; returns every function's owner.
std::vector<size_t> tail_call_owners(const Program& split, const CallGraph& calls) {
  const size_t nf = split.functions.size();
  std::vector<size_t> result_owner(nf);
  for (size_t f = 0; f < nf; ++f)
    result_owner[f] = f;
  auto owner = [&](size_t f) {
    while (result_owner[f] != f)
      f = result_owner[f] = result_owner[result_owner[f]];
    return f;
  };
  for (size_t f = 0; f < nf; ++f) {
    if (!calls.reachable_from_entry[f]) continue;
    const Function& fn = split.functions[f];
    for (size_t b = 0; b < fn.blocks.size(); ++b) {
      if (!ends_in_tail_call(fn, static_cast<int>(b))) continue;
      const size_t x = owner(f), y = owner(static_cast<size_t>(fn.blocks[b].ops.back().index));
      result_owner[std::max(x, y)] = std::min(x, y);
    }
  }
  for (size_t f = 0; f < nf; ++f)
    result_owner[f] = owner(f);
  return result_owner;
}

// Every reachable function's variables and blocks numbered in the merged program.
struct Numbering {
  std::vector<std::vector<VarId>> var_id;  // per function, per variable
  std::vector<int32_t> first_block;        // per function; -1 for an unreachable one
};

Numbering number_functions(const Program& split, const StoragePlan& plan, const CallGraph& calls,
                           LoweredProgram& out) {
  const size_t nf = split.functions.size();
  const std::vector<size_t> owner = tail_call_owners(split, calls);
  Numbering n{std::vector<std::vector<VarId>>(nf), std::vector<int32_t>(nf, -1)};
  int32_t next_block = 0;
  for (size_t f = 0; f < nf; ++f) {
    if (!calls.reachable_from_entry[f]) continue;
    const Function& fn = split.functions[f];
    for (size_t v = 0; v < fn.vars.size(); ++v) {
      const Storage storage = plan.storage[f][v];
      if (static_cast<VarId>(v) == fn.result && owner[f] != f) {  // numbered with its owner
        const VarId shared = n.var_id[owner[f]][split.functions[owner[f]].result];
        out.vars[shared].storage = std::max(out.vars[shared].storage, storage);
        n.var_id[f].push_back(shared);
        continue;
      }
      n.var_id[f].push_back(static_cast<VarId>(out.vars.size()));
      out.vars.push_back({fn.name + "." + fn.vars[v].name, fn.vars[v].type, storage,
                          static_cast<int32_t>(f), static_cast<VarId>(v)});
    }
    n.first_block[f] = next_block;
    next_block += static_cast<int32_t>(fn.blocks.size());
  }
  out.blocks.resize(next_block);
  return n;
}

// Block b of function f ends in a call (block.ops.back()), already dropped from `lb`: save, pass
// arguments, jump; the continuation: take the result, restore. A tail call only passes the
// arguments and jumps: its callee returns to our caller.
void lower_call(const Program& split, const StoragePlan& plan, const Numbering& n, size_t f,
                size_t b, int call_number, LoweredProgram& out) {
  const Function& fn = split.functions[f];
  const Block& block = fn.blocks[b];
  LoweredBlock& lb = out.blocks[n.first_block[f] + b];
  const auto& vid = n.var_id[f];
  const bool tail = ends_in_tail_call(fn, static_cast<int>(b));
  const Op& call = block.ops.back();
  const Function& callee = split.functions[call.index];
  const std::vector<VarId>& saved = plan.saved[f][b];
  std::vector<VarId> args;
  for (size_t k = 0; k < call.args.size(); ++k) {
    VarId arg = vid[call.args[k]];
    if (call.index == static_cast<int32_t>(f)) {  // self-call: evaluate all args first
      const VarId tmp = static_cast<VarId>(out.vars.size());
      out.vars.push_back({fmt::format("{}.call{}.arg{}", fn.name, call_number, k),
                          out.vars[arg].type, Storage::Temp, static_cast<int32_t>(f), -1});
      lb.ops.push_back(copy_op(tmp, arg, call.loc));
      arg = tmp;
    }
    args.push_back(arg);
  }
  for (VarId v : saved)
    lb.ops.push_back(stack_op(true, vid[v], call.loc));
  for (size_t k = 0; k < args.size(); ++k)
    lb.ops.push_back(copy_op(n.var_id[call.index][callee.params[k]], args[k], call.loc));
  lb.term.kind = tail ? Terminator::Kind::TailJump : Terminator::Kind::PushJump;
  lb.term.target = n.first_block[call.index];
  lb.term.loc = call.loc;
  if (tail) return;
  lb.term.target_else = n.first_block[f] + block.term.target;

  LoweredBlock& cont = out.blocks[lb.term.target_else];
  cont.name = fmt::format("{}.b{}.ret{}", fn.name, block.term.target, call_number);
  std::vector<Op> prologue;
  if (call.dst >= 0)
    prologue.push_back(copy_op(vid[call.dst], n.var_id[call.index][callee.result], call.loc));
  for (auto it = saved.rbegin(); it != saved.rend(); ++it)
    prologue.push_back(stack_op(false, vid[*it], call.loc));
  // split_at_calls appends continuations, so this one is visited later and its own ops land
  // after the prologue.
  cont.ops = std::move(prologue);
}

}  // namespace

LoweredProgram merge_and_lower(const Program& split, const StoragePlan& plan, int entry,
                               const Program* source) {
  const CallGraph calls = compute_call_graph(split, entry);
  LoweredProgram out;
  out.source = source;
  out.entry_function = entry;
  const Numbering n = number_functions(split, plan, calls, out);
  for (size_t f = 0; f < split.functions.size(); ++f) {
    if (n.first_block[f] < 0) continue;
    const Function& fn = split.functions[f];
    const auto& vid = n.var_id[f];
    int call_count = 0;
    for (size_t b = 0; b < fn.blocks.size(); ++b) {
      const Block& block = fn.blocks[b];
      LoweredBlock& lb = out.blocks[n.first_block[f] + b];
      lb.function = static_cast<int32_t>(f);
      lb.loc = block.loc;
      if (lb.name.empty()) lb.name = fmt::format("{}.b{}", fn.name, b);
      for (const Op& op : block.ops) {
        if (is_call(op)) continue;  // lower_call's: it is the block's last op
        Op mapped = op;
        if (mapped.dst >= 0) mapped.dst = vid[mapped.dst];
        for (VarId& a : mapped.args)
          a = vid[a];
        lb.ops.push_back(std::move(mapped));
      }
      lb.term = block.term;
      if (block.term.cond >= 0) lb.term.cond = vid[block.term.cond];
      lb.term.target = block.term.target < 0 ? -1 : n.first_block[f] + block.term.target;
      lb.term.target_else =
          block.term.target_else < 0 ? -1 : n.first_block[f] + block.term.target_else;
      const int bi = static_cast<int>(b);
      if (ends_in_tail_call(fn, bi) || ends_in_call(fn, bi))
        lower_call(split, plan, n, f, b, call_count++, out);
    }
  }
  out.entry_block = n.first_block[entry];
  for (VarId p : split.functions[entry].params)
    out.inputs.push_back(n.var_id[entry][p]);
  const VarId result = split.functions[entry].result;
  out.output = result < 0 ? -1 : n.var_id[entry][result];
  return out;
}

}  // namespace ab
