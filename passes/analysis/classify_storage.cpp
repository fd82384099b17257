#include "passes/analysis/classify_storage.h"

#include "passes/analysis/liveness.h"
#include "passes/split_at_calls.h"

namespace ab {

StoragePlan classify_storage(const Program& split, const CallGraph& calls) {
  StoragePlan plan;
  const size_t nf = split.functions.size();
  plan.storage.resize(nf);
  plan.saved.resize(nf);
  for (size_t f = 0; f < nf; ++f) {
    const Function& fn = split.functions[f];
    const Liveness live = compute_liveness(fn);
    std::vector<Storage>& storage = plan.storage[f];
    storage.assign(fn.vars.size(), Storage::Temp);
    for (VarId p : fn.params)
      storage[p] = Storage::Register;
    if (fn.result >= 0) storage[fn.result] = Storage::Register;
    // A tape's push and pop (passes/differentiate.h) need the variable's stack.
    for (const Block& block : fn.blocks)
      for (const Op& op : block.ops)
        if (is_push(op) || is_pop(op)) storage[op.args[0]] = Storage::Stacked;

    // A call's destination is written when the callee returns, at the start of the continuation:
    // being live into that block does not make it outlive a block.
    std::vector<VarId> defined_on_entry(fn.blocks.size(), -1);
    for (size_t b = 0; b < fn.blocks.size(); ++b)
      if (ends_in_call(fn, static_cast<int>(b)))
        defined_on_entry[fn.blocks[b].term.target] = fn.blocks[b].ops.back().dst;
    for (size_t b = 0; b < fn.blocks.size(); ++b)
      for (size_t v = 0; v < fn.vars.size(); ++v)
        if (live.live_in[b][v] && static_cast<VarId>(v) != defined_on_entry[b] &&
            storage[v] == Storage::Temp)
          storage[v] = Storage::Register;

    plan.saved[f].resize(fn.blocks.size());
    for (size_t b = 0; b < fn.blocks.size(); ++b) {
      if (!ends_in_call(fn, static_cast<int>(b))) continue;
      const Op& call = fn.blocks[b].ops.back();
      if (!calls.reaches[call.index][f]) continue;  // the callee can never clobber our variables
      for (size_t v = 0; v < fn.vars.size(); ++v) {
        if (!live.live_out[b][v] || static_cast<VarId>(v) == call.dst) continue;
        plan.saved[f][b].push_back(static_cast<VarId>(v));
        storage[v] = Storage::Stacked;
      }
    }
  }
  return plan;
}

}  // namespace ab
