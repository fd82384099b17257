#include "passes/pop_push_to_update.h"

namespace ab {
namespace {

bool writes(const Op& op, VarId v) {
  if (op.dst == v) return true;
  return restores(op) && op.args[0] == v;
}

}  // namespace

int pop_push_to_update(LoweredProgram& program) {
  int replaced = 0;
  for (LoweredBlock& block : program.blocks) {
    std::vector<Op>& ops = block.ops;
    for (size_t i = 0; i < ops.size(); ++i) {
      if (!is_pop(ops[i])) continue;
      const VarId v = ops[i].args[0];
      for (size_t j = i + 1; j < ops.size(); ++j) {
        if (is_push(ops[j]) && ops[j].args[0] == v) {
          pop_to_update(ops[i]);
          ops.erase(ops.begin() + static_cast<long>(j));
          ++replaced;
          break;
        }
        if (writes(ops[j], v)) break;
      }
    }
  }
  return replaced;
}

}  // namespace ab
