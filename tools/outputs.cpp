#include "tools/outputs.h"

#include <fmt/format.h>

#include "tools/values.h"

namespace ab::cli {
namespace {

// Walks `type` at word `base`, inside arrays of sizes `dims` with word strides `strides`.
void collect(const ValueType& t, uint32_t base, const std::string& key, std::vector<uint32_t> dims,
             std::vector<uint32_t> strides, OutputLayout& layout) {
  if (t.is_array()) {
    dims.push_back(t.count);
    strides.push_back(t.elem().words);
    collect(t.elem(), base, key, std::move(dims), std::move(strides), layout);
    return;
  }
  if (t.is_struct()) {
    for (const ValueField& field : t.fields) {
      const std::string field_key = key.empty() ? field.name : key + "." + field.name;
      collect(field.type, base + field.offset, field_key, dims, strides, layout);
    }
    return;
  }
  if (!t.is_scalar()) return;

  OutputColumn column;
  column.key = key.empty() ? "result" : key;
  column.shape.leaf = t.scalar;
  column.shape.dims = dims;
  // Enumerate every index tuple in C order.
  std::vector<uint32_t> index(dims.size(), 0);
  for (uint64_t n = 0; n < column.shape.elements(); ++n) {
    uint32_t offset = base;
    for (size_t d = 0; d < dims.size(); ++d)
      offset += index[d] * strides[d];
    column.word_offsets.push_back(offset);
    for (size_t d = dims.size(); d-- > 0;) {
      if (++index[d] < dims[d]) break;
      index[d] = 0;
    }
  }
  layout.columns.push_back(std::move(column));
}

nlohmann::ordered_json nested_json(const OutputColumn& column, const std::vector<uint32_t>& words,
                                   size_t dim, size_t& next) {
  if (dim == column.shape.dims.size()) return scalar_json(words[next++], column.shape.leaf);
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (uint32_t i = 0; i < column.shape.dims[dim]; ++i)
    list.push_back(nested_json(column, words, dim + 1, next));
  return list;
}

// Elements of one sub-array span `block` words of `words` starting at `start`.
std::string nested_text(const OutputColumn& column, const std::vector<uint32_t>& words, size_t dim,
                        uint64_t start, size_t max_elements) {
  if (dim == column.shape.dims.size()) return format_scalar(words[start], column.shape.leaf);
  uint64_t block = 1;
  for (size_t d = dim + 1; d < column.shape.dims.size(); ++d)
    block *= column.shape.dims[d];
  std::string text = "[";
  const uint32_t count = column.shape.dims[dim];
  for (uint32_t i = 0; i < count; ++i) {
    if (i > 0) text += ", ";
    if (i == max_elements) {
      text += "...";
      break;
    }
    text += nested_text(column, words, dim + 1, start + i * block, max_elements);
  }
  return text + "]";
}

}  // namespace

OutputLayout output_layout(const ValueType& result_type) {
  OutputLayout layout;
  if (result_type.is_void()) return layout;
  layout.lane_words = result_type.words;
  collect(result_type, 0, "", {}, {}, layout);
  return layout;
}

std::vector<uint32_t> column_words(const OutputLayout& layout, const OutputColumn& column,
                                   const std::vector<uint32_t>& outputs, uint32_t lane) {
  std::vector<uint32_t> words;
  words.reserve(column.word_offsets.size());
  const uint64_t base = uint64_t{lane} * layout.lane_words;
  for (uint32_t offset : column.word_offsets)
    words.push_back(outputs.at(base + offset));
  return words;
}

nlohmann::ordered_json column_json(const OutputColumn& column, const std::vector<uint32_t>& words) {
  size_t next = 0;
  return nested_json(column, words, 0, next);
}

std::string column_text(const OutputColumn& column, const std::vector<uint32_t>& words,
                        size_t max_elements) {
  return nested_text(column, words, 0, 0, max_elements);
}

}  // namespace ab::cli
