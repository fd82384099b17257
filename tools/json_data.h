// A JSON data file (`--data FILE.json`): CmdStan's and posteriordb's format, one object whose
// keys name the program's uniforms. A scalar uniform's value is a number; an array uniform's is
// nested lists in its shape (`float[A][B]`, a matrix, is A lists of B numbers). Numbers convert
// to the uniform's scalar type with the checks of tools/values.h (1.0 is a valid int, 1.5 is not).
// Keys that name no uniform are left alone: Stan's data also hold the sizes (`"N": 10`) that a
// model here declares as constants read from the data (`const N: int = data;`: numbers()), and a
// shape that disagrees names them.
#pragma once

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "autobatch/expected.h"
#include "tools/shape.h"

namespace ab::cli {

class JsonData {
 public:
  // Errors: the file unreadable; not JSON ("FILE:LINE:COL: not valid JSON: ..."); not an object.
  static Expected<JsonData> load(const std::string& path);

  const std::string& path() const { return path_; }
  bool has(const std::string& key) const { return doc_.contains(key); }
  // The entries whose value is one number (Stan's sizes, `"N": 10`): the values of a program's
  // `const N: int = data;` (CompileOptions::data_constants).
  std::map<std::string, double> numbers() const;

  // `key`'s value as the words of a value of `shape` (C order). A wrong shape names both shapes
  // and the data's sizes that match the wrong length; a wrong element names it (`y[2][0]`).
  // `float64_of`, when given, receives each element as the float64 the file holds (for the
  // rounding note), NaN for elements that are not floats.
  Expected<std::vector<uint32_t>> words(const std::string& key, const ValueShape& shape,
                                        std::vector<double>* float64_of = nullptr) const;

 private:
  std::string path_;
  nlohmann::json doc_;
};

}  // namespace ab::cli
