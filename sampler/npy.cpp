#include "autobatch/npy.h"

#include <cctype>
#include <cstring>
#include <fstream>
#include <limits>
#include <optional>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include <fmt/ranges.h>

#include "autobatch/user_input.h"

namespace ab {
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

// What the header's dict says. numpy's own reader requires exactly these three keys.
struct NpyHeader {
  std::optional<std::string> descr;
  std::optional<bool> fortran_order;
  std::optional<std::vector<uint64_t>> shape;
  std::string structured_descr;  // set instead of descr for a list (structured) dtype
};

// A parser for the Python dict literal of the .npy header, e.g.
//   {'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }
// padded with spaces to a newline. Anything else in it is refused rather than guessed at: an
// unknown or repeated key, a NUL byte, text after the closing brace.
class HeaderParser {
 public:
  explicit HeaderParser(std::string_view text) : text_(text) {}

  // Fills `header`, or says what is wrong with the header.
  Status parse(NpyHeader& header) {
    if (text_.find('\0') != std::string_view::npos) return Error{"the header contains a NUL byte"};
    skip_spaces();
    if (!accept('{')) return Error{"the header is not a Python dict"};
    for (;;) {
      skip_spaces();
      if (accept('}')) break;
      auto key = string();
      if (!key) return Error{"expected a quoted key in the header"};
      skip_spaces();
      if (!accept(':'))
        return Error{fmt::format("expected ':' after '{}' in the header", excerpt(*key))};
      skip_spaces();
      const bool repeated = !seen_.insert(*key).second;
      if (repeated) return Error{fmt::format("the header has the key '{}' twice", excerpt(*key))};
      if (*key == "descr") {
        if (peek() == '[') {
          header.structured_descr = std::string(bracketed());
        } else {
          header.descr = string();
          if (!header.descr) return Error{"the header's 'descr' is not a string"};
        }
      } else if (*key == "fortran_order") {
        header.fortran_order = boolean();
        if (!header.fortran_order)
          return Error{"the header's 'fortran_order' is not True or False"};
      } else if (*key == "shape") {
        header.shape = tuple();
        if (!header.shape) return Error{"the header's 'shape' is not a tuple of whole numbers"};
      } else {
        return Error{
            fmt::format("the header has an unexpected key '{}' (expected 'descr', "
                        "'fortran_order' and 'shape')",
                        excerpt(*key))};
      }
      skip_spaces();
      if (accept(',')) continue;
      if (accept('}')) break;
      return Error{"expected ',' or '}' between the header's entries"};
    }
    skip_spaces();
    if (pos_ != text_.size()) return Error{"the header has text after its closing '}'"};
    for (const char* key : {"descr", "fortran_order", "shape"})
      if (!seen_.count(key)) return Error{fmt::format("the header has no '{}'", key)};
    return Ok{};
  }

