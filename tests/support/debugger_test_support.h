// Shared fixture for the debugger tests: a compiled, lowered program with a batch, and a model
// over a VmSource of it.
#pragma once

#include <doctest/doctest.h>

#include <unistd.h>

#include <filesystem>
#include <memory>
#include <string>

#include "autobatch/module.h"
#include "core/module_impl.h"
#include "debugger/model.h"
#include "debugger/vm_source.h"
#include "support/compiled.h"
#include "support/samples.h"

namespace ab::debugger::testing {

// A path in the temp directory unique to this test process.
inline std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() /
          ("ab_dbg_" + std::to_string(::getpid()) + "_" + name))
      .string();
}

struct Loaded {
  std::string path, text;
  std::shared_ptr<const Module> module;  // what the debugger is given
  const LoweredProgram& lowered;         // its inside, for the tests' own VM runs
  Batch batch;
  RunOptions options;

  Loaded(const std::string& source, std::vector<std::vector<uint32_t>> inputs, uint32_t lanes,
         const std::string& path_ = "fib.ab")
      : path(path_),
        text(source),
        module(ab::testing::compiled(source, {path, "main"})),
        lowered(module->impl().lowered) {
    batch.lanes = lanes;
    batch.inputs = std::move(inputs);
  }
  ProgramInfo info() const { return {path, text, module}; }
  std::unique_ptr<VmSource> source() const {
    auto created = VmSource::create(info(), batch, options);
    REQUIRE_MESSAGE(created.ok(), created.error());
    return std::move(*created);
  }
};

// samples/fib.ab over `lanes` lanes with n = lane % 10: divergent depths, small enough to step
// through every step (the table's test inputs reach n = 17).
inline Loaded fib_batch(uint32_t lanes) {
  std::vector<uint32_t> n;
  for (uint32_t lane = 0; lane < lanes; ++lane)
    n.push_back(lane % 10);
  return Loaded(ab::testing::read_sample("fib.ab"), {n}, lanes);
}

// The line of samples/fib.ab that holds fib's two recursive calls.
inline int fib_call_line(const Loaded& fib) {
  return ab::testing::line_of(fib.text, "return fib(n - 1) + fib(n - 2);");
}

}  // namespace ab::debugger::testing
