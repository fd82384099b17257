#include "debugger/value_format.h"

#include <fmt/format.h>
#include <bit>

namespace ab::debugger {

std::string format_value(const ValueType& t, const uint32_t* words, uint32_t max_elements) {
  switch (t.kind) {
    case ValueType::Kind::Void:
      return "()";
    case ValueType::Kind::Scalar:
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
    case ValueType::Kind::Array: {
      std::string out = "[";
      const uint32_t w = t.elem().words;
      for (uint32_t i = 0; i < t.count; ++i) {
        if (i) out += ", ";
        if (i == max_elements) {
          out += "...";
          break;
        }
        out += format_value(t.elem(), words + size_t{i} * w, max_elements);
      }
      return out + "]";
    }
    case ValueType::Kind::Struct: {
      std::string out = "{";
      for (size_t i = 0; i < t.fields.size(); ++i)
        out +=
            fmt::format("{}{}: {}", i ? ", " : "", t.fields[i].name,
                        format_value(t.fields[i].type, words + t.fields[i].offset, max_elements));
      return out + "}";
    }
  }
  return "?";
}

double leading_scalar(const ValueType& type, const uint32_t* words) {
  const ValueType* t = &type;
  while (t->is_array())
    t = &t->elem();
  if (t->is_struct()) {
    if (t->fields.empty()) return 0;
    return leading_scalar(t->fields[0].type, words + t->fields[0].offset);
  }
  if (!t->is_scalar()) return 0;
  switch (t->scalar) {
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
