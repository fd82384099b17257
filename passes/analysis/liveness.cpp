#include "passes/analysis/liveness.h"

namespace ab {
namespace {

using Bits = std::vector<bool>;

void apply_op_backward(const Op& op, Bits& live) {
  if (op.dst >= 0) live[op.dst] = false;
  for (VarId a : op.args)
    live[a] = true;
}

void apply_term_backward(const Terminator& t, VarId result, Bits& live) {
  if (t.kind == Terminator::Kind::Branch) live[t.cond] = true;
  if (t.kind == Terminator::Kind::Return && result >= 0) live[result] = true;
}

}  // namespace

std::vector<int> successors(const Terminator& t) {
  switch (t.kind) {
    case Terminator::Kind::Jump:
      return {t.target};
    case Terminator::Kind::Branch:
      return {t.target, t.target_else};
    case Terminator::Kind::PushJump:
      return {t.target_else};  // the caller continues there
    case Terminator::Kind::Return:
    case Terminator::Kind::TailJump:
      return {};  // leaves the function (lowered form only)
  }
  return {};
}

Liveness compute_liveness(const Function& fn) {
  const size_t nb = fn.blocks.size(), nv = fn.vars.size();
  Liveness l;
  l.live_in.assign(nb, Bits(nv, false));
  l.live_out.assign(nb, Bits(nv, false));
  // Iterate to a fixed point, visiting blocks in reverse order (fast for forward-built CFGs).
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t b = nb; b-- > 0;) {
      const Block& block = fn.blocks[b];
      Bits out(nv, false);
      for (int s : successors(block.term))
        for (size_t v = 0; v < nv; ++v)
          out[v] = out[v] || l.live_in[s][v];
      Bits in = out;
      apply_term_backward(block.term, fn.result, in);
      for (size_t i = block.ops.size(); i-- > 0;)
        apply_op_backward(block.ops[i], in);
      if (in != l.live_in[b] || out != l.live_out[b]) {
        l.live_in[b] = std::move(in);
        l.live_out[b] = std::move(out);
        changed = true;
      }
    }
  }
  l.live_after.resize(nb);
  for (size_t b = 0; b < nb; ++b) {
    const Block& block = fn.blocks[b];
    Bits live = l.live_out[b];
    apply_term_backward(block.term, fn.result, live);
    l.live_after[b].resize(block.ops.size());
    for (size_t i = block.ops.size(); i-- > 0;) {
      l.live_after[b][i] = live;
      apply_op_backward(block.ops[i], live);
    }
  }
  return l;
}

}  // namespace ab
