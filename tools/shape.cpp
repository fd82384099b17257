#include "tools/shape.h"

#include <fmt/format.h>

namespace ab::cli {

uint64_t ValueShape::elements() const {
  uint64_t count = 1;
  for (uint32_t d : dims)
    count *= d;
  return count;
}

std::optional<ValueShape> value_shape(const ValueType& type) {
  ValueShape shape;
  const ValueType* leaf = &type;
  while (leaf->is_array()) {
    shape.dims.push_back(leaf->count);
    leaf = &leaf->elem();
  }
  if (!leaf->is_scalar()) return std::nullopt;
  shape.leaf = leaf->scalar;
  return shape;
}

}  // namespace ab::cli
