// Per-lane inputs from the command line: parsing `--input NAME=SPEC` and building the input
// columns of a Batch for the entry function's parameters.
//
// SPEC forms (values are parsed as the parameter's type, see tools/values.h):
//   5            the same value in every lane (for an array parameter: in every element too)
//   1,2,3        one value per lane
//   range:A:B    A, A+1, ..., B-1, one per lane
//   randint:A:B  uniform whole numbers in [A, B), one per lane; needs --batch. Drawn from one
//                std::mt19937_64 seeded with --seed: parameters in declaration order, lanes in
//                order; each value is A + x mod (B - A) for the next output x, where outputs
//                x >= floor(2^64 / (B - A)) * (B - A) are skipped so every value is equally likely.
//   @file.npy    one row per lane: shape (lanes,) for a scalar, (lanes, N) for T[N], ...
//   @file.csv    one row per lane: 1 value for a scalar, N for T[N], A*B (row-major) for T[A][B]
// The batch size is the length of the per-lane inputs (all must agree) or --batch; with neither
// it is 1. The values a range: or randint: spec can give must all fit the parameter's type: this
// is checked against the spec's bounds before any value is made, so the outcome never depends on
// the seed.
#pragma once

#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "autobatch/expected.h"
#include "autobatch/module.h"

namespace ab::cli {

struct ConstantSpec {
  std::string text;
};
struct ListSpec {
  std::vector<std::string> items;
};
struct RangeSpec {
  int64_t begin = 0, end = 0;
  std::string text;  // as given, for messages
};
struct RandIntSpec {
  int64_t low = 0, high = 0;
  std::string text;  // as given, for messages
};
struct FileSpec {
  std::string path;
};
using InputSpec = std::variant<ConstantSpec, ListSpec, RangeSpec, RandIntSpec, FileSpec>;

Expected<InputSpec> parse_input_spec(std::string_view text);

// "NAME=VALUE" split at the first '='; both parts must be non-empty.
struct Binding {
  std::string name;
  std::string value;
};
Expected<Binding> parse_binding(std::string_view text, std::string_view what);

struct InputOptions {
  std::vector<std::string> bindings;  // the --input arguments, "NAME=SPEC"
  std::optional<uint32_t> batch;      // --batch
  uint64_t seed = 0;                  // --seed, for randint
};

struct BatchInputs {
  uint32_t lanes = 0;
  std::vector<std::vector<uint32_t>> columns;  // one per parameter, as Batch::inputs
};

// Builds the per-lane inputs for the parameters `params` of function `function` (a module's
// entry() and inputs()).
Expected<BatchInputs> build_inputs(const std::string& function,
                                   const std::vector<ValueInfo>& params,
                                   const InputOptions& options);

// The randint:A:B generator documented above; exposed so tests can check the documented rule.
class RandIntSource {
 public:
  explicit RandIntSource(uint64_t seed) : engine_(seed) {}
  int64_t next(int64_t low, int64_t high);  // requires low < high

 private:
  std::mt19937_64 engine_;
};

}  // namespace ab::cli
