// The shape of a value that the command line can read or write as plain numbers: a scalar or a
// (nested) array of scalars. `dims` is empty for a scalar and {A, B} for T[A][B], whose words
// are stored row-major (element [i][j] at word i * B + j), as autobatch/value_type.h lays them out.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "autobatch/npy.h"  // shape_string
#include "autobatch/value_type.h"

namespace ab::cli {

struct ValueShape {
  Scalar leaf = Scalar::Int;
  std::vector<uint32_t> dims;

  uint64_t elements() const;  // product of dims (1 for a scalar)
};

// The shape of `type`, or nullopt if it is void, a struct or contains one.
std::optional<ValueShape> value_shape(const ValueType& type);

}  // namespace ab::cli
