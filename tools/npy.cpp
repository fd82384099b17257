#include "tools/npy.h"

#include <cctype>
#include <cstring>
#include <fstream>
#include <limits>
#include <optional>
#include <sstream>

#include <fmt/format.h>

#include "tools/file_io.h"
#include "tools/shape.h"

namespace ab::cli {
namespace {

constexpr std::string_view kMagic = "\x93NUMPY";

template <class T>
T load_le(const char* bytes) {
  // The tool runs on little-endian hosts only (x86-64, arm64), so a copy is a decode.
  T value;
  std::memcpy(&value, bytes, sizeof(T));
  return value;
}

std::optional<NpyType> type_from_descr(std::string_view descr) {
  if (descr == "<f4") return NpyType::Float32;
  if (descr == "<f8") return NpyType::Float64;
  if (descr == "<i4") return NpyType::Int32;
  if (descr == "<i8") return NpyType::Int64;
  if (descr == "<u4") return NpyType::UInt32;
  if (descr == "<u8") return NpyType::UInt64;
  if (descr == "|b1") return NpyType::Bool;
  return std::nullopt;
}

// A reader for the Python dict literal in the .npy header, e.g.
// {'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }
class HeaderReader {
 public:
  explicit HeaderReader(std::string_view text) : text_(text) {}

  // The text just after `'key':`, or nullopt if the key is absent.
  std::optional<size_t> find_value(std::string_view key) const {
    for (char quote : {'\'', '"'}) {
      const std::string quoted = fmt::format("{0}{1}{0}", quote, key);
      size_t at = text_.find(quoted);
      if (at == std::string_view::npos) continue;
      at = skip_spaces(at + quoted.size());
      if (at >= text_.size() || text_[at] != ':') return std::nullopt;
      return skip_spaces(at + 1);
    }
    return std::nullopt;
  }

  std::optional<std::string> string_at(size_t at) const {
    if (at >= text_.size() || (text_[at] != '\'' && text_[at] != '"')) return std::nullopt;
    const size_t end = text_.find(text_[at], at + 1);
    if (end == std::string_view::npos) return std::nullopt;
    return std::string(text_.substr(at + 1, end - at - 1));
  }

  std::optional<bool> bool_at(size_t at) const {
    if (text_.substr(at, 4) == "True") return true;
    if (text_.substr(at, 5) == "False") return false;
    return std::nullopt;
  }

  std::optional<std::vector<uint64_t>> tuple_at(size_t at) const {
    if (at >= text_.size() || text_[at] != '(') return std::nullopt;
    std::vector<uint64_t> values;
    size_t pos = skip_spaces(at + 1);
    while (pos < text_.size() && text_[pos] != ')') {
      uint64_t value = 0;
      size_t digits = 0;
      while (pos < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos]))) {
        if (value > (std::numeric_limits<uint64_t>::max() - 9) / 10) return std::nullopt;
        value = value * 10 + static_cast<uint64_t>(text_[pos++] - '0');
        ++digits;
      }
      if (digits == 0) return std::nullopt;
      // numpy may write 3L in old files; accept and ignore the suffix.
      if (pos < text_.size() && text_[pos] == 'L') ++pos;
      values.push_back(value);
      pos = skip_spaces(pos);
      if (pos < text_.size() && text_[pos] == ',') pos = skip_spaces(pos + 1);
    }
    if (pos >= text_.size()) return std::nullopt;
    return values;
  }

 private:
  size_t skip_spaces(size_t at) const {
    while (at < text_.size() && std::isspace(static_cast<unsigned char>(text_[at])))
      ++at;
    return at;
  }
  std::string_view text_;
};

}  // namespace

const char* npy_descr(NpyType type) {
  switch (type) {
    case NpyType::Bool:
      return "|b1";
    case NpyType::Int32:
      return "<i4";
    case NpyType::Int64:
      return "<i8";
    case NpyType::UInt32:
      return "<u4";
    case NpyType::UInt64:
      return "<u8";
    case NpyType::Float32:
      return "<f4";
    case NpyType::Float64:
      return "<f8";
  }
  return "?";
}

uint32_t npy_item_size(NpyType type) {
  switch (type) {
    case NpyType::Bool:
      return 1;
    case NpyType::Int32:
    case NpyType::UInt32:
    case NpyType::Float32:
      return 4;
    case NpyType::Int64:
    case NpyType::UInt64:
    case NpyType::Float64:
      return 8;
  }
  return 1;
}

uint64_t NpyArray::elements() const {
  uint64_t count = 1;
  for (uint64_t d : shape)
    count *= d;
  return count;
}

Number NpyArray::at(uint64_t index) const {
  const char* p = data.data() + index * npy_item_size(type);
  switch (type) {
    case NpyType::Bool:
      return *p != 0;
    case NpyType::Int32:
      return static_cast<int64_t>(load_le<int32_t>(p));
    case NpyType::Int64:
      return load_le<int64_t>(p);
    case NpyType::UInt32:
      return static_cast<uint64_t>(load_le<uint32_t>(p));
    case NpyType::UInt64:
      return load_le<uint64_t>(p);
    case NpyType::Float32:
      return static_cast<double>(load_le<float>(p));
    case NpyType::Float64:
      return load_le<double>(p);
  }
  return false;
}

