// How a run's per-lane result words are presented: as named output columns.
//
// A scalar or array result is one column, "result". A struct result gives one column per leaf
// field, named by its path ("pos", "outer.inner"); a field inside an array of structs becomes a
// column with the array's dimensions ("items.weight" of shape (3,) for items: Item[3]).
// Each column knows where its elements sit among a lane's result words, in C order.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "autobatch/value_type.h"
#include "tools/shape.h"

namespace ab::cli {

struct OutputColumn {
  std::string key;
  ValueShape shape;                    // leaf scalar and dimensions of one lane's value
  std::vector<uint32_t> word_offsets;  // one per element, within a lane's result words
};

struct OutputLayout {
  uint32_t lane_words = 0;  // words of the result type
  std::vector<OutputColumn> columns;
};

// The columns of a result of type `result_type` (none for void).
OutputLayout output_layout(const ValueType& result_type);

// The words of `column` for `lane`, gathered from lane-major `outputs`.
std::vector<uint32_t> column_words(const OutputLayout& layout, const OutputColumn& column,
                                   const std::vector<uint32_t>& outputs, uint32_t lane);

// One lane's value of a column as JSON (a scalar, or nested lists for arrays).
nlohmann::ordered_json column_json(const OutputColumn& column, const std::vector<uint32_t>& words);

// One lane's value as text: "3", "true", "[1, 2]", "[[1, 2], [3, 4]]"; arrays longer than
// `max_elements` per dimension are cut short with "...".
std::string column_text(const OutputColumn& column, const std::vector<uint32_t>& words,
                        size_t max_elements = 8);

}  // namespace ab::cli
