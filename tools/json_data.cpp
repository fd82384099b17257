#include "tools/json_data.h"

#include <cmath>
#include <limits>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "tools/file_io.h"
#include "tools/values.h"

namespace ab::cli {
namespace {

// nlohmann reports a parse error's byte offset; a user wants its line and column.
std::string place_of(const std::string& text, size_t byte) {
  int line = 1, col = 1;
  for (size_t i = 0; i + 1 < byte && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line;
      col = 1;
    } else {
      ++col;
    }
  }
  return fmt::format("{}:{}", line, col);
}

// The shape of nested lists, following each level's first element; "ragged" lists show as
// their first row's shape and fail later at the element that breaks it.
std::vector<uint64_t> json_shape(const nlohmann::json& value) {
  std::vector<uint64_t> dims;
  const nlohmann::json* level = &value;
  while (level->is_array()) {
    dims.push_back(level->size());
    if (level->empty()) break;
    level = &(*level)[0];
  }
  return dims;
}

std::string shape_text(const std::vector<uint64_t>& dims) {
  if (dims.empty()) return "a single number";
  return fmt::format("nested lists of shape ({})", fmt::join(dims, ", "));
}

std::string uniform_type(const ValueShape& shape) {
  static const char* names[] = {"bool", "int", "uint", "float"};
  std::string text = names[static_cast<int>(shape.leaf)];
  for (uint32_t d : shape.dims)
    text += fmt::format("[{}]", d);
  return text;
}

Expected<Number> json_number(const nlohmann::json& value) {
  if (value.is_boolean()) return Number{value.get<bool>()};
  if (value.is_number_unsigned()) return Number{value.get<uint64_t>()};
  if (value.is_number_integer()) return Number{value.get<int64_t>()};
  if (value.is_number_float()) return Number{value.get<double>()};
  return Error{fmt::format("is {}, not a number", value.dump())};
}

// The data's whole-number scalars equal to one of `lengths`: the sizes a model's constants
// should have matched.
std::vector<std::string> sizes_matching(const nlohmann::json& doc,
                                        const std::vector<uint64_t>& lengths) {
  std::vector<std::string> found;
  for (const auto& [key, value] : doc.items())
    if (value.is_number_integer())
      for (uint64_t length : lengths)
        if (value.get<int64_t>() == static_cast<int64_t>(length)) {
          found.push_back(fmt::format("{} = {}", key, length));
          break;
        }
  return found;
}

}  // namespace

Expected<JsonData> JsonData::load(const std::string& path) {
  auto text = read_file(path);
  if (!text) return text.failure();
  JsonData data;
  data.path_ = path;
  try {
    data.doc_ = nlohmann::json::parse(*text);
  } catch (const nlohmann::json::parse_error& e) {
    // what() is "[json.exception.parse_error.101] parse error at line L, column C: why".
    std::string why = e.what();
    if (const size_t colon = why.find(": "); colon != std::string::npos)
      why = why.substr(colon + 2);
    return Error{fmt::format("{}:{}: not valid JSON: {}", path, place_of(*text, e.byte), why)};
  }
  if (!data.doc_.is_object())
    return Error{
        fmt::format("'{}': expected a JSON object of data by name, as CmdStan's "
                    "(\"{{\\\"N\\\": 3, \\\"y\\\": [1, 2, 3]}}\"), got {}",
                    path, data.doc_.type_name())};
  return data;
}

std::map<std::string, double> JsonData::numbers() const {
  std::map<std::string, double> out;
  for (const auto& [key, value] : doc_.items())
    if (value.is_number()) out.emplace(key, value.get<double>());
  return out;
}

Expected<std::vector<uint32_t>> JsonData::words(const std::string& key, const ValueShape& shape,
                                                std::vector<double>* float64_of) const {
  const nlohmann::json& value = doc_.at(key);
  const std::vector<uint64_t> want(shape.dims.begin(), shape.dims.end());
  const std::vector<uint64_t> got = json_shape(value);
  if (got != want) {
    std::string message = fmt::format("uniform '{}' is {}: '{}' holds {} for '{}'", key,
                                      uniform_type(shape), path_, shape_text(got), key);
    std::vector<uint64_t> wrong;
    for (size_t d = 0; d < got.size(); ++d)
      if (d >= want.size() || got[d] != want[d]) wrong.push_back(got[d]);
    if (auto sizes = sizes_matching(doc_, wrong); !sizes.empty())
      message += fmt::format(
          " (the data's {}: the model's array sizes are its constants, so read them from the "
          "data, `const N: int = data;`, or declare them as the data has them)",
          fmt::join(sizes, ", "));
    return Error{message};
  }
  std::vector<uint32_t> out;
  out.reserve(shape.elements());
  std::vector<uint64_t> index(want.size(), 0);
  // Walk the nested lists in C order; each level's length was checked only along the first
  // element, so check every list again on the way.
  auto visit = [&](auto& self, const nlohmann::json& v, size_t depth) -> Status {
    if (depth < want.size()) {
      if (!v.is_array() || v.size() != want[depth])
        return Error{
            fmt::format("'{}': '{}{}' is {} where the uniform {} needs a list of {}", path_, key,
                        fmt::format("[{}]", fmt::join(index.begin(), index.begin() + depth, "][")),
                        v.is_array() ? fmt::format("a list of {}", v.size()) : v.dump(),
                        uniform_type(shape), want[depth])};
      for (uint64_t i = 0; i < want[depth]; ++i) {
        index[depth] = i;
        if (Status s = self(self, v[i], depth + 1); !s) return s;
      }
      return Ok{};
    }
    const std::string where =
        want.empty() ? key : fmt::format("{}[{}]", key, fmt::join(index, "]["));
    auto number = json_number(v);
    if (!number) return Error{fmt::format("'{}': '{}' {}", path_, where, number.error())};
    auto word = encode_number(*number, shape.leaf);
    if (!word) return Error{fmt::format("'{}': '{}': {}", path_, where, word.error())};
    out.push_back(*word);
    if (float64_of) {
      const double* d = std::get_if<double>(&*number);
      float64_of->push_back(d ? *d : std::numeric_limits<double>::quiet_NaN());
    }
    return Ok{};
  };
  if (Status s = visit(visit, value, 0); !s) return s.failure();
  return out;
}

}  // namespace ab::cli
