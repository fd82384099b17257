#include "debugger/value_format.h"

#include <fmt/format.h>
#include <bit>

namespace ab::debugger {

std::string format_value(const Types& types, TypeId type, const uint32_t* words,
                         uint32_t max_elements) {
  const Type& t = types[type];
  switch (t.kind) {
    case Type::Kind::Void:
      return "()";
    case Type::Kind::Scalar:
      switch (t.scalar) {
        case Scalar::Bool:
          return words[0] ? "true" : "false";
        case Scalar::Int:
          return fmt::format("{}", static_cast<int32_t>(words[0]));
        case Scalar::UInt:
          return fmt::format("{}", words[0]);
        case Scalar::Float:
          return fmt::format("{}", std::bit_cast<float>(words[0]));
      }
      return "?";
    case Type::Kind::Array: {
      std::string out = "[";
      const uint32_t w = types.words(t.elem);
      for (uint32_t i = 0; i < t.count; ++i) {
        if (i) out += ", ";
        if (i == max_elements) {
          out += "...";
          break;
        }
        out += format_value(types, t.elem, words + size_t{i} * w, max_elements);
      }
      return out + "]";
    }
    case Type::Kind::Struct: {
      const StructDef& s = types.struct_def(type);
      std::string out = "{";
      for (size_t i = 0; i < s.fields.size(); ++i)
        out += fmt::format(
            "{}{}: {}", i ? ", " : "", s.fields[i].name,
            format_value(types, s.fields[i].type, words + s.fields[i].offset, max_elements));
      return out + "}";
    }
  }
  return "?";
}

double leading_scalar(const Types& types, TypeId type, const uint32_t* words) {
  while (types.is_array(type))
    type = types[type].elem;
  if (types.is_struct(type)) {
    const StructDef& s = types.struct_def(type);
    if (s.fields.empty()) return 0;
    return leading_scalar(types, s.fields[0].type, words + s.fields[0].offset);
  }
  if (!types.is_scalar(type)) return 0;
  switch (types[type].scalar) {
    case Scalar::Bool:
      return words[0] ? 1 : 0;
    case Scalar::Int:
      return static_cast<int32_t>(words[0]);
    case Scalar::UInt:
      return words[0];
    case Scalar::Float:
      return std::bit_cast<float>(words[0]);
  }
  return 0;
}

}  // namespace ab::debugger
