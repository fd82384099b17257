#include "tools/data_file.h"

#include <cstdlib>

#include <fmt/format.h>

#include "tools/values.h"

namespace ab::cli {
namespace {

bool ends_with(const std::string& text, std::string_view suffix) {
  return text.size() >= suffix.size() &&
         text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

Expected<DataFile> DataFile::load(const std::string& path) {
  DataFile file;
  file.path_ = path;
  if (ends_with(path, ".npy")) {
    auto array = read_npy(path);
    if (!array) return array.failure();
    file.shape_ = array->shape;
    file.content_ = std::move(*array);
  } else if (ends_with(path, ".csv")) {
    auto table = read_csv(path);
    if (!table) return table.failure();
    file.shape_ = {table->rows.size(), table->columns()};
    file.content_ = std::move(*table);
  } else {
    return Error{fmt::format("cannot tell the format of '{}': name a .npy or .csv file", path)};
  }
  return file;
}

uint64_t DataFile::elements() const {
  uint64_t count = 1;
  for (uint64_t d : shape_)
    count *= d;
  return count;
}

std::optional<double> DataFile::float64(uint64_t index) const {
  if (const auto* table = std::get_if<CsvTable>(&content_)) {
    const std::string& text = table->rows[index / table->columns()][index % table->columns()];
    char* end = nullptr;
    const double v = std::strtod(text.c_str(), &end);
    if (end == text.c_str()) return std::nullopt;
    return v;
  }
  const auto& array = std::get<NpyArray>(content_);
  if (array.type != NpyType::Float64) return std::nullopt;
  return std::get<double>(array.at(index));
}

Expected<uint32_t> DataFile::element(uint64_t index, Scalar type) const {
  if (const auto* table = std::get_if<CsvTable>(&content_)) {
    const uint64_t columns = table->columns();
    const uint64_t row = index / columns, column = index % columns;
    auto word = parse_scalar(table->rows[row][column], type);
    if (!word)
      return Error{fmt::format("'{}' line {}, value {}: {}", path_, table->line_numbers[row],
                               column + 1, word.error())};
    return word;
  }
  const auto& array = std::get<NpyArray>(content_);
  auto word = encode_number(array.at(index), type);
  if (!word) {
    // Name the element by its numpy index, which is what the user can look up.
    std::vector<uint64_t> position(shape_.size());
    uint64_t rest = index;
    for (size_t d = shape_.size(); d-- > 0;) {
      position[d] = rest % shape_[d];
      rest /= shape_[d];
    }
    return Error{
        fmt::format("'{}' element [{}]: {}", path_, fmt::join(position, ", "), word.error())};
  }
  return word;
}

}  // namespace ab::cli
