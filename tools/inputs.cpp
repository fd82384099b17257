#include "tools/inputs.h"

#include <algorithm>
#include <limits>

#include <fmt/format.h>

#include "autobatch/user_input.h"
#include "tools/data_file.h"
#include "tools/shape.h"
#include "tools/values.h"

namespace ab::cli {
namespace {

bool starts_with(std::string_view text, std::string_view prefix) {
  return text.substr(0, prefix.size()) == prefix;
}

// Parses the "A:B" of range:A:B and randint:A:B.
Expected<std::pair<int64_t, int64_t>> parse_bounds(std::string_view spec, std::string_view rest) {
  const size_t colon = rest.find(':');
  if (colon == std::string_view::npos)
    return Error{fmt::format("'{}' should look like {}A:B", excerpt(spec),
                             spec.substr(0, spec.size() - rest.size()))};
  auto low = parse_int64(rest.substr(0, colon));
  if (!low) return Error{fmt::format("in '{}': {}", excerpt(spec), low.error())};
  auto high = parse_int64(rest.substr(colon + 1));
  if (!high) return Error{fmt::format("in '{}': {}", excerpt(spec), high.error())};
  if (*low >= *high)
    return Error{fmt::format("'{}' is empty: A must be less than B", excerpt(spec))};
  return std::pair{*low, *high};
}

// How one parameter's values are produced, once the spec has been checked against its type.
struct ResolvedInput {
  std::string name;
  ValueShape shape;
  InputSpec spec;
  std::optional<DataFile> file;
  std::optional<uint64_t> lanes;  // set for inputs that fix the batch size
  std::string what;               // "values" or "rows", for the size-mismatch message
};

// The whole numbers a scalar type holds; none for float, which takes any whole number (rounded).
std::optional<std::pair<int64_t, int64_t>> whole_range(Scalar type) {
  switch (type) {
    case Scalar::Bool:
      return std::pair<int64_t, int64_t>{0, 1};
    case Scalar::Int:
      return std::pair<int64_t, int64_t>{INT32_MIN, INT32_MAX};
    case Scalar::UInt:
      return std::pair<int64_t, int64_t>{0, UINT32_MAX};
    case Scalar::Float:
      return std::nullopt;
  }
  return std::nullopt;
}

// A generator's values [low, high] must all fit `param`'s type, whichever of them the seed picks.
Status check_generated_values(const ValueInfo& param, Scalar leaf, const std::string& type_name,
                              const std::string& spec, int64_t low, int64_t high) {
  const auto fits = whole_range(leaf);
  if (!fits || (low >= fits->first && high <= fits->second)) return Ok{};
  return Error{fmt::format("input '{}': '{}' gives values from {} to {}, but '{}' is {} ({} to {})",
                           param.name, excerpt(spec), low, high, param.name, type_name, fits->first,
                           fits->second)};
}

std::string list_names(const std::vector<std::string>& names) {
  return names.empty() ? "none" : fmt::format("{}", fmt::join(names, ", "));
}

Expected<ResolvedInput> resolve(const ValueInfo& param, InputSpec spec) {
  const std::string& type_name = param.type;
  auto shape = value_shape(param.value_type);
  if (!shape)
    return Error{fmt::format("parameter '{}' of struct type cannot be given on the command line",
                             param.name)};
  ResolvedInput input{param.name, *shape, std::move(spec), std::nullopt, std::nullopt, "values"};
  const bool is_array = !shape->dims.empty();

  if (const auto* list = std::get_if<ListSpec>(&input.spec)) {
    if (is_array)
      return Error{
          fmt::format("input '{}' is {}: give one row per lane with @file.csv or "
                      "@file.npy, or one value for every element",
                      param.name, type_name)};
    input.lanes = list->items.size();
  } else if (const auto* range = std::get_if<RangeSpec>(&input.spec)) {
    if (is_array)
      return Error{
          fmt::format("input '{}' is {}: range: gives one value per lane, so it needs a "
                      "scalar parameter",
                      param.name, type_name)};
    if (auto fits = check_generated_values(param, shape->leaf, type_name, range->text, range->begin,
                                           range->end - 1);
        !fits)
      return fits.failure();
    input.lanes = static_cast<uint64_t>(range->end) - static_cast<uint64_t>(range->begin);
  } else if (const auto* rand = std::get_if<RandIntSpec>(&input.spec)) {
    if (is_array)
      return Error{
          fmt::format("input '{}' is {}: randint: gives one value per lane, so it needs "
                      "a scalar parameter",
                      param.name, type_name)};
    if (auto fits = check_generated_values(param, shape->leaf, type_name, rand->text, rand->low,
                                           rand->high - 1);
        !fits)
      return fits.failure();
  } else if (const auto* file_spec = std::get_if<FileSpec>(&input.spec)) {
    auto file = DataFile::load(file_spec->path);
    if (!file) return file.failure();
    const auto& got = file->shape();
    input.what = "rows";
    if (file->is_csv()) {
      if (got[0] > 0 && got[1] != shape->elements())
        return Error{fmt::format("input '{}' is {}: expected {} value{} per row in '{}', got {}",
                                 param.name, type_name, shape->elements(),
                                 shape->elements() == 1 ? "" : "s", file->path(), got[1])};
    } else {
      std::vector<uint64_t> want{0};
      want.insert(want.end(), shape->dims.begin(), shape->dims.end());
      const bool fits =
          got.size() == want.size() && std::equal(got.begin() + 1, got.end(), want.begin() + 1);
      if (!fits) {
        std::string pattern = shape_string(want);
        pattern.replace(1, 1, "lanes");
        return Error{fmt::format("input '{}' is {}: expected .npy shape {}, got {}", param.name,
                                 type_name, pattern, shape_string(got))};
      }
    }
    if (got[0] == 0)
      return Error{fmt::format("input '{}': '{}' holds no rows", param.name, file->path())};
    input.lanes = got[0];
    input.file = std::move(*file);
  }
  return input;
}

// Fills `column` (lanes * elements words) with the input's values.
Status fill(const ResolvedInput& input, uint32_t lanes, RandIntSource& random,
            std::vector<uint32_t>& column) {
  const uint64_t per_lane = input.shape.elements();
  const Scalar leaf = input.shape.leaf;
  auto in_input = [&](const std::string& message) {
    return Error{fmt::format("input '{}': {}", input.name, message)};
  };
  column.resize(uint64_t{lanes} * per_lane);
  if (const auto* constant = std::get_if<ConstantSpec>(&input.spec)) {
    auto word = parse_scalar(constant->text, leaf);
    if (!word) return in_input(word.error());
    std::fill(column.begin(), column.end(), *word);
  } else if (const auto* list = std::get_if<ListSpec>(&input.spec)) {
    for (uint32_t lane = 0; lane < lanes; ++lane) {
      auto word = parse_scalar(list->items[lane], leaf);
      if (!word) return in_input(fmt::format("value {}: {}", lane + 1, word.error()));
      column[lane] = *word;
    }
  } else if (const auto* range = std::get_if<RangeSpec>(&input.spec)) {
    for (uint32_t lane = 0; lane < lanes; ++lane) {
      auto word = encode_number(Number{range->begin + static_cast<int64_t>(lane)}, leaf);
      if (!word) return in_input(word.error());
      column[lane] = *word;
    }
  } else if (const auto* rand = std::get_if<RandIntSpec>(&input.spec)) {
    for (uint32_t lane = 0; lane < lanes; ++lane) {
      auto word = encode_number(Number{random.next(rand->low, rand->high)}, leaf);
      if (!word) return in_input(word.error());
      column[lane] = *word;
    }
  } else {
    for (uint64_t i = 0; i < column.size(); ++i) {
      auto word = input.file->element(i, leaf);
      if (!word) return in_input(word.error());
      column[i] = *word;
    }
  }
  return Ok{};
}

}  // namespace

int64_t RandIntSource::next(int64_t low, int64_t high) {
  constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();
  const uint64_t span = static_cast<uint64_t>(high) - static_cast<uint64_t>(low);
  // 2^64 mod span outputs at the top would make the low values likelier: skip them.
  const uint64_t leftover = (kMax % span + 1) % span;
  uint64_t x = engine_();
  if (leftover != 0) {
    const uint64_t threshold = kMax - leftover + 1;  // floor(2^64 / span) * span
    while (x >= threshold)
      x = engine_();
  }
  return static_cast<int64_t>(static_cast<uint64_t>(low) + x % span);
}

Expected<InputSpec> parse_input_spec(std::string_view text) {
  if (text.empty()) return Error{"empty input spec"};
  if (starts_with(text, "range:")) {
    auto bounds = parse_bounds(text, text.substr(6));
    if (!bounds) return bounds.failure();
    return InputSpec{RangeSpec{bounds->first, bounds->second, std::string(text)}};
  }
  if (starts_with(text, "randint:")) {
    auto bounds = parse_bounds(text, text.substr(8));
    if (!bounds) return bounds.failure();
    return InputSpec{RandIntSpec{bounds->first, bounds->second, std::string(text)}};
  }
  if (text.front() == '@') {
    if (text.size() == 1) return Error{"'@' must be followed by a file name"};
    return InputSpec{FileSpec{std::string(text.substr(1))}};
  }
  if (text.find(',') == std::string_view::npos) return InputSpec{ConstantSpec{std::string(text)}};
  ListSpec list;
  size_t start = 0;
  while (true) {
    const size_t comma = text.find(',', start);
    list.items.emplace_back(text.substr(start, comma - start));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return InputSpec{std::move(list)};
}

Expected<Binding> parse_binding(std::string_view text, std::string_view what) {
  const size_t eq = text.find('=');
  if (eq == std::string_view::npos || eq == 0 || eq + 1 == text.size())
    return Error{fmt::format("expected {}, got '{}'", what, excerpt(text))};
  return Binding{std::string(text.substr(0, eq)), std::string(text.substr(eq + 1))};
}

Expected<BatchInputs> build_inputs(const std::string& function,
                                   const std::vector<ValueInfo>& params,
                                   const InputOptions& options) {
  std::vector<std::string> param_names;
  for (const ValueInfo& p : params)
    param_names.push_back(p.name);

  // Match every --input to a parameter, in parameter order.
  std::vector<std::optional<InputSpec>> specs(params.size());
  for (const std::string& arg : options.bindings) {
    auto binding = parse_binding(arg, "--input NAME=SPEC");
    if (!binding) return binding.failure();
    const auto it = std::find(param_names.begin(), param_names.end(), binding->name);
    if (it == param_names.end())
      return Error{fmt::format("unknown input '{}': {} takes {}", excerpt(binding->name), function,
                               param_names.empty() ? "no parameters" : list_names(param_names))};
    const size_t index = static_cast<size_t>(it - param_names.begin());
    if (specs[index]) return Error{fmt::format("input '{}' is given twice", binding->name)};
    auto spec = parse_input_spec(binding->value);
    if (!spec) return Error{fmt::format("input '{}': {}", binding->name, spec.error())};
    specs[index] = std::move(*spec);
  }

  std::vector<ResolvedInput> resolved;
  for (size_t i = 0; i < specs.size(); ++i) {
    const ValueInfo& param = params[i];
    if (!value_shape(param.value_type))
      return Error{fmt::format("parameter '{}' of struct type cannot be given on the command line",
                               param.name)};
    if (!specs[i])
      return Error{fmt::format("missing input '{}' ({}): give --input {}=SPEC", param.name,
                               param.type, param.name)};
    auto input = resolve(param, std::move(*specs[i]));
    if (!input) return input.failure();
    resolved.push_back(std::move(*input));
  }

  // The batch size: --batch, else the first per-lane input, else 1. All must agree.
  uint64_t lanes = options.batch.value_or(0);
  bool lanes_fixed = options.batch.has_value();
  for (const ResolvedInput& input : resolved) {
    if (std::holds_alternative<RandIntSpec>(input.spec) && !options.batch)
      return Error{fmt::format("input '{}' uses randint, which needs --batch", input.name)};
    if (!input.lanes) continue;
    if (!lanes_fixed) {
      lanes = *input.lanes;
      lanes_fixed = true;
    }
    if (*input.lanes != lanes)
      return Error{fmt::format("input '{}' has {} {} but the batch has {} lanes", input.name,
                               *input.lanes, input.what, lanes)};
  }
  if (!lanes_fixed) lanes = 1;
  if (lanes == 0) return Error{"the batch must have at least one lane"};
  if (lanes > std::numeric_limits<uint32_t>::max())
    return Error{fmt::format("a batch of {} lanes is too large", lanes)};

  // Refuse absurd sizes up front: the vector would be granted lazily and the fill would then
  // exhaust memory, which a clear message beats.
  constexpr uint64_t kMaxWordsPerInput = uint64_t{1} << 30;  // 4 GiB
  for (const ResolvedInput& input : resolved)
    if (lanes * input.shape.elements() > kMaxWordsPerInput)
      return Error{fmt::format("input '{}' would need {} words for {} lanes; the limit is {}",
                               input.name, lanes * input.shape.elements(), lanes,
                               kMaxWordsPerInput)};

  BatchInputs out;
  out.lanes = static_cast<uint32_t>(lanes);
  out.columns.resize(resolved.size());
  RandIntSource random(options.seed);
  for (size_t i = 0; i < resolved.size(); ++i) {
    if (auto status = fill(resolved[i], out.lanes, random, out.columns[i]); !status)
      return status.failure();
  }
  return out;
}

}  // namespace ab::cli
