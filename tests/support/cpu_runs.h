// A source's main run on the interpreter and the vm for the ir tests: the two must agree bit for
// bit; batches of float columns; a source's compile errors.
#pragma once

#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "cpu/interp.h"
#include "cpu/vm.h"
#include "ir/diagnostics.h"
#include "lang/frontend.h"
#include "support/result_compare.h"
#include "support/samples.h"

namespace ab::testing {

// Runs `source`'s main on both CPU backends, checks they agree and returns the interpreter's.
inline RunResult run_both(const std::string& source, const Batch& batch, uint64_t seed = 0,
                          const FrontendOptions& frontend = {}) {
  const CompiledProgram c = compile_program(source, "dist.ab", "main", frontend);
  RunOptions options;
  options.seed = seed;
  RunResult interp = run_interp(c.program, c.entry, batch, options);
  const RunResult vm = run_vm(c.lowered, batch, options);
  const std::string difference = describe_difference(interp, vm);
  CHECK_MESSAGE(difference.empty(), "vm differs from interp:\n", difference);
  return interp;
}

// One input per column, a lane per element, or per `lanes` elements (inputs that are arrays).
inline Batch float_batch(const std::vector<std::vector<float>>& columns, uint32_t lanes = 0) {
  Batch batch;
  batch.lanes = lanes ? lanes : static_cast<uint32_t>(columns.at(0).size());
  for (const auto& column : columns) {
    std::vector<uint32_t> words;
    for (float v : column)
      words.push_back(float_bits(v));
    batch.inputs.push_back(std::move(words));
  }
  return batch;
}

inline std::vector<float> float_outputs(const RunResult& r) {
  std::vector<float> out;
  for (uint32_t w : r.outputs)
    out.push_back(bits_float(w));
  return out;
}

// Every error message of compiling `source`, one to a line.
inline std::string compile_errors(const std::string& source) {
  Diagnostics diags("bad.ab", source);
  compile_source(source, "bad.ab", diags);
  std::string all;
  for (const auto& e : diags.errors())
    all += e.message + "\n";
  return all;
}

}  // namespace ab::testing
