#include "passes/split_at_calls.h"

#include "passes/analysis/tail_calls.h"

namespace ab {

bool ends_in_call(const Function& fn, int b) {
  const Block& block = fn.blocks[b];
  return !block.ops.empty() && is_call(block.ops.back()) &&
         block.term.kind == Terminator::Kind::Jump;
}

bool ends_in_tail_call(const Function& fn, int b) {
  const Block& block = fn.blocks[b];
  return !block.ops.empty() && is_call(block.ops.back()) &&
         block.term.kind == Terminator::Kind::Return;
}

Program split_at_calls(const Program& program) {
  Program out = program;
  for (Function& fn : out.functions) {
    // New continuation blocks are appended, and themselves visited, so chains of calls split fully.
    for (size_t b = 0; b < fn.blocks.size(); ++b) {
      std::vector<Op>& ops = fn.blocks[b].ops;
      size_t call = 0;
      while (call < ops.size() && !is_call(ops[call]))
        ++call;
      if (call == ops.size()) continue;
      if (is_tail_call(program, fn, fn.blocks[b], call)) continue;  // nothing to come back to
      Block cont;
      cont.loc = ops[call].loc;
      cont.ops.assign(ops.begin() + static_cast<long>(call) + 1, ops.end());
      cont.term = fn.blocks[b].term;
      ops.resize(call + 1);
      Terminator jump;
      jump.kind = Terminator::Kind::Jump;
      jump.target = static_cast<int32_t>(fn.blocks.size());
      jump.loc = ops[call].loc;
      fn.blocks[b].term = jump;
      fn.blocks.push_back(std::move(cont));
    }
  }
  return out;
}

}  // namespace ab
