// Numbers loaded from a data file named on the command line (@file.npy or @file.csv), with
// conversion of each element to a declared scalar type. The format is chosen by the extension.
// A CSV table's shape is (rows, columns); an .npy array's shape is its own.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "autobatch/expected.h"
#include "autobatch/npy.h"
#include "autobatch/value_type.h"
#include "tools/csv.h"

namespace ab::cli {

class DataFile {
 public:
  static Expected<DataFile> load(const std::string& path);

  const std::string& path() const { return path_; }
  bool is_csv() const { return std::holds_alternative<CsvTable>(content_); }
  const std::vector<uint64_t>& shape() const { return shape_; }
  uint64_t elements() const;

  // Element `index` (C order) as a word of `type`; the error names the file and the position.
  Expected<uint32_t> element(uint64_t index, Scalar type) const;
  // Element `index` as the float64 it was written as: a CSV number or an .npy float64 (nothing
  // for narrower types, which a float holds exactly or as exactly as the file did).
  std::optional<double> float64(uint64_t index) const;

 private:
  std::string path_;
  std::vector<uint64_t> shape_;
  std::variant<NpyArray, CsvTable> content_;
};

}  // namespace ab::cli
