// Reading and writing numpy .npy files (format versions 1.0, 2.0 and 3.0): the one reader and
// writer of the CLI's inputs and outputs, the sampler's fit files (draws.npy and the per-draw
// statistics) and the bench's data.
//
// Reads little-endian <f4 <f8 <i4 <i8 <u4 <u8 and |b1 arrays in C order; anything else
// (big-endian, Fortran order, object or structured dtypes) is a clear error, never a guess.
// Writes version 1.0 files of <i4, <u4, <f4 or |b1 (the 32-bit scalar types of the language).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "autobatch/expected.h"
#include "autobatch/value_type.h"

namespace ab {

enum class NpyType : uint8_t { Bool, Int32, Int64, UInt32, UInt64, Float32, Float64 };

uint32_t npy_item_size(NpyType type);

// One element as stored, before conversion to a declared scalar type.
using NpyValue = std::variant<bool, int64_t, uint64_t, double>;

struct NpyArray {
  NpyType type = NpyType::Float32;
  std::vector<uint64_t> shape;  // empty for a 0-d array
  std::string data;             // the raw little-endian elements, C order

  uint64_t elements() const;
  NpyValue at(uint64_t index) const;  // element `index` in C order
};

// Parses the bytes of a .npy file; `name` is used in messages.
Expected<NpyArray> parse_npy(std::string_view bytes, const std::string& name);
// "cannot read 'x.npy': No such file or directory", or parse_npy's message.
Expected<NpyArray> read_npy(const std::string& path);

// The bytes of a version 1.0 .npy file holding `data` (raw elements) with the given dtype
// descr and shape.
std::string encode_npy(std::string_view descr, const std::vector<uint64_t>& shape,
                       std::string_view data);

// Writes 32-bit words of scalar type `type` (bools as one byte each) to `path`, whole or not at
// all (write_whole_file): "cannot write 'x.npy': No space left on device".
Status write_npy(const std::string& path, Scalar type, const std::vector<uint64_t>& shape,
                 const std::vector<uint32_t>& words);

// "(3,)", "(3, 4)", "()": a shape as numpy prints it.
std::string shape_string(const std::vector<uint64_t>& dims);

}  // namespace ab
