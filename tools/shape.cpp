#include "tools/shape.h"

#include <fmt/format.h>

namespace ab::cli {

uint64_t ValueShape::elements() const {
  uint64_t count = 1;
  for (uint32_t d : dims)
    count *= d;
  return count;
}

std::optional<ValueShape> value_shape(const Types& types, TypeId type) {
  ValueShape shape;
  while (types.is_array(type)) {
    shape.dims.push_back(types[type].count);
    type = types[type].elem;
  }
  if (!types.is_scalar(type)) return std::nullopt;
  shape.leaf = types[type].scalar;
  return shape;
}

std::string shape_string(const std::vector<uint64_t>& dims) {
  if (dims.size() == 1) return fmt::format("({},)", dims[0]);
  return fmt::format("({})", fmt::join(dims, ", "));
}

}  // namespace ab::cli
