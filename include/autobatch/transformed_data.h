// Stan's transformed data: a uniform declared with an initializer,
// `uniform logw: float[N] = log(weight);`, is computed from the bound data once, when the
// uniforms are bound, on the CPU interpreter (the oracle); every backend then reads it as an
// ordinary uniform, with the same bits (docs/language.md, "Transformed data").
//
// A client that binds uniforms by name (the CLI's --data/--uniform, Python's data dicts) binds the
// others, refuses a transformed datum by name (transformed_uniform_refusal), and calls
// compute_transformed_uniforms before it runs; the sampler's make_batch calls it too.
#pragma once

#include <string>
#include <vector>

#include "autobatch/batch.h"
#include "autobatch/expected.h"
#include "autobatch/module.h"

namespace ab {

struct TransformedUniform {
  uint32_t uniform = 0;  // its index in Module::uniforms()
  std::string name;
  int line = 0, col = 0;  // its name in the declaration
};

// The module's transformed data, in the order they are computed (each after those it reads).
std::vector<TransformedUniform> transformed_uniforms(const Module& module);

// The transformed datum called `name`, or nullptr.
const TransformedUniform* find_transformed_uniform(const std::vector<TransformedUniform>& all,
                                                   const std::string& name);

// Why `u` cannot be bound by hand: "'logw' is computed from the data (transformed data at
// f.ab:4:9); it cannot be bound".
std::string transformed_uniform_refusal(const Module& module, const TransformedUniform& u);

// Fills each transformed datum's entry of `data` (one entry per Module::uniforms(); theirs are
// overwritten, the others must be bound) by running its expression on the interpreter, in
// dependency order. A fault, or a NaN in a float result, is an error naming the declaration:
// "f.ab:4:9: transformed data 'logw': log of a negative number gives NaN at element 3".
Status compute_transformed_uniforms(const Module& module, UniformData& data);

}  // namespace ab
