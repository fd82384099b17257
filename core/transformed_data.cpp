// Transformed data (autobatch/transformed_data.h): computed from the bound data on the
// interpreter, each after those it reads (lang/transformed_data.h orders them).
#include "autobatch/transformed_data.h"

#include <cmath>

#include <fmt/format.h>

#include "core/module_impl.h"
#include "cpu/interp.h"
#include "lang/transformed_data.h"

namespace ab {
namespace {

bool all_float(const ValueType& t) {
  if (t.is_scalar()) return t.scalar == Scalar::Float;
  return t.is_array() && all_float(t.elem());
}

std::string where(const Module& module, const TransformedUniform& u) {
  return fmt::format("{}:{}:{}", module.file(), u.line, u.col);
}

}  // namespace

std::vector<TransformedUniform> transformed_uniforms(const Module& module) {
  const Program& program = module.impl().program;
  std::vector<TransformedUniform> out;
  for (const TransformedData& t : transformed_data(program)) {
    const SourceLoc loc = program.functions[t.function].loc;
    out.push_back(
        {static_cast<uint32_t>(t.uniform), program.uniforms[t.uniform].name, loc.line, loc.col});
  }
  return out;
}

const TransformedUniform* find_transformed_uniform(const std::vector<TransformedUniform>& all,
                                                   const std::string& name) {
  for (const TransformedUniform& u : all)
    if (u.name == name) return &u;
  return nullptr;
}

std::string transformed_uniform_refusal(const Module& module, const TransformedUniform& u) {
  return fmt::format("'{}' is computed from the data (transformed data at {}); it cannot be bound",
                     u.name, where(module, u));
}

Status compute_transformed_uniforms(const Module& module, UniformData& data) {
  const Program& program = module.impl().program;
  const std::vector<TransformedData> order = transformed_data(program);
  if (order.empty()) return Ok{};
  if (data.size() != program.uniforms.size())
    return Error{fmt::format("the module has {} uniforms but {} were given",
                             program.uniforms.size(), data.size())};
  // Zeros until computed, for check_batch: each reads only those computed before it.
  for (const TransformedData& t : order)
    data[t.uniform].assign(module.uniforms()[t.uniform].words, 0u);
  for (const TransformedData& t : order) {
    const ValueInfo& info = module.uniforms()[t.uniform];
    const SourceLoc loc = program.functions[t.function].loc;
    const TransformedUniform u{static_cast<uint32_t>(t.uniform), info.name, loc.line, loc.col};
    Batch one;
    one.lanes = 1;
    one.uniforms = data;
    if (Status fits = check_batch(program, t.function, one); !fits) return fits;
    const RunResult r = run_interp(program, t.function, one, RunOptions{});
    if (!r.errors.empty())
      return Error{fmt::format(
          "{}: transformed data '{}' cannot be computed from the data: {}{}", where(module, u),
          u.name, fault_text(r.errors.front()),
          r.errors.front().line > 0 ? fmt::format(" (line {})", r.errors.front().line) : "")};
    if (all_float(info.value_type))
      for (size_t i = 0; i < r.outputs.size(); ++i)
        if (std::isnan(bits_float(r.outputs[i])))
          return Error{fmt::format(
              "{}: transformed data '{}' is NaN at element {} (C order): the data are outside "
              "its expression's domain (log of a negative number, 0/0, ...)",
              where(module, u), u.name, i)};
    data[t.uniform] = r.outputs;
  }
  return Ok{};
}

}  // namespace ab
