#include "tools/csv.h"

#include <cctype>

#include <fmt/format.h>

#include "tools/file_io.h"

namespace ab::cli {
namespace {

std::string_view trim_cell(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front())))
    text.remove_prefix(1);
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back())))
    text.remove_suffix(1);
  return text;
}

}  // namespace

Expected<CsvTable> parse_csv(std::string_view text, const std::string& name) {
  CsvTable table;
  uint32_t line_number = 0;
  while (!text.empty()) {
    const size_t newline = text.find('\n');
    std::string_view line = text.substr(0, newline);
    text.remove_prefix(newline == std::string_view::npos ? text.size() : newline + 1);
    ++line_number;

    line = trim_cell(line);  // also drops the '\r' of Windows line ends
    if (line.empty() || line.front() == '#') continue;
    std::vector<std::string> cells;
    size_t start = 0;
    while (true) {
      const size_t comma = line.find(',', start);
      cells.emplace_back(trim_cell(line.substr(start, comma - start)));
      if (comma == std::string_view::npos) break;
      start = comma + 1;
    }
    for (size_t c = 0; c < cells.size(); ++c)
      if (cells[c].empty())
        return Error{fmt::format("'{}' line {}: cell {} is empty", name, line_number, c + 1)};
    if (!table.rows.empty() && cells.size() != table.columns())
      return Error{fmt::format("'{}' line {} has {} values but line {} has {}", name, line_number,
                               cells.size(), table.line_numbers[0], table.columns())};
    table.rows.push_back(std::move(cells));
    table.line_numbers.push_back(line_number);
  }
  return table;
}

Expected<CsvTable> read_csv(const std::string& path) {
  auto text = read_file(path);
  if (!text) return text.failure();
  return parse_csv(*text, path);
}

}  // namespace ab::cli
