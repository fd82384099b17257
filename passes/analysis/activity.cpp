#include "passes/analysis/activity.h"

namespace ab {

bool has_float(const Types& t, TypeId id) {
  const Type& ty = t[id];
  switch (ty.kind) {
    case Type::Kind::Scalar:
      return ty.scalar == Scalar::Float;
    case Type::Kind::Array:
      return has_float(t, ty.elem);
    case Type::Kind::Struct:
      for (const Field& f : t.struct_def(id).fields)
        if (has_float(t, f.type)) return true;
      return false;
    case Type::Kind::Void:
      return false;
  }
  return false;
}

bool carries_activity(const Op& op, const std::vector<bool>& active) {
  if (op_info(op.code).derivative == Derivative::Zero) return false;
  for (VarId a : op.args)
    if (active[a]) return true;
  return false;
}

Activity find_activity(const Function& fn, const Types& types, bool first_param_only) {
  const size_t nv = fn.vars.size();
  Activity act{std::vector<bool>(nv, false), std::vector<int>(nv, 0)};
  for (size_t k = 0; k < fn.params.size(); ++k) {
    const VarId p = fn.params[k];
    ++act.defs[p];
    if ((k == 0 || !first_param_only) && has_float(types, fn.vars[p].type)) act.active[p] = true;
  }
  for (const Block& b : fn.blocks)
    for (const Op& op : b.ops)
      if (op.dst >= 0) ++act.defs[op.dst];
  for (bool changed = true; changed;) {
    changed = false;
    for (const Block& b : fn.blocks)
      for (const Op& op : b.ops) {
        if (op.dst < 0 || act.active[op.dst] || !has_float(types, fn.vars[op.dst].type)) continue;
        if (carries_activity(op, act.active)) {
          act.active[op.dst] = true;
          changed = true;
        }
      }
  }
  return act;
}

}  // namespace ab
