// Fuzz target: the text of a .csv file -> parse_csv, then what DataFile does with a table that
// parses: each cell through parse_scalar for every scalar type of the language.
//
// Contract checked: no crash, hang or unbounded allocation on any text; a table that parses is
// rectangular with no empty cell and increasing line numbers; a cell that parses prints
// (format_scalar) as text that parses back to the same value; a float cell that the C library's
// strtod reads completely gets strtod's value rounded to float, or an error where that value is
// beyond float's range (values.h: "rejects finite values beyond float's range").
#include <cerrno>
#include <cfloat>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>

#include "fuzz/fuzz_support.h"
#include "tools/csv.h"
#include "tools/values.h"

namespace {

using ab::fuzz::contract_failed;

// Converting every cell of a long file is not more coverage, only time.
constexpr size_t kMaxCells = 1024;

bool is_nan_word(uint32_t word, ab::Scalar type) {
  float f;
  std::memcpy(&f, &word, sizeof f);
  return type == ab::Scalar::Float && std::isnan(f);
}

// strtod is the reference for the decimal spellings it accepts whole (parse_scalar's own rules
// are stricter, so only cells that parse_scalar accepts are compared).
void check_float_against_strtod(const std::string& cell, uint32_t word) {
  char* end = nullptr;
  errno = 0;
  const double reference = std::strtod(cell.c_str(), &end);
  if (end != cell.c_str() + cell.size() || std::isnan(reference)) return;
  const bool overflow = (errno == ERANGE && std::isinf(reference)) ||
                        (std::isfinite(reference) && std::fabs(reference) > FLT_MAX);
  if (overflow)
    contract_failed(fmt::format("'{}' is beyond float's range but parses as a float", cell));
  const float expected = static_cast<float>(reference);
  uint32_t expected_word;
  std::memcpy(&expected_word, &expected, sizeof expected_word);
  if (word != expected_word)
    contract_failed(fmt::format("'{}' parses to float bits {:#x}; strtod gives {} ({:#x})", cell,
                                word, expected, expected_word));
}

void check_cell(const std::string& cell) {
  using namespace ab::cli;
  for (ab::Scalar type : {ab::Scalar::Bool, ab::Scalar::Int, ab::Scalar::UInt, ab::Scalar::Float}) {
    const auto word = parse_scalar(cell, type);
    if (!word) continue;
    if (type == ab::Scalar::Float) check_float_against_strtod(cell, *word);
    (void)scalar_json(*word, type);
    const std::string printed = format_scalar(*word, type);
    const auto again = parse_scalar(printed, type);
    if (!again)
      contract_failed(fmt::format("'{}' parses but its printed form '{}' does not: {}", cell,
                                  printed, again.error()));
    if (*again != *word && !is_nan_word(*word, type))
      contract_failed(fmt::format("'{}' parses to {:#x} but its printed form '{}' to {:#x}", cell,
                                  *word, printed, *again));
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const auto table = ab::cli::parse_csv(text, "fuzz.csv");
  if (!table) return 0;
  if (table->line_numbers.size() != table->rows.size())
    contract_failed("one line number per row is missing");
  size_t cells = 0;
  for (size_t r = 0; r < table->rows.size(); ++r) {
    if (table->rows[r].size() != table->columns()) contract_failed("the table is ragged");
    if (r > 0 && table->line_numbers[r] <= table->line_numbers[r - 1])
      contract_failed("line numbers do not increase");
    for (const std::string& cell : table->rows[r]) {
      if (cell.empty()) contract_failed("an empty cell parsed");
      if (cells++ < kMaxCells) check_cell(cell);
    }
  }
  return 0;
}
