#include "passes/analysis/tail_calls.h"

namespace ab {

bool is_tail_call(const Program& program, const Function& fn, const Block& b, size_t index) {
  if (index + 1 != b.ops.size() || b.term.kind != Terminator::Kind::Return) return false;
  const Op& call = b.ops[index];
  if (!is_call(call) || call.dst != fn.result) return false;
  // The callee's value becomes ours: it must be of our result type (void for void).
  return program.functions[call.index].result_type() == fn.result_type();
}

}  // namespace ab