 private:
  char peek() const { return pos_ < text_.size() ? text_[pos_] : '\0'; }
  bool accept(char c) {
    if (peek() != c || pos_ >= text_.size()) return false;
    ++pos_;
    return true;
  }
  void skip_spaces() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_])))
      ++pos_;
  }

  std::optional<std::string> string() {
    const char quote = peek();
    if (quote != '\'' && quote != '"') return std::nullopt;
    const size_t end = text_.find(quote, pos_ + 1);
    if (end == std::string_view::npos) return std::nullopt;
    std::string value(text_.substr(pos_ + 1, end - pos_ - 1));
    pos_ = end + 1;
    return value;
  }

  // A list such as [('x', '<f4'), ('y', '<i4')], skipped whole (brackets nest; quotes hold
  // brackets); returns its text for the message.
  std::string_view bracketed() {
    const size_t start = pos_;
    int depth = 0;
    char quote = 0;
    for (; pos_ < text_.size(); ++pos_) {
      const char c = text_[pos_];
      if (quote) {
        if (c == quote) quote = 0;
      } else if (c == '\'' || c == '"') {
        quote = c;
      } else if (c == '[' || c == '(') {
        ++depth;
      } else if ((c == ']' || c == ')') && --depth == 0) {
        ++pos_;
        break;
      }
    }
    return text_.substr(start, pos_ - start);
  }

  std::optional<bool> boolean() {
    if (text_.substr(pos_, 4) == "True") {
      pos_ += 4;
      return true;
    }
    if (text_.substr(pos_, 5) == "False") {
      pos_ += 5;
      return false;
    }
    return std::nullopt;
  }

  std::optional<std::vector<uint64_t>> tuple() {
    if (!accept('(')) return std::nullopt;
    std::vector<uint64_t> values;
    for (;;) {
      skip_spaces();
      if (accept(')')) return values;
      uint64_t value = 0;
      size_t digits = 0;
      while (std::isdigit(static_cast<unsigned char>(peek()))) {
        if (value > (std::numeric_limits<uint64_t>::max() - 9) / 10) return std::nullopt;
        value = value * 10 + static_cast<uint64_t>(text_[pos_++] - '0');
        ++digits;
      }
      if (digits == 0) return std::nullopt;
      accept('L');  // numpy may write 3L in old files; accept and ignore the suffix.
      values.push_back(value);
      skip_spaces();
      if (!accept(',') && peek() != ')') return std::nullopt;
    }
  }

  std::string_view text_;
  size_t pos_ = 0;
  std::set<std::string> seen_;
};

}  // namespace

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

NpyValue NpyArray::at(uint64_t index) const {
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
    return Error{fmt::format("'{}' is not a valid .npy file: {}", name, why)};
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
  NpyHeader header;
  if (Status parsed = HeaderParser(bytes.substr(header_start, header_len)).parse(header); !parsed)
    return bad(parsed.error());

  NpyArray array;
  if (!header.structured_descr.empty())
    return Error{
        fmt::format("'{}' has a structured dtype ({}); supported dtypes are <f4 <f8 <i4 "
                    "<i8 <u4 <u8 |b1: save each field as its own array",
                    name, excerpt(header.structured_descr))};
  const std::string& descr = *header.descr;
  auto type = type_from_descr(descr);
  if (!type) {
    if (!descr.empty() && descr.front() == '>')
      return Error{
          fmt::format("'{}' holds big-endian data ('{}'); save it little-endian, e.g. "
                      "with arr.astype(arr.dtype.newbyteorder('<'))",
                      name, excerpt(descr))};
    return Error{
        fmt::format("'{}' has dtype '{}'; supported dtypes are <f4 <f8 <i4 <i8 <u4 <u8 |b1", name,
                    excerpt(descr))};
  }
  array.type = *type;

  if (*header.fortran_order)
    return Error{
        fmt::format("'{}' is stored in Fortran order; save a C-ordered array "
                    "(numpy.ascontiguousarray)",
                    name)};

  const std::vector<uint64_t>& shape = *header.shape;
  array.shape = shape;

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
                           shape_string(array.shape), descr, expected_bytes, payload.size()));
  // Extra bytes mean the header does not describe the file: refuse rather than guess which
  // part is the data.
  if (payload.size() > expected_bytes)
    return bad(fmt::format("{} bytes follow the data (shape {} of '{}' is {} bytes)",
                           payload.size() - expected_bytes, shape_string(array.shape), descr,
                           expected_bytes));
  array.data.assign(payload.substr(0, expected_bytes));
  return array;
}

Expected<NpyArray> read_npy(const std::string& path) {
  FileContents file = read_regular_file(path);
  if (!file.ok()) return Error{fmt::format("cannot read '{}': {}", path, file.error)};
  return parse_npy(file.bytes, path);
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
  const std::string error = write_whole_file(path, {encode_npy(descr, shape, data)});
  if (!error.empty()) return Error{fmt::format("cannot write '{}': {}", path, error)};
  return Ok{};
}

std::string shape_string(const std::vector<uint64_t>& dims) {
  if (dims.size() == 1) return fmt::format("({},)", dims[0]);
  return fmt::format("({})", fmt::join(dims, ", "));
}

}  // namespace ab