Expected<NpyArray> parse_npy(std::string_view bytes, const std::string& name) {
  auto bad = [&](const std::string& why) {
    return fail(fmt::format("'{}' is not a valid .npy file: {}", name, why));
  };
  if (bytes.size() < 10 || bytes.substr(0, kMagic.size()) != kMagic)
    return bad("it does not start with the numpy magic string");
  const uint8_t major = static_cast<uint8_t>(bytes[6]);
  size_t header_start = 0, header_len = 0;
  if (major == 1) {
    header_len = load_le<uint16_t>(bytes.data() + 8);
    header_start = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12) return bad("the header is truncated");
    header_len = load_le<uint32_t>(bytes.data() + 8);
    header_start = 12;
  } else {
    return bad(fmt::format("unsupported format version {}", major));
  }
  if (bytes.size() - header_start < header_len) return bad("the header is truncated");
  const HeaderReader header(bytes.substr(header_start, header_len));

  NpyArray array;
  auto descr_at = header.find_value("descr");
  auto descr = descr_at ? header.string_at(*descr_at) : std::nullopt;
  if (!descr) return bad("the header has no 'descr' string");
  auto type = type_from_descr(*descr);
  if (!type) {
    if (!descr->empty() && descr->front() == '>')
      return fail(
          fmt::format("'{}' holds big-endian data ('{}'); save it little-endian, e.g. "
                      "with arr.astype(arr.dtype.newbyteorder('<'))",
                      name, *descr));
    return fail(fmt::format("'{}' has dtype '{}'; supported dtypes are <f4 <f8 <i4 <i8 <u4 <u8 |b1",
                            name, *descr));
  }
  array.type = *type;

  auto order_at = header.find_value("fortran_order");
  auto fortran = order_at ? header.bool_at(*order_at) : std::nullopt;
  if (!fortran) return bad("the header has no 'fortran_order' flag");
  if (*fortran)
    return fail(
        fmt::format("'{}' is stored in Fortran order; save a C-ordered array "
                    "(numpy.ascontiguousarray)",
                    name));

  auto shape_at = header.find_value("shape");
  auto shape = shape_at ? header.tuple_at(*shape_at) : std::nullopt;
  if (!shape) return bad("the header has no valid 'shape' tuple");
  array.shape = *shape;

  // Guard the size computation: a hostile header must not overflow it.
  uint64_t expected_bytes = npy_item_size(array.type);
  for (uint64_t d : array.shape) {
    if (d != 0 && expected_bytes > std::numeric_limits<uint64_t>::max() / d)
      return bad("the shape is too large");
    expected_bytes *= d;
  }
  const std::string_view payload = bytes.substr(header_start + header_len);
  if (payload.size() < expected_bytes)
    return bad(fmt::format("the data is truncated: shape {} of '{}' needs {} bytes, found {}",
                           shape_string(array.shape), *descr, expected_bytes, payload.size()));
  array.data.assign(payload.substr(0, expected_bytes));
  return array;
}

Expected<NpyArray> read_npy(const std::string& path) {
  auto bytes = read_file(path);
  if (!bytes) return bytes.failure();
  return parse_npy(*bytes, path);
}

std::string encode_npy(std::string_view descr, const std::vector<uint64_t>& shape,
                       std::string_view data) {
  std::string dict = fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': {}, }}", descr,
                                 shape_string(shape));
  // Pad with spaces and end with a newline so that the data starts at a multiple of 64 bytes.
  const size_t preamble = kMagic.size() + 4;
  const size_t total = (preamble + dict.size() + 1 + 63) / 64 * 64;
  dict.append(total - preamble - dict.size() - 1, ' ');
  dict.push_back('\n');

  std::string out(kMagic);
  out.push_back('\x01');
  out.push_back('\x00');
  const uint16_t header_len = static_cast<uint16_t>(dict.size());
  out.push_back(static_cast<char>(header_len & 0xff));
  out.push_back(static_cast<char>(header_len >> 8));
  out += dict;
  out += data;
  return out;
}

Status write_npy(const std::string& path, Scalar type, const std::vector<uint64_t>& shape,
                 const std::vector<uint32_t>& words) {
  std::string data;
  const char* descr = "<i4";
  if (type == Scalar::Bool) {
    descr = "|b1";
    data.reserve(words.size());
    for (uint32_t w : words)
      data.push_back(w ? '\x01' : '\x00');
  } else {
    descr = type == Scalar::Float ? "<f4" : type == Scalar::UInt ? "<u4" : "<i4";
    data.assign(reinterpret_cast<const char*>(words.data()), words.size() * sizeof(uint32_t));
  }
  return write_file(path, encode_npy(descr, shape, data));
}

}  // namespace ab::cli
