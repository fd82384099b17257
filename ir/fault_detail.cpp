#include "ir/fault_detail.h"

#include <fmt/format.h>

namespace ab {
namespace {

// "x.2" (the front end's name for a second `x` in one function) reads as "x".
std::string source_name(const std::string& name) {
  const size_t dot = name.rfind('.');
  if (dot == std::string::npos || dot + 1 == name.size()) return name;
  for (size_t i = dot + 1; i < name.size(); ++i)
    if (name[i] < '0' || name[i] > '9') return name;
  return name.substr(0, dot);
}

// Steps from `type` into its part at `offset` words until reaching an array that `step` indexes,
// naming each field and constant index on the way (a static path step sums several of them).
TypeId descend(const Types& types, TypeId type, uint32_t offset, const PathStep& step,
               std::string& name) {
  for (;;) {
    const Type& t = types[type];
    if (offset == 0 && t.kind == Type::Kind::Array && t.count == step.count &&
        types.words(t.elem) == step.stride)
      return type;
    if (t.kind == Type::Kind::Array) {
      const uint32_t stride = types.words(t.elem);
      const uint32_t i = stride ? offset / stride : 0;
      name += fmt::format("[{}]", i);
      offset -= i * stride;
      type = t.elem;
    } else if (t.kind == Type::Kind::Struct) {
      const StructDef& def = types.struct_def(type);
      const Field* inside = nullptr;
      for (const Field& f : def.fields)
        if (f.offset <= offset && offset < f.offset + types.words(f.type)) inside = &f;
      if (!inside) return type;
      name += "." + inside->name;
      offset -= inside->offset;
      type = inside->type;
    } else {
      return type;  // a scalar: the path does not fit the type (the verifier prevents this)
    }
  }
}

}  // namespace

std::string index_fault_text(const Types& types, const std::vector<Uniform>& uniforms, const Op& op,
                             const std::function<NamedVar(VarId)>& var, IndexFault fault) {
  const size_t first = first_index_arg(op.code);
  if (first + fault.ordinal >= op.args.size()) return {};
  NamedVar array =
      is_uniform_get(op) && op.index >= 0 && static_cast<size_t>(op.index) < uniforms.size()
          ? NamedVar{uniforms[op.index].name, uniforms[op.index].type}
          : var(op.args[0]);
  std::string name = source_name(array.name);
  TypeId type = array.type;
  uint32_t offset = 0, ordinal = 0;
  for (const PathStep& step : op.path) {
    if (!step.dynamic) {
      offset += step.offset;
      continue;
    }
    type = descend(types, type, offset, step, name);
    offset = 0;
    if (ordinal++ == fault.ordinal) break;
    name += "[·]";  // an index that was in range; its value is not kept
    if (types.is_array(type)) type = types[type].elem;
  }
  const bool is_signed = var(op.args[first + fault.ordinal]).type == Types::kInt;
  const std::string index = is_signed ? fmt::format("{}", static_cast<int32_t>(fault.value))
                                      : fmt::format("{}", fault.value);
  const std::string type_text = types.to_string(type);
  if (array.name.empty()) return fmt::format("index {} out of range for a {}", index, type_text);
  return fmt::format("index {} out of range for {}: {}", index, name, type_text);
}

std::string index_fault_text(const Program& program, const Function& fn, const Op& op,
                             IndexFault fault) {
  return index_fault_text(
      program.types, program.uniforms, op,
      [&](VarId v) {
        const Var& var = fn.vars.at(v);
        return NamedVar{var.temporary ? std::string() : var.name, var.type};
      },
      fault);
}

std::string index_fault_text(const LoweredProgram& program, const Op& op, IndexFault fault) {
  return index_fault_text(
      program.types(), program.source->uniforms, op,
      [&](VarId v) {
        const LoweredVar& lv = program.vars.at(v);
        // A variable the lowering made (a temporary's copy, say) has no source name.
        const Var* var = lv.source_var >= 0 && lv.function >= 0
                             ? &program.source->functions.at(lv.function).vars.at(lv.source_var)
                             : nullptr;
        return NamedVar{var && !var->temporary ? var->name : std::string(), lv.type};
      },
      fault);
}

}  // namespace ab
