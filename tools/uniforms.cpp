#include "tools/uniforms.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <optional>

#include <fmt/format.h>

#include "autobatch/transformed_data.h"
#include "autobatch/user_input.h"
#include "tools/data_file.h"
#include "tools/inputs.h"
#include "tools/json_data.h"
#include "tools/shape.h"
#include "tools/values.h"

namespace ab::cli {
namespace {

// The CSV layouts a uniform of `shape` may be written in, as (rows, columns).
std::vector<std::vector<uint64_t>> csv_layouts(const ValueShape& shape) {
  if (shape.dims.empty()) return {{1, 1}};
  const uint64_t rows = shape.dims[0];
  const uint64_t columns = shape.elements() / std::max<uint64_t>(rows, 1);
  if (shape.dims.size() == 1) return {{rows, 1}, {1, rows}};
  return {{rows, columns}};
}

std::string describe_csv(const std::vector<uint64_t>& layout) {
  return fmt::format("{} row{} of {} value{}", layout[0], layout[0] == 1 ? "" : "s", layout[1],
                     layout[1] == 1 ? "" : "s");
}

// Records the largest relative change that rounding to float32 made to a float uniform's data,
// element `i` having been `exact(i)` in the file (nothing or NaN: not a float64 there).
void note_rounding(const std::string& uniform, const std::vector<uint32_t>& words,
                   const std::function<std::optional<double>(uint64_t)>& exact,
                   std::vector<Rounding>& rounded) {
  Rounding worst{uniform};
  for (uint64_t i = 0; i < words.size(); ++i) {
    const std::optional<double> was = exact(i);
    if (!was || *was == 0 || !std::isfinite(*was)) continue;
    const double change = std::abs(bits_float(words[i]) - *was) / std::abs(*was);
    if (change > worst.relative_change) worst = {uniform, change, i};
  }
  if (worst.relative_change > 0) rounded.push_back(worst);
}

Expected<std::vector<uint32_t>> load_uniform(const ValueInfo& uniform, const std::string& value,
                                             std::vector<Rounding>* rounded) {
  const std::string& type_name = uniform.type;
  auto shape = value_shape(uniform.value_type);
  if (!shape)
    return Error{fmt::format("uniform '{}' of struct type cannot be bound from the command line",
                             uniform.name)};
  if (value.front() != '@') {
    if (!shape->dims.empty())
      return Error{fmt::format("uniform '{}' is {}: bind it from a file, --uniform {}=@file.npy",
                               uniform.name, type_name, uniform.name)};
    auto word = parse_scalar(value, shape->leaf);
    if (!word) return Error{fmt::format("uniform '{}': {}", uniform.name, word.error())};
    return std::vector<uint32_t>{*word};
  }

  auto file = DataFile::load(value.substr(1));
  if (!file) return file.failure();
  if (file->is_csv()) {
    const auto layouts = csv_layouts(*shape);
    if (std::find(layouts.begin(), layouts.end(), file->shape()) == layouts.end()) {
      std::vector<std::string> wanted;
      for (const auto& layout : layouts)
        wanted.push_back(describe_csv(layout));
      return Error{fmt::format("uniform '{}' is {}: expected {} in '{}', got {}", uniform.name,
                               type_name, fmt::join(wanted, " or "), file->path(),
                               describe_csv(file->shape()))};
    }
  } else {
    const std::vector<uint64_t> want(shape->dims.begin(), shape->dims.end());
    if (file->shape() != want)
      return Error{fmt::format("uniform '{}' is {}: expected .npy shape {}, got {}", uniform.name,
                               type_name, shape_string(want), shape_string(file->shape()))};
  }
  std::vector<uint32_t> words(shape->elements());
  for (uint64_t i = 0; i < words.size(); ++i) {
    auto word = file->element(i, shape->leaf);
    if (!word) return Error{fmt::format("uniform '{}': {}", uniform.name, word.error())};
    words[i] = *word;
  }
  if (rounded && shape->leaf == Scalar::Float)
    note_rounding(
        uniform.name, words, [&](uint64_t i) { return file->float64(i); }, *rounded);
  return words;
}

std::string data_file_names(const std::vector<JsonData>& files) {
  std::vector<std::string> names;
  for (const JsonData& file : files)
    names.push_back(fmt::format("'{}'", file.path()));
  return fmt::format("{}", fmt::join(names, " or "));
}

// The uniform's words from the one data file that names it.
Expected<std::vector<uint32_t>> load_from_json(const ValueInfo& uniform, const JsonData& data,
                                               std::vector<Rounding>* rounded) {
  auto shape = value_shape(uniform.value_type);
  if (!shape)
    return Error{fmt::format("uniform '{}' of struct type cannot be bound from '{}'", uniform.name,
                             data.path())};
  std::vector<double> exact;
  auto words = data.words(uniform.name, *shape, rounded ? &exact : nullptr);
  if (words && rounded && shape->leaf == Scalar::Float)
    note_rounding(
        uniform.name, *words, [&](uint64_t i) { return std::optional(exact[i]); }, *rounded);
  return words;
}

// The data file among `files` that names `uniform`, or null; two that do are an error.
Expected<const JsonData*> json_source(const ValueInfo& uniform,
                                      const std::vector<JsonData>& files) {
  const JsonData* found = nullptr;
  for (const JsonData& file : files) {
    if (!file.has(uniform.name)) continue;
    if (found)
      return Error{fmt::format("uniform '{}' is in two data files, '{}' and '{}'", uniform.name,
                               found->path(), file.path())};
    found = &file;
  }
  return found;
}

// `computed`: the module's transformed data, bound by nobody (empty words here).
Expected<UniformData> bind_named(const std::vector<ValueInfo>& uniforms,
                                 const std::vector<std::string>& bindings,
                                 const std::vector<std::string>& data_files,
                                 std::vector<Rounding>* rounded, const Module* module) {
  const std::vector<TransformedUniform> computed =
      module ? transformed_uniforms(*module) : std::vector<TransformedUniform>{};
  std::vector<JsonData> files;
  for (const std::string& path : data_files) {
    auto file = JsonData::load(path);
    if (!file) return file.failure();
    files.push_back(std::move(*file));
  }
  std::vector<std::optional<std::string>> values(uniforms.size());
  for (const std::string& arg : bindings) {
    auto binding = parse_binding(arg, "--uniform NAME=@FILE");
    if (!binding) return binding.failure();
    const auto found = std::find_if(uniforms.begin(), uniforms.end(),
                                    [&](const ValueInfo& u) { return u.name == binding->name; });
    if (found == uniforms.end()) {
      std::vector<std::string> names;
      for (const ValueInfo& u : uniforms)
        names.push_back(u.name);
      return Error{fmt::format(
          "unknown uniform '{}': {}", excerpt(binding->name),
          names.empty() ? "the program declares no uniforms"
                        : fmt::format("the program declares {}", fmt::join(names, ", ")))};
    }
    if (const TransformedUniform* t = find_transformed_uniform(computed, binding->name))
      return Error{transformed_uniform_refusal(*module, *t)};
    const auto index = static_cast<size_t>(found - uniforms.begin());
    if (values[index]) return Error{fmt::format("uniform '{}' is bound twice", binding->name)};
    values[index] = binding->value;
  }

  UniformData data;
  for (size_t i = 0; i < uniforms.size(); ++i) {
    const ValueInfo& uniform = uniforms[i];
    auto source = json_source(uniform, files);
    if (!source) return source.failure();
    if (const TransformedUniform* t = find_transformed_uniform(computed, uniform.name)) {
      if (*source)
        return Error{fmt::format("{} ('{}' in {})", transformed_uniform_refusal(*module, *t),
                                 uniform.name, (*source)->path())};
      data.emplace_back();
      continue;
    }
    if (!values[i] && !*source)
      return Error{fmt::format("uniform '{}' ({}) is not bound: give --uniform {}=@file.npy{}",
                               uniform.name, uniform.type, uniform.name,
                               files.empty() ? ""
                                             : fmt::format(", or a key '{}' in {}", uniform.name,
                                                           data_file_names(files)))};
    auto words = values[i] ? load_uniform(uniform, *values[i], rounded)
                           : load_from_json(uniform, **source, rounded);
    if (!words) return words.failure();
    data.push_back(std::move(*words));
  }
  return data;
}

}  // namespace

Expected<UniformData> bind_uniforms(const std::vector<ValueInfo>& uniforms,
                                    const std::vector<std::string>& bindings,
                                    const std::vector<std::string>& data_files,
                                    std::vector<Rounding>* rounded) {
  return bind_named(uniforms, bindings, data_files, rounded, nullptr);
}

Expected<UniformData> bind_uniforms(const Module& module, const std::vector<std::string>& bindings,
                                    const std::vector<std::string>& data_files,
                                    std::vector<Rounding>* rounded) {
  auto data = bind_named(module.uniforms(), bindings, data_files, rounded, &module);
  if (!data) return data;
  if (Status computed = compute_transformed_uniforms(module, *data); !computed)
    return computed.failure();
  return data;
}

Expected<std::map<std::string, double>> data_constants(const std::vector<std::string>& data_files) {
  std::map<std::string, double> out;
  for (const std::string& path : data_files) {
    auto file = JsonData::load(path);
    if (!file) return file.failure();
    out.merge(file->numbers());
  }
  return out;
}

}  // namespace ab::cli
