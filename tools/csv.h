// Reading numeric CSV files: one row per line, cells separated by commas, spaces around cells
// ignored. Blank lines and lines starting with '#' are skipped; there is no header row and no
// quoting (cells are numbers or true/false). Every row must have the same number of cells.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "autobatch/expected.h"

namespace ab::cli {

struct CsvTable {
  std::vector<std::vector<std::string>> rows;
  std::vector<uint32_t> line_numbers;  // 1-based source line of each row, for messages

  size_t columns() const { return rows.empty() ? 0 : rows[0].size(); }
};

// Parses CSV text; `name` is used in messages.
Expected<CsvTable> parse_csv(std::string_view text, const std::string& name);
Expected<CsvTable> read_csv(const std::string& path);

}  // namespace ab::cli
